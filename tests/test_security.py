"""TLS, SASL and OAUTHBEARER against live listeners.

TLS: Tansu behind stunnel (``pyrdk.testing.TlsTansuBroker``), Tansu advertising the stunnel
port so every connection goes through TLS, with certificates made at run time
(tests/fix_tls.py). SASL: Tansu with ``--authentication``, which refuses every SCRAM login
and offers no PLAIN (tests/fix_sasl.py says why, and how to point these tests at a broker
with users); successful logins are strict xfails there.

A failure must come fast, named, and only once: ``socket_timeout_ms`` is set far beyond
the test's own timeout, so waiting it out would fail the test, and the listener must see no
new connection once the client has raised.
"""
import time

import pytest

from pyrdk import KafkaClient
from pyrdk.client import security_config
from pyrdk.common import OffsetType
from pyrdk.connection import SslConfig
from pyrdk.exceptions import AuthenticationError, SslError
from tests.fix_kafka import unique_name
from tests.fix_tls import assert_no_reconnect
from tests.fix_sasl import SASL_PASSWORD, SASL_USER

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(120)]

NEVER_MS = 300 * 1000  # librdkafka's largest socket.timeout.ms, beyond the test's 120 s timeout
PATIENCE_S = 60


def round_trip(client, count=20, partitions=2):
    """Create a topic, produce ``count`` messages, read them back with a simple consumer,
    delete the topic: what any TLS or SASL client must manage end to end."""
    name = unique_name("sec")
    client.cluster.create_topics([(name, partitions, 1)])
    topic = client.topics[name]
    with topic.get_sync_producer() as producer:
        for i in range(count):
            producer.produce(b"m%d" % i, partition_key=b"k%d" % i)
    consumer = topic.get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST,
                                         consumer_timeout_ms=PATIENCE_S * 1000)
    try:
        values = sorted(consumer.consume().value for _ in range(count))
    finally:
        consumer.stop()
    assert values == sorted(b"m%d" % i for i in range(count))
    client.cluster.delete_topics([name])
    return name


# -- TLS ------------------------------------------------------------------------------------------

def test_ssl_config_lives_in_pyrdk_connection_too():
    import pyrdk.common
    import pyrdk.connection
    assert pyrdk.connection.SslConfig is pyrdk.common.SslConfig


def test_good_chain_produce_consume_and_admin(tls_broker, tls_certs):
    with KafkaClient(hosts=tls_broker.bootstrap_servers,
                     ssl_config=SslConfig(cafile=tls_certs.ca.certfile)) as client:
        assert client.cluster.rdkafka_config["security.protocol"] == "ssl"
        assert [b.port for b in client.brokers.values()] == [tls_broker.stunnel.port]
        name = round_trip(client)
        assert name.encode() not in client.topics
        assert isinstance(client.cluster.list_groups(), dict)


def balanced_round_trip(client, **kwargs):
    """20 messages through a balanced consumer made with ``kwargs``, committed."""
    name = unique_name("sec")
    client.cluster.create_topics([(name, 2, 1)])
    topic = client.topics[name]
    with topic.get_producer(linger_ms=5) as producer:
        for i in range(20):
            producer.produce(b"m%d" % i, partition_key=b"k%d" % i)
    with topic.get_balanced_consumer(unique_name("g").encode(), auto_offset_reset=OffsetType.EARLIEST,
                                     consumer_timeout_ms=PATIENCE_S * 1000, **kwargs) as consumer:
        values = sorted(consumer.consume().value for _ in range(20))
        consumer.commit_offsets()
    assert values == sorted(b"m%d" % i for i in range(20))


def test_good_chain_managed_balanced_consumer(tls_broker, tls_certs):
    with KafkaClient(hosts=tls_broker.bootstrap_servers,
                     ssl_config=SslConfig(cafile=tls_certs.ca.certfile)) as client:
        balanced_round_trip(client, managed=True, session_timeout_ms=6000, heartbeat_interval_ms=500,
                            max_poll_interval_ms=8000)


@pytest.mark.zookeeper
def test_good_chain_zookeeper_balanced_consumer(tls_broker, tls_certs, zookeeper_chroot):
    with KafkaClient(hosts=tls_broker.bootstrap_servers, zookeeper_hosts=zookeeper_chroot,
                     ssl_config=SslConfig(cafile=tls_certs.ca.certfile)) as client:
        balanced_round_trip(client, zookeeper_connection_timeout_ms=2000)


@pytest.mark.parametrize("case, reason", [
    ("unknown CA", "unknown CA"),
    ("wrong hostname", "mismatch"),
    ("expired certificate", "expired"),
])
def test_refused_broker_certificate_raises_ssl_error_naming_the_reason(tls_listener, tls_certs, case, reason):
    cert, cafile = {"unknown CA": (tls_certs.broker, tls_certs.other_ca.certfile),
                    "wrong hostname": (tls_certs.wrong_host, tls_certs.ca.certfile),
                    "expired certificate": (tls_certs.expired, tls_certs.ca.certfile)}[case]
    listener = tls_listener(cert)
    with pytest.raises(SslError) as info:
        KafkaClient(hosts=listener.bootstrap_servers, socket_timeout_ms=NEVER_MS,
                    ssl_config=SslConfig(cafile=cafile))
    assert reason in info.value.reason
    assert reason in str(info.value) and listener.bootstrap_servers in str(info.value)
    assert info.value.code == -181 and info.value.name == "_SSL"
    assert_no_reconnect(listener.stunnel)


