"""TLS listeners for the security tests: certificates made at run time (``tls_certs``) and
``tls_listener``, which starts Tansu behind stunnel (``pyrdk.testing.TlsTansuBroker``) with
a given broker certificate, and stops both by pid after the test."""
import time

import pytest

from tests.conftest import server_unavailable


class Certs:
    """The certificates of one test session, written to ``directory``: ``ca`` (trusted),
    ``other_ca`` (trusted by nobody), ``broker`` (127.0.0.1 and localhost), ``wrong_host``
    (names broker.invalid only), ``expired`` (ended yesterday), ``client`` (a client
    certificate from ``ca``, its key under ``client_password``) and ``stranger`` (a client
    certificate from ``other_ca``)."""

    client_password = "client-key-secret"

    def __init__(self, directory):
        from pyrdk.testing.certs import CertificateAuthority
        self.directory = directory
        self.ca = CertificateAuthority("pyrdk test CA")
        self.other_ca = CertificateAuthority("untrusted CA", name="other-ca")
        self.broker = self.ca.issue("broker")
        self.wrong_host = self.ca.issue("wrong-host", hosts=["broker.invalid"])
        self.expired = self.ca.issue("expired", expired=True)
        self.client = self.ca.issue("client", hosts=["pyrdk-client"], client=True,
                                    password=self.client_password)
        self.stranger = self.other_ca.issue("stranger", hosts=["pyrdk-client"], client=True)
        for cert in (self.ca, self.other_ca, self.broker, self.wrong_host, self.expired,
                     self.client, self.stranger):
            cert.write(directory)


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory):
    """The session's :class:`Certs`."""
    try:
        return Certs(str(tmp_path_factory.mktemp("certs")))
    except RuntimeError as exc:  # cryptography missing
        server_unavailable("cannot make test certificates: %s" % exc)


def start_tls_listener(cert, client_cafile=None, authentication=False):
    """A started ``TlsTansuBroker`` presenting ``cert``; a failure to start fails the test."""
    from pyrdk.testing import TlsTansuBroker
    listener = TlsTansuBroker(cert.certfile, cert.keyfile, client_cafile=client_cafile,
                              authentication=authentication)
    try:
        listener.start()
    except Exception as exc:
        listener.stop()
        server_unavailable("could not start Tansu behind stunnel: %s" % exc)
    return listener


@pytest.fixture
def tls_listener():
    """``tls_listener(cert, client_cafile=None, authentication=False)`` starts a TLS
    listener for this test; every one started is stopped (by pid) after it."""
    started = []

    def start(cert, client_cafile=None, authentication=False):
        listener = start_tls_listener(cert, client_cafile, authentication)
        started.append(listener)
        return listener

    yield start
    for listener in started:
        listener.stop()


@pytest.fixture(scope="module")
def tls_broker(tls_certs):
    """Tansu behind stunnel with the good broker certificate, for a module's tests."""
    listener = start_tls_listener(tls_certs.broker)
    yield listener
    listener.stop()


def assert_no_reconnect(stunnel):
    """After the client raised (its handle closed), nothing connects to the listener any
    more. stunnel logs a connection once it gets to accept it, which on a loaded machine may
    come a moment after the client closed: the count is taken once it has stood still for
    half a second."""
    before = stunnel.accepted()
    deadline = time.monotonic() + 30
    while True:
        time.sleep(0.5)
        now = stunnel.accepted()
        if now == before:
            break
        assert time.monotonic() < deadline, "the client still connects: %d connections accepted" % now
        before = now
    time.sleep(2)  # several of librdkafka's reconnect backoffs (100 ms, doubling)
    assert stunnel.accepted() == before
