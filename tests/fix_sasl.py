"""SASL listeners for the security tests.

Tansu 0.6 (``--authentication``) is the live listener here. It speaks SCRAM-SHA-256 and
SCRAM-SHA-512 for real, but its memory storage keeps no credentials (storing one is a
no-op there, and ``tansu user create`` itself is refused once authentication is on), so
it refuses every SCRAM login; it offers no PLAIN, and refuses OAUTHBEARER tokens. So on
Tansu the refusals are tested live and the successful logins are strict xfails.

Set ``PYRDK_TEST_SASL_BROKERS`` (a SASL_PLAINTEXT listener) and, for SASL_SSL,
``PYRDK_TEST_SASL_SSL_BROKERS`` with ``PYRDK_TEST_SASL_SSL_CAFILE``, to run the same tests
against a broker where user ``pyrdk`` has password ``pyrdk-secret`` for SCRAM-SHA-256,
SCRAM-SHA-512 and PLAIN; there every login test must pass.
"""
import collections
import os

import pytest

from tests.fix_tls import start_tls_listener

SASL_USER = "pyrdk"
SASL_PASSWORD = "pyrdk-secret"

SaslListener = collections.namedtuple("SaslListener", "protocol hosts cafile on_tansu stunnel")


@pytest.fixture(scope="module", params=["SASL_PLAINTEXT", "SASL_SSL"])
def sasl_listener(request, tls_certs):
    """A SASL listener, over plaintext and over TLS: Tansu with ``--authentication`` (behind
    stunnel for SASL_SSL), or the external ones named by the environment."""
    protocol = request.param
    if protocol == "SASL_PLAINTEXT" and os.environ.get("PYRDK_TEST_SASL_BROKERS"):
        yield SaslListener(protocol, os.environ["PYRDK_TEST_SASL_BROKERS"], None, False, None)
        return
    if protocol == "SASL_SSL" and os.environ.get("PYRDK_TEST_SASL_SSL_BROKERS"):
        yield SaslListener(protocol, os.environ["PYRDK_TEST_SASL_SSL_BROKERS"],
                           os.environ.get("PYRDK_TEST_SASL_SSL_CAFILE"), False, None)
        return
    if protocol == "SASL_SSL":
        listener = start_tls_listener(tls_certs.broker, authentication=True)
        try:
            yield SaslListener(protocol, listener.bootstrap_servers, tls_certs.ca.certfile, True,
                               listener.stunnel)
        finally:
            listener.stop()
        return
    from pyrdk.testing import TansuBroker

    from tests.conftest import server_unavailable
    broker = TansuBroker(authentication=True)
    try:
        broker.start()
    except Exception as exc:
        broker.stop()
        server_unavailable("could not start Tansu with --authentication: %s" % exc)
    try:
        yield SaslListener(protocol, broker.bootstrap_servers, None, True, None)
    finally:
        broker.stop()