def test_security_protocol_given_as_bytes_is_read_as_librdkafka_reads_it(tls_broker, tls_certs):
    """rdkafka_config takes bytes values: security.protocol=b"ssl" is TLS to pyrdk too, whose
    check of the broker's certificate names why it was refused."""
    with pytest.raises(SslError) as info:
        KafkaClient(hosts=tls_broker.bootstrap_servers, socket_timeout_ms=NEVER_MS,
                    rdkafka_config={"security.protocol": b"ssl", "ssl.ca.location": tls_certs.other_ca.certfile})
    assert info.value.reason == "unable to get local issuer certificate (unknown CA)"


def test_producer_and_consumer_raise_ssl_error_when_the_certificate_goes_bad(tls_listener, tls_certs):
    """The listener comes back with an expired certificate on the same port: the producer's
    and the consumer's next calls raise (no endless reconnecting). The producer's poller
    thread hands it over as the cause of a ProduceFailureError."""
    from pyrdk.testing import Stunnel
    listener = tls_listener(tls_certs.broker)
    bad = None
    with KafkaClient(hosts=listener.bootstrap_servers, socket_timeout_ms=NEVER_MS,
                     ssl_config=SslConfig(cafile=tls_certs.ca.certfile)) as client:
        name = unique_name("sec")
        client.cluster.create_topics([(name, 1, 1)])
        topic = client.topics[name]
        producer = topic.get_producer(linger_ms=5)
        consumer = topic.get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST,
                                             consumer_timeout_ms=PATIENCE_S * 1000)
        try:
            producer.produce(b"before")
            producer.flush()
            assert consumer.consume().value == b"before"
            port = listener.stunnel.port
            listener.stunnel.close()
            bad = Stunnel(listener.broker.port, tls_certs.expired.certfile, tls_certs.expired.keyfile,
                          port=port).start()
            for call in (lambda: (producer.produce(b"after"), time.sleep(0.05)), consumer.consume):
                with pytest.raises(SslError) as info:  # as itself, from the producer's poller too
                    deadline = time.monotonic() + PATIENCE_S
                    while time.monotonic() < deadline:
                        call()
                assert info.value.reason == "certificate has expired"
        finally:
            consumer.stop()
            try:
                producer.stop()
            except Exception:  # what could not be delivered is reported: expected here
                pass
            if bad is not None:
                bad.close()


def test_stop_reports_what_it_could_not_deliver_when_the_certificate_goes_bad(tls_listener, tls_certs):
    """Messages queued while the listener is down, which comes back with an expired
    certificate: stop() raises ProduceFailureError listing them, with the SslError as its
    cause, where it raised the SslError alone from its flush and their failure was never
    reported."""
    from pyrdk.exceptions import ProduceFailureError
    from pyrdk.testing import Stunnel
    listener = tls_listener(tls_certs.broker)
    bad = None
    with KafkaClient(hosts=listener.bootstrap_servers, socket_timeout_ms=NEVER_MS,
                     ssl_config=SslConfig(cafile=tls_certs.ca.certfile)) as client:
        name = unique_name("sec")
        client.cluster.create_topics([(name, 1, 1)])
        producer = client.topics[name].get_producer(linger_ms=5, pending_timeout_ms=PATIENCE_S * 1000)
        try:
            producer.produce(b"before")
            producer.flush()
            port = listener.stunnel.port
            listener.stunnel.close()
            for i in range(5):  # queued while nothing listens: no produce() can have met the SslError
                producer.produce(b"after%d" % i)
            bad = Stunnel(listener.broker.port, tls_certs.expired.certfile, tls_certs.expired.keyfile,
                          port=port).start()
            with pytest.raises(ProduceFailureError) as info:
                producer.stop()
            assert sorted(msg.value for msg, _ in info.value.failed) == [b"after%d" % i for i in range(5)]
            assert isinstance(info.value.__cause__, SslError)
            assert info.value.__cause__.reason == "certificate has expired"
            producer.stop()  # nothing left to raise
        finally:
            try:
                producer.stop()
            except Exception:  # on the current code: what the first stop() left
                pass
            if bad is not None:
                bad.close()


def test_sync_produce_raises_ssl_error_whichever_thread_got_it(tls_broker, tls_certs):
    """A sync producer whose connections TLS refuses: each produce() raises the SslError,
    also when the producer's poller thread rather than the waiting produce() served
    librdkafka's error event (it used to wait out pending_timeout_ms and raise
    ProduceTimeoutError). Each reconnection fails again and either thread may serve it."""
    from pyrdk.exceptions import ProduceFailureError
    with KafkaClient(hosts=tls_broker.bootstrap_servers, ssl_config=SslConfig(cafile=tls_certs.ca.certfile),
                     socket_timeout_ms=NEVER_MS) as client:
        name = unique_name("sec")
        client.cluster.create_topics([(name, 4, 1)])
        producer = client.topics[name].get_producer(
            sync=True, pending_timeout_ms=2000, linger_ms=5,
            rdkafka_config={"ssl.ca.location": tls_certs.other_ca.certfile, "reconnect.backoff.max.ms": 100})
        try:
            for _ in range(15):
                with pytest.raises(SslError) as info:
                    producer.produce(b"refused")
                assert info.value.reason == "unable to get local issuer certificate (unknown CA)"
        finally:
            with pytest.raises((SslError, ProduceFailureError)):  # what is still undelivered
                producer.stop()


@pytest.mark.parametrize("case", ["unknown CA", "plaintext"])
def test_group_consumer_start_raises_what_refused_its_connections(tls_broker, tls_certs, case):
    """A consumer of a group first fetches the committed offsets (``rd_kafka_committed``,
    which blocks); the error events of its failing connections wait in its queue meanwhile.
    Its start (here from get_simple_consumer; a ZooKeeper balanced consumer's too) raises the
    SslError, or for a plaintext client the timeout with the connection failure and what to
    fix, not a bare 'fetch committed offsets: Local: Timed out'."""
    from pyrdk.exceptions import KafkaTimeoutError
    config = {"ssl.ca.location": tls_certs.other_ca.certfile} if case == "unknown CA" else \
        {"security.protocol": "plaintext"}
    with KafkaClient(hosts=tls_broker.bootstrap_servers, ssl_config=SslConfig(cafile=tls_certs.ca.certfile),
                     socket_timeout_ms=3000) as client:
        name = unique_name("sec")
        client.cluster.create_topics([(name, 2, 1)])
        with pytest.raises(SslError if case == "unknown CA" else KafkaTimeoutError) as info:
            client.topics[name].get_simple_consumer(consumer_group=unique_name("g"), rdkafka_config=config)
    if case == "unknown CA":
        assert info.value.reason == "unable to get local issuer certificate (unknown CA)"
    else:
        assert "set security_protocol SSL or SASL_SSL" in str(info.value)


def produce_once_refused(producer):
    """The Message of the first produce() that is handed over: one after TLS refused the
    producer's connections raises the SslError, until one is taken."""
    while True:
        try:
            return producer.produce(b"refused")
        except SslError:
            pass


def test_delivery_report_wait_raises_ssl_error(tls_broker, tls_certs):
    """A program that waits for delivery reports (pykafka's loop) gets the SslError that
    refused the producer's connections, not a wait until message.timeout.ms; the message is
    reported failed at stop()."""
    with KafkaClient(hosts=tls_broker.bootstrap_servers, ssl_config=SslConfig(cafile=tls_certs.ca.certfile),
                     socket_timeout_ms=NEVER_MS) as client:
        name = unique_name("sec")
        client.cluster.create_topics([(name, 1, 1)])
        producer = client.topics[name].get_producer(
            delivery_reports=True, linger_ms=5, pending_timeout_ms=0,
            rdkafka_config={"ssl.ca.location": tls_certs.other_ca.certfile, "message.timeout.ms": NEVER_MS})
        try:
            handed = produce_once_refused(producer)
            with pytest.raises(SslError) as info:
                producer.get_delivery_report()
            assert info.value.reason == "unable to get local issuer certificate (unknown CA)"
        finally:
            try:
                producer.stop()
            except SslError:  # a later reconnection's, kept meanwhile
                pass
        msg, exc = producer.get_delivery_report(block=False)
        assert msg is handed and exc is not None


def test_flush_raises_the_ssl_error_the_poller_thread_got(tls_listener, tls_certs):
    """flush() raises the SslError that refused the producer's connections as soon as the
    producer's poller thread has kept it: not when one of flush()'s own polls sees a later
    reconnection fail (none does here: the listener is gone meanwhile, and its refused
    connections are no TLS failure), nor at its timeout (600 s, beyond the test's)."""
    from pyrdk.exceptions import ProduceFailureError
    listener = tls_listener(tls_certs.broker)
    with KafkaClient(hosts=listener.bootstrap_servers, ssl_config=SslConfig(cafile=tls_certs.ca.certfile),
                     socket_timeout_ms=NEVER_MS) as client:
        name = unique_name("sec")
        client.cluster.create_topics([(name, 1, 1)])
        producer = client.topics[name].get_producer(
            linger_ms=5, pending_timeout_ms=0,
            rdkafka_config={"ssl.ca.location": tls_certs.other_ca.certfile, "message.timeout.ms": NEVER_MS})
        try:
            produce_once_refused(producer)
            deadline = time.monotonic() + PATIENCE_S
            while not producer._errors and time.monotonic() < deadline:  # the poller thread served it
                time.sleep(0.05)
            assert producer._errors
            listener.stunnel.close()
            with pytest.raises(SslError) as info:
                producer.flush(timeout=600)
            assert info.value.reason == "unable to get local issuer certificate (unknown CA)"
        finally:
            with pytest.raises((SslError, ProduceFailureError)):  # another refusal kept, or the message
                producer.stop()


def test_a_directory_as_cafile_is_refused_naming_it(tls_broker, tls_certs):
    """pykafka's SslConfig takes a CA file; librdkafka would read a directory as hashed
    certificates, find none, and refuse the broker as signed by an unknown CA."""
    with pytest.raises(ValueError) as info:
        KafkaClient(hosts=tls_broker.bootstrap_servers, ssl_config=SslConfig(cafile=tls_certs.directory))
    assert "ssl_config's cafile %r is a directory: give the PEM file of the CA" % tls_certs.directory \
        in str(info.value)


def test_mutual_tls_with_a_client_certificate(tls_listener, tls_certs):
    listener = tls_listener(tls_certs.broker, client_cafile=tls_certs.ca.certfile)
    ssl = SslConfig(cafile=tls_certs.ca.certfile, certfile=tls_certs.client.certfile,
                    keyfile=tls_certs.client.keyfile, password=tls_certs.client_password)
    with KafkaClient(hosts=listener.bootstrap_servers, ssl_config=ssl) as client:
        round_trip(client)


def test_mutual_tls_with_the_key_in_the_certificate_file(tls_listener, tls_certs, tmp_path):
    """pykafka's SslConfig without keyfile read the key from certfile (Python's
    load_cert_chain); a certfile without a key is named as the missing keyfile, not left to
    the broker's 'certificate required' alert."""
    from pyrdk.exceptions import ConfigurationError
    listener = tls_listener(tls_certs.broker, client_cafile=tls_certs.ca.certfile)
    combined, bare = tmp_path / "client-and-key.pem", tls_certs.client.certfile
    with open(bare, "rb") as cert, open(tls_certs.client.keyfile, "rb") as key:
        combined.write_bytes(cert.read() + key.read())
    ssl = SslConfig(cafile=tls_certs.ca.certfile, certfile=str(combined), password=tls_certs.client_password)
    with KafkaClient(hosts=listener.bootstrap_servers, ssl_config=ssl) as client:
        round_trip(client)
    with pytest.raises(ConfigurationError) as info:
        KafkaClient(hosts=listener.bootstrap_servers, socket_timeout_ms=NEVER_MS,
                    ssl_config=SslConfig(cafile=tls_certs.ca.certfile, certfile=bare))
    assert "ssl.key.location=%r (SslConfig's keyfile) holds no PEM private key" % bare in str(info.value)


@pytest.mark.parametrize("client_cert", [None, "stranger"])
def test_mutual_tls_refuses_a_missing_or_unknown_client_certificate(tls_listener, tls_certs, client_cert):
    listener = tls_listener(tls_certs.broker, client_cafile=tls_certs.ca.certfile)
    ssl = SslConfig(cafile=tls_certs.ca.certfile)
    if client_cert:
        ssl = SslConfig(cafile=tls_certs.ca.certfile, certfile=tls_certs.stranger.certfile,
                        keyfile=tls_certs.stranger.keyfile)
    with pytest.raises(SslError) as info:
        KafkaClient(hosts=listener.bootstrap_servers, socket_timeout_ms=NEVER_MS, ssl_config=ssl)
    assert "certificate" in info.value.reason
    assert "client's certificate" in str(info.value)
    assert_no_reconnect(listener.stunnel)


def test_plaintext_client_of_a_tls_listener_is_told_to_use_tls(tls_broker):
    """stunnel resets a plaintext connection at its first request; librdkafka only logs
    that (no error event), so the timeout must carry it and say what to fix."""
    from pyrdk.exceptions import NoBrokersAvailableError
    with pytest.raises(NoBrokersAvailableError) as info:
        KafkaClient(hosts=tls_broker.bootstrap_servers, socket_timeout_ms=3000)
    assert "in state APIVERSION_QUERY" in str(info.value)
    assert "set security_protocol SSL or SASL_SSL (with ssl_config" in str(info.value)
    assert "check the address" not in str(info.value)  # the address is right: the connection was made


def test_tls_client_of_a_plaintext_listener_is_told_it_may_be_plaintext(tls_broker, tls_certs):
    """A plaintext listener that waits for the rest of a 'request' (Tansu, behind the
    stunnel here, reads the TLS ClientHello as one): no certificate comes, librdkafka reports
    nothing, and the timeout must say what to fix."""
    from pyrdk.exceptions import NoBrokersAvailableError
    with pytest.raises(NoBrokersAvailableError) as info:
        KafkaClient(hosts="127.0.0.1:%d" % tls_broker.broker.port, ssl_config=SslConfig(cafile=tls_certs.ca.certfile),
                    socket_timeout_ms=3000)
    assert "no broker answered the TLS handshake: if the listener is plaintext, set security_protocol " \
        "PLAINTEXT" in str(info.value)


def test_wrong_key_password_is_a_configuration_error(tls_broker, tls_certs):
    from pyrdk.exceptions import ConfigurationError
    ssl = SslConfig(cafile=tls_certs.ca.certfile, certfile=tls_certs.client.certfile,
                    keyfile=tls_certs.client.keyfile, password="not-the-password")
    with pytest.raises(ConfigurationError) as info:
        KafkaClient(hosts=tls_broker.bootstrap_servers, ssl_config=ssl)
    assert "ssl.key.location" in str(info.value) or "key" in str(info.value).lower()


@pytest.mark.parametrize("case, says", [
    ("missing CA file", "ssl.ca.location='{missing}' (SslConfig's cafile): no such file"),
    ("CA file not PEM", "ssl.ca.location='{key}' (SslConfig's cafile) holds no PEM certificate"),
    ("certificate a directory", "ssl.certificate.location='{dir}' (SslConfig's certfile) is a directory"),
    ("key without password", "ssl.key.location='{key}' (SslConfig's keyfile) holds an encrypted key: set "
                             "ssl.key.password (SslConfig's password)"),
    ("wrong key password", "ssl.key.location='{key}' (SslConfig's keyfile) holds an encrypted key that "
                           "ssl.key.password (SslConfig's password) does not decrypt: the passphrase is wrong"),
    ("key of another certificate", "ssl.key.location='{other_key}' (SslConfig's keyfile) is not the key of the "
                                   "certificate in ssl.certificate.location"),
    ("key without certificate", "ssl.key.location needs ssl.certificate.location (SslConfig's certfile)"),
])
def test_unusable_tls_file_says_which_file_and_setting(tls_certs, case, says):
    """librdkafka only passes on OpenSSL's words (BIO lib, PEM lib) for a TLS file it cannot
    load: the error names the file, the setting, and what is wrong with it."""
    from pyrdk.exceptions import ConfigurationError
    ca, cert, key = tls_certs.ca.certfile, tls_certs.client.certfile, tls_certs.client.keyfile
    password = tls_certs.client_password
    missing = tls_certs.directory + "/missing.pem"
    ssl = {"missing CA file": SslConfig(cafile=missing),
           "CA file not PEM": SslConfig(cafile=key),
           "certificate a directory": SslConfig(cafile=ca, certfile=tls_certs.directory, keyfile=key,
                                                password=password),
           "key without password": SslConfig(cafile=ca, certfile=cert, keyfile=key),
           "wrong key password": SslConfig(cafile=ca, certfile=cert, keyfile=key, password="not-" + password),
           "key of another certificate": SslConfig(cafile=ca, certfile=cert, keyfile=tls_certs.stranger.keyfile),
           "key without certificate": SslConfig(cafile=ca, keyfile=key, password=password)}[case]
    with pytest.raises(ConfigurationError) as info:
        KafkaClient(hosts="127.0.0.1:1", ssl_config=ssl)
    assert says.format(missing=missing, key=key, dir=tls_certs.directory,
                       other_key=tls_certs.stranger.keyfile) in str(info.value)
    assert password not in str(info.value)


# -- SASL ------------------------------------------------------------------------------------------

SCRAM = ["SCRAM-SHA-256", "SCRAM-SHA-512"]


def sasl_client(listener, mechanism, password, **kwargs):
    ssl = SslConfig(cafile=listener.cafile) if listener.protocol == "SASL_SSL" else None
    return KafkaClient(hosts=listener.hosts, security_protocol=listener.protocol, ssl_config=ssl,
                       sasl_mechanism=mechanism, sasl_plain_username=SASL_USER,
                       sasl_plain_password=password, **kwargs)


@pytest.mark.parametrize("mechanism", SCRAM + ["PLAIN"])
def test_right_credentials_work_end_to_end(request, sasl_listener, mechanism):
    if sasl_listener.on_tansu:
        request.applymarker(pytest.mark.xfail(
            strict=True, raises=pytest.fail.Exception,
            reason="Tansu 0.6: memory storage keeps no SCRAM credentials and PLAIN is not offered"))
    try:
        client = sasl_client(sasl_listener, mechanism, SASL_PASSWORD)
    except AuthenticationError as exc:
        pytest.fail("the listener refused %s for user %s: %s" % (mechanism, SASL_USER, exc))
    with client:
        assert client.cluster.rdkafka_config["sasl.mechanism"] == mechanism
        round_trip(client)


@pytest.mark.parametrize("mechanism", SCRAM + ["PLAIN"])
def test_wrong_password_raises_authentication_error(sasl_listener, mechanism):
    # On Tansu, PLAIN is refused at the handshake (it offers no PLAIN), SCRAM at the login.
    with pytest.raises(AuthenticationError) as info:
        sasl_client(sasl_listener, mechanism, "not-" + SASL_PASSWORD, socket_timeout_ms=NEVER_MS)
    assert mechanism.split("-")[0] in str(info.value)
    assert sasl_listener.hosts.split(",")[0] in str(info.value)
    if sasl_listener.stunnel is not None:
        assert_no_reconnect(sasl_listener.stunnel)


def test_client_without_sasl_of_a_sasl_listener_is_told_to_use_sasl(sasl_listener):
    """A SASL listener answers ApiVersions, then closes the connection of a client that did
    not authenticate at its next request; librdkafka only logs that, so the timeout must
    carry it and say what to fix."""
    from pyrdk.exceptions import NoBrokersAvailableError
    ssl = SslConfig(cafile=sasl_listener.cafile) if sasl_listener.protocol == "SASL_SSL" else None
    with pytest.raises(NoBrokersAvailableError) as info:
        KafkaClient(hosts=sasl_listener.hosts, ssl_config=ssl, socket_timeout_ms=3000)
    assert "in state UP" in str(info.value)
    assert "if the listener wants SASL, set security_protocol SASL_PLAINTEXT or SASL_SSL" in str(info.value)


def test_rdkafka_config_sasl_properties_still_work(sasl_listener):
    config = {"security.protocol": sasl_listener.protocol.lower(), "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.username": SASL_USER, "sasl.password": "not-" + SASL_PASSWORD}
    if sasl_listener.cafile:
        config["ssl.ca.location"] = sasl_listener.cafile
    with pytest.raises(AuthenticationError):
        KafkaClient(hosts=sasl_listener.hosts, socket_timeout_ms=NEVER_MS, rdkafka_config=config)


# -- OAUTHBEARER -----------------------------------------------------------------------------------

def test_oauth_cb_token_reaches_the_listener(sasl_listener):
    """Tansu refuses OAUTHBEARER tokens: the token from ``oauth_cb`` is sent (the refusal is
    the listener's, after SaslAuthenticate) and the refusal is an AuthenticationError."""
    calls = []

    def oauth_cb(config):
        calls.append(config)
        return "token-%d" % len(calls), time.time() + 60

    ssl = SslConfig(cafile=sasl_listener.cafile) if sasl_listener.protocol == "SASL_SSL" else None
    with pytest.raises(AuthenticationError) as info:
        KafkaClient(hosts=sasl_listener.hosts, security_protocol=sasl_listener.protocol,
                    ssl_config=ssl, oauth_cb=oauth_cb, socket_timeout_ms=NEVER_MS,
                    rdkafka_config={"sasl.oauthbearer.config": "scope=events"})
    assert calls and calls[0] == "scope=events"
    assert "SASL authentication error" in str(info.value)  # the listener refused the token


def test_oauth_cb_is_called_again_before_each_token_expires(kafka_hosts):
    """librdkafka asks for a new token 80% through the last one's life, on its background
    thread, whether or not the program polls."""
    import threading

    from pyrdk.rd.handle import Handle
    calls = []

    def oauth_cb(config):
        calls.append((time.time(), threading.current_thread() is threading.main_thread()))
        return "token-%d" % len(calls), time.time() + 1.0  # refreshed after 0.8 s

    handle = Handle("producer", {"bootstrap.servers": kafka_hosts, "security.protocol": "sasl_plaintext",
                                 "sasl.mechanism": "OAUTHBEARER", "oauth_cb": oauth_cb})
    try:
        deadline = time.monotonic() + PATIENCE_S
        while len(calls) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        handle.close()
    assert len(calls) >= 4
    assert not any(on_main for _, on_main in calls)


def test_close_does_not_wait_for_an_oauth_cb_that_blocks(kafka_hosts):
    """An oauth_cb stuck in its identity provider: the client raises within its timeout and
    is closed, while oauth_cb still blocks (rd_kafka_destroy joins the thread that asked it)."""
    import threading

    from pyrdk.exceptions import KafkaException
    entered, release = threading.Event(), threading.Event()

    def oauth_cb(config):
        entered.set()
        release.wait(PATIENCE_S)
        return "token", time.time() + 60

    outcome = []

    def make():
        try:
            KafkaClient(hosts=kafka_hosts, security_protocol="SASL_PLAINTEXT", oauth_cb=oauth_cb,
                        socket_timeout_ms=3000)
        except KafkaException as exc:
            outcome.append(exc)
    maker = threading.Thread(target=make, daemon=True)
    try:
        maker.start()
        assert entered.wait(PATIENCE_S)
        maker.join(PATIENCE_S - 10)  # oauth_cb is held longer than this
        assert not release.is_set() and not maker.is_alive(), "KafkaClient waits for the blocked oauth_cb"
        assert outcome
    finally:
        release.set()
        maker.join(PATIENCE_S)


@pytest.mark.parametrize("returns, message", [
    (ValueError("identity provider down"), "oauth_cb raised ValueError: identity provider down"),
    ("just-a-token", "oauth_cb must return (token, expiry)"),
    (("token", "tomorrow"), "expiry oauth_cb returns must be seconds since the epoch"),
    (("token", 1.0), "librdkafka refused the token from oauth_cb"),  # expired in 1970
    (("token", float("inf")), "expiry oauth_cb returns must be seconds since the epoch (a finite"),
    (("token", float("nan")), "expiry oauth_cb returns must be seconds since the epoch (a finite"),
    (("token", 10 ** 20), "expiry oauth_cb returns must be seconds since the epoch (a finite"),
    (("tok\udcff", 4e9), "the token oauth_cb returns must be UTF-8 text without NUL"),
    (("token", 4e9, "user\0root"), "the principal oauth_cb returns must be UTF-8 text without NUL"),
    (("token", 4e9, "", {"k": "v\0x"}), "the extensions oauth_cb returns must be UTF-8 text without NUL"),
])
def test_failing_oauth_cb_raises_authentication_error(kafka_hosts, returns, message):
    def oauth_cb(config):
        if isinstance(returns, Exception):
            raise returns
        return returns

    with pytest.raises(AuthenticationError) as info:
        KafkaClient(hosts=kafka_hosts, security_protocol="SASL_PLAINTEXT", oauth_cb=oauth_cb,
                    socket_timeout_ms=NEVER_MS)
    assert message in str(info.value)
    if isinstance(returns, Exception):
        assert info.value.__cause__ is returns
    else:  # what it returned was wrong: it raised nothing
        assert "oauth_cb raised" not in str(info.value)


@pytest.mark.parametrize("returns", [
    "secret-token-1234",  # the token alone
    ("secret-token-1234", 4e9, "", {}, "one too many"),
    ({"token": "secret-token-1234"}, 4e9),
    ("secret-token-1234\0", 4e9),
    ("token", 4e9, "", {"trace": "secret-token-1234\udcff"}),
])
def test_failing_oauth_cb_error_never_shows_the_token(kafka_hosts, caplog, returns):
    """What oauth_cb returned may be the token itself: an error saying it is wrong tells its
    type and size, not its text (the error goes to librdkafka's log too)."""
    with pytest.raises(AuthenticationError) as info:
        KafkaClient(hosts=kafka_hosts, security_protocol="SASL_PLAINTEXT", oauth_cb=lambda config: returns,
                    socket_timeout_ms=NEVER_MS)
    assert "oauth_cb" in str(info.value)
    assert "secret-token-1234" not in str(info.value) and "secret-token-1234" not in caplog.text


# -- the constructor arguments ---------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, expected", [
    ({}, {}),
    ({"security_protocol": "plaintext"}, {"security.protocol": "plaintext"}),
    ({"ssl_config": SslConfig(cafile="/ca.pem")},
     {"security.protocol": "ssl", "ssl.ca.location": "/ca.pem"}),
    ({"sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "u", "sasl_plain_password": "p"},
     {"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512",
      "sasl.username": "u", "sasl.password": "p"}),
    ({"sasl_plain_username": "u", "sasl_plain_password": "p", "ssl_config": SslConfig(cafile="/ca.pem")},
     {"security.protocol": "sasl_ssl", "sasl.mechanism": "PLAIN", "sasl.username": "u",
      "sasl.password": "p", "ssl.ca.location": "/ca.pem"}),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "scram-sha-256", "sasl_plain_username": "u",
      "sasl_plain_password": "p"},
     {"security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "u",
      "sasl.password": "p"}),
])
def test_security_arguments_map_to_librdkafka_properties(kwargs, expected):
    assert security_config(**kwargs) == expected


def test_oauth_cb_selects_oauthbearer():
    def cb(config):
        return "t", time.time() + 60
    assert security_config(oauth_cb=cb) == {"security.protocol": "sasl_plaintext",
                                            "sasl.mechanism": "OAUTHBEARER", "oauth_cb": cb}


def test_oauthbearer_without_a_token_source_is_refused_before_connecting(sasl_listener):
    """librdkafka has no token for OAUTHBEARER without oauth_cb, OIDC or unsecured JWTs: its
    connections would wait for one until socket_timeout_ms, saying nothing. Every client
    refuses it at once, saying what to set."""
    import asyncio

    from pyrdk.aio import AIOKafkaConsumer
    from pyrdk.exceptions import ConfigurationError
    ssl = SslConfig(cafile=sasl_listener.cafile) if sasl_listener.protocol == "SASL_SSL" else None
    calls = [lambda: KafkaClient(hosts=sasl_listener.hosts, security_protocol=sasl_listener.protocol, ssl_config=ssl,
                                 sasl_mechanism="OAUTHBEARER", socket_timeout_ms=NEVER_MS),
             lambda: KafkaClient(hosts=sasl_listener.hosts, socket_timeout_ms=NEVER_MS, ssl_config=ssl, rdkafka_config={
                 "security.protocol": sasl_listener.protocol, "sasl.mechanism": "OAUTHBEARER"}),
             lambda: asyncio.run(AIOKafkaConsumer(bootstrap_servers=sasl_listener.hosts,
                                                  security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                                                  request_timeout_ms=NEVER_MS).start())]
    for call in calls:
        with pytest.raises(ConfigurationError) as info:
            call()
        assert "OAUTHBEARER has no token to send: pass oauth_cb" in str(info.value)
        assert "sasl.oauthbearer.method=oidc" in str(info.value)


@pytest.mark.parametrize("client", ["AIOKafkaProducer", "AIOKafkaConsumer"])
@pytest.mark.parametrize("security", [
    {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": SASL_USER,
     "sasl_plain_password": SASL_PASSWORD},
    {},  # PLAINTEXT
])
def test_aio_oauth_cb_without_oauthbearer_says_so_as_kafka_client_does(kafka_hosts, client, security):
    """KafkaClient refuses an oauth_cb without OAUTHBEARER naming both; the aio clients
    passed it to librdkafka, whose refusal named neither (an RdKafkaException at start())."""
    import asyncio

    import pyrdk.aio
    from pyrdk.exceptions import ConfigurationError

    async def start():
        kafka = getattr(pyrdk.aio, client)(bootstrap_servers=kafka_hosts, request_timeout_ms=NEVER_MS,
                                           rdkafka_config={"oauth_cb": lambda config: ("token", 4e9)}, **security)
        try:
            await kafka.start()
        finally:
            await kafka.stop()
    with pytest.raises(ConfigurationError, match="oauth_cb needs sasl.mechanism OAUTHBEARER"):
        asyncio.run(asyncio.wait_for(start(), PATIENCE_S))


@pytest.mark.parametrize("client", ["AIOKafkaProducer", "AIOKafkaConsumer"])
@pytest.mark.parametrize("mechanism", SCRAM + ["PLAIN"])
@pytest.mark.parametrize("missing", ["sasl_plain_username", "sasl_plain_password"])
def test_aio_sasl_login_without_user_or_password_names_the_option(client, mechanism, missing):
    """A PLAIN or SCRAM login needs both (aiokafka refuses PLAIN without them, ValueError): the
    aio clients said librdkafka's "sasl.username and sasl.password must be set"."""
    import pyrdk.aio
    from pyrdk.exceptions import ConfigurationError
    credentials = {"sasl_plain_username": SASL_USER, "sasl_plain_password": SASL_PASSWORD}
    del credentials[missing]
    with pytest.raises(ConfigurationError, match="sasl_mechanism=%r needs sasl_plain_username and "
                       "sasl_plain_password [(]%s is not given[)]" % (mechanism, missing)) as info:
        getattr(pyrdk.aio, client)(bootstrap_servers="127.0.0.1:1", security_protocol="SASL_PLAINTEXT",
                                   sasl_mechanism=mechanism, **credentials)
    assert isinstance(info.value, ValueError) and SASL_PASSWORD not in str(info.value)
    given = {"sasl.username": SASL_USER, "sasl.password": SASL_PASSWORD}  # librdkafka's names: taken
    getattr(pyrdk.aio, client)(bootstrap_servers="127.0.0.1:1", security_protocol="SASL_PLAINTEXT",
                               sasl_mechanism=mechanism, rdkafka_config=given)


def test_ssl_config_password_of_a_wrong_type_is_not_shown():
    with pytest.raises(TypeError) as info:
        SslConfig(cafile="ca.pem", password=1234567)
    assert "SslConfig's password must be a str or bytes, not int" in str(info.value)
    assert "1234567" not in str(info.value)


@pytest.mark.parametrize("kwargs", [
    {"ssl_config": {"cafile": "/ca.pem", "password": "secret-1234"}},
    {"ssl_config": ("/ca.pem", "/client.pem", "/client.key", "secret-1234")},
    {"security_protocol": "SASL_PLAINTEXT", "oauth_cb": "secret-1234"},
    {"rdkafka_config": {"security.protocol": "sasl_plaintext", "sasl.mechanism": "OAUTHBEARER",
                        "oauth_cb": "secret-1234"}},
])
def test_a_wrong_type_in_place_of_ssl_config_or_oauth_cb_is_not_shown(kwargs):
    """A dict or tuple given as ssl_config holds the key's password, and a str given as
    oauth_cb is most likely the token itself: the error names their type, not their text."""
    with pytest.raises(TypeError) as info:
        KafkaClient(hosts="127.0.0.1:1", **kwargs)
    assert "must be a" in str(info.value) and "secret-1234" not in str(info.value)


def test_aio_oauth_cb_of_a_wrong_type_is_not_shown():
    import asyncio

    from pyrdk.aio import AIOKafkaProducer

    async def start():
        producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="OAUTHBEARER", rdkafka_config={"oauth_cb": "secret-1234"})
        try:
            await asyncio.wait_for(producer.start(), 30)
        finally:
            await producer.stop()

    with pytest.raises(TypeError) as info:
        asyncio.run(start())
    assert "oauth_cb must be a callable" in str(info.value) and "secret-1234" not in str(info.value)

@pytest.mark.parametrize("kwargs, error, message", [
    ({"security_protocol": "TLS"}, ValueError, "security_protocol must be one of PLAINTEXT, SSL"),
    ({"security_protocol": 1}, ValueError, "security_protocol must be one of"),
    ({"sasl_mechanism": "SCRAM-SHA-1"}, ValueError, "sasl_mechanism must be one of"),
    ({"sasl_mechanism": "PLAIN"}, ValueError, "needs sasl_plain_username"),
    ({"sasl_mechanism": "PLAIN", "sasl_plain_username": "u"}, ValueError, "needs sasl_plain_password"),
    ({"sasl_mechanism": "PLAIN", "sasl_plain_username": "u", "sasl_plain_password": b"p"}, ValueError,
     "sasl_plain_password, a non-empty str (given: bytes)"),
    ({"security_protocol": "SSL", "sasl_mechanism": "PLAIN"}, ValueError, "need security_protocol SASL_"),
    ({"security_protocol": "PLAINTEXT", "ssl_config": SslConfig(cafile="x")}, ValueError,
     "ssl_config needs security_protocol SSL or SASL_SSL"),
    ({"ssl_config": "x"}, TypeError, "ssl_config must be a pyrdk.connection.SslConfig"),
    ({"oauth_cb": "token"}, TypeError, "oauth_cb must be a callable"),
    ({"rdkafka_config": {"oauth_cb": "token"}}, TypeError, "oauth_cb must be a callable"),
    ({"oauth_cb": print, "sasl_mechanism": "PLAIN"}, ValueError, "oauth_cb needs sasl_mechanism OAUTHBEARER"),
    ({"oauth_cb": print, "rdkafka_config": {"security.protocol": "plaintext"}}, ValueError,
     "oauth_cb needs sasl.mechanism OAUTHBEARER and security.protocol SASL_PLAINTEXT or SASL_SSL, not "
     "sasl.mechanism=OAUTHBEARER and security.protocol=plaintext"),
    ({"oauth_cb": print, "rdkafka_config": {"sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"}},
     ValueError, "not sasl.mechanism=PLAIN and security.protocol=sasl_plaintext"),
    ({"rdkafka_config": {"oauth_cb": print}}, ValueError, "not sasl.mechanism=GSSAPI and security.protocol=plaintext"),
    ({"ssl_config": SslConfig(cafile="x"), "rdkafka_config": {"security.protocol": "plaintext"}}, ValueError,
     "ssl_config needs security.protocol SSL or SASL_SSL, not plaintext (see rdkafka_config)"),
    ({"ssl_config": SslConfig(cafile="x"), "sasl_mechanism": "PLAIN", "sasl_plain_username": "u",
      "sasl_plain_password": "p", "rdkafka_config": {"security.protocol": b"SASL_PLAINTEXT"}}, ValueError,
     "ssl_config needs security.protocol SSL or SASL_SSL, not sasl_plaintext"),
    ({"sasl_mechanism": "PLAIN", "sasl_plain_username": "u", "sasl_plain_password": "p",
      "rdkafka_config": {"security.protocol": "ssl"}}, ValueError,
     "sasl_mechanism and sasl_plain_username need security.protocol SASL_PLAINTEXT or SASL_SSL, not ssl"),
])
def test_bad_security_arguments_say_what_to_fix(kwargs, error, message):
    with pytest.raises(error) as info:
        KafkaClient(hosts="127.0.0.1:1", **kwargs)
    assert message in str(info.value)


def test_oauth_cb_with_the_protocol_and_mechanism_given_as_bytes_is_taken():
    # rdkafka_config takes bytes values everywhere: the oauth_cb check decodes them too
    from pyrdk.exceptions import NoBrokersAvailableError
    config = {"oauth_cb": lambda _config: ("token", time.time() + 60), "sasl.mechanism": b"OAUTHBEARER",
              "security.protocol": b"SASL_PLAINTEXT"}
    with pytest.raises(NoBrokersAvailableError):  # past the checks, to connecting
        KafkaClient(hosts="127.0.0.1:1", socket_timeout_ms=500, rdkafka_config=config)


def test_timeout_while_oauth_cb_blocks_names_oauth_cb(kafka_hosts):
    """An oauth_cb stuck in its identity provider: librdkafka connects to no broker until it
    returns, and the timeout says so rather than blaming the brokers."""
    import threading

    from pyrdk.exceptions import KafkaException
    from pyrdk.rd.handle import Handle
    entered, release = threading.Event(), threading.Event()

    def oauth_cb(config):
        entered.set()
        release.wait(PATIENCE_S)
        return "token", time.time() + 60

    handle = Handle("producer", {"bootstrap.servers": kafka_hosts, "security.protocol": "sasl_plaintext",
                                 "sasl.mechanism": "OAUTHBEARER", "oauth_cb": oauth_cb})
    try:
        assert entered.wait(PATIENCE_S)
        with pytest.raises(KafkaException) as info:
            handle.metadata(timeout_ms=2000)
        assert "oauth_cb has not returned a token" in str(info.value)
    finally:
        release.set()
        handle.close()


def test_timeout_while_oauth_cb_refreshes_a_valid_token_does_not_blame_oauth_cb():
    """librdkafka asks oauth_cb for the next token before the last one expires, and connects
    with the last one meanwhile: a timeout then says what the connections met, not that
    librdkafka connects to no broker before oauth_cb returns."""
    import threading

    from pyrdk.exceptions import KafkaException
    from pyrdk.rd.handle import Handle
    calls, refreshing, release = [], threading.Event(), threading.Event()

    def oauth_cb(config):
        calls.append(config)
        if len(calls) == 1:
            # refreshed at 80% of its life, after 16 s: still valid through the 1 s metadata
            # request below, with room for a stalled machine
            return "token", time.time() + 20
        refreshing.set()
        release.wait(PATIENCE_S)
        return "token", time.time() + 60

    handle = Handle("producer", {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "sasl_plaintext",
                                 "sasl.mechanism": "OAUTHBEARER", "oauth_cb": oauth_cb})
    try:
        assert refreshing.wait(PATIENCE_S)
        with pytest.raises(KafkaException) as info:
            handle.metadata(timeout_ms=1000)
        assert "oauth_cb has not returned" not in str(info.value)
        assert "Connection refused" in str(info.value)
    finally:
        release.set()
        handle.close()
