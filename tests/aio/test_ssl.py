"""create_ssl_context() and ssl_context= against Tansu behind a TLS listener that asks for a
client certificate (tests/fix_tls.py), and the librdkafka properties a context maps to."""
import asyncio
import os
import pathlib
import ssl

import pytest

import pyrdk.aio as aiokafka
from pyrdk.aio.helpers import create_ssl_context, rdkafka_config
from pyrdk.connection import SslConfig
from pyrdk.exceptions import NotSupportedError
from pyrdk.client import KafkaClient
from pyrdk.aio.structs import TopicPartition
from tests.fix_kafka import unique_name
from tests.fix_tls import assert_no_reconnect

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(120)]


def test_a_context_maps_to_librdkafkas_ssl_properties(tls_certs):
    ca, client = tls_certs.ca.certfile, tls_certs.client
    context = create_ssl_context(cafile=ca, certfile=client.certfile, keyfile=client.keyfile,
                                 password=tls_certs.client_password)
    assert isinstance(context, ssl.SSLContext) and context.check_hostname
    assert (context.cafile, context.certfile, context.keyfile) == (ca, client.certfile, client.keyfile)
    assert rdkafka_config(context) == {
        "ssl.ca.location": ca, "ssl.certificate.location": client.certfile,
        "ssl.key.location": client.keyfile, "ssl.key.password": tls_certs.client_password,
        "ssl.endpoint.identification.algorithm": "https", "enable.ssl.certificate.verification": True}
    # path-likes and bytes, which the ssl module (and so aiokafka) takes: librdkafka gets the str
    context = create_ssl_context(cafile=pathlib.Path(ca), certfile=os.fsencode(client.certfile),
                                 keyfile=pathlib.Path(client.keyfile), password=tls_certs.client_password)
    assert rdkafka_config(context)["ssl.ca.location"] == ca and context.certfile == client.certfile
    assert rdkafka_config(context)["ssl.key.location"] == client.keyfile
    context = create_ssl_context(capath=os.path.dirname(ca))
    context.check_hostname = False
    assert rdkafka_config(context) == {
        "ssl.ca.location": os.path.dirname(ca), "ssl.endpoint.identification.algorithm": "none",
        "enable.ssl.certificate.verification": True}
    with open(ca) as f:
        pem = f.read()
    assert rdkafka_config(create_ssl_context(cadata=pem))["ssl.ca.pem"] == pem
    der = ssl.PEM_cert_to_DER_cert(pem)
    assert rdkafka_config(create_ssl_context(cadata=der))["ssl.ca.pem"].strip() == pem.strip()
    with pytest.raises(NotSupportedError, match="one of cafile, capath or cadata"):
        create_ssl_context(cafile=ca, cadata=pem)
    with pytest.raises(ssl.SSLError):  # the wrong password fails here, as in aiokafka
        create_ssl_context(cafile=ca, certfile=client.certfile, keyfile=client.keyfile, password="wrong")
    with pytest.raises(NotSupportedError, match="create_ssl_context"):
        aiokafka.AIOKafkaProducer(security_protocol="SSL", ssl_context=ssl.create_default_context())
    with pytest.raises(NotSupportedError, match="create_ssl_context"):
        aiokafka.AIOKafkaConsumer(security_protocol="SSL", ssl_context=ssl.create_default_context())



@pytest.mark.parametrize("password", ["str", "bytes", "bytearray", "callable"])
def test_a_key_password_the_ssl_module_takes_reaches_librdkafka_as_str(tls_certs, password):
    """create_ssl_context takes what load_cert_chain takes (str, bytes, bytearray, or a
    callable returning one); a bytearray was handed to librdkafka as it was, and the
    producer refused it as a bad rdkafka_config['ssl.key.password'] it was never given."""
    secret = tls_certs.client_password
    given = {"str": secret, "bytes": secret.encode(), "bytearray": bytearray(secret.encode()),
             "callable": lambda: bytearray(secret.encode())}[password]
    context = create_ssl_context(cafile=tls_certs.ca.certfile, certfile=tls_certs.client.certfile,
                                 keyfile=tls_certs.client.keyfile, password=given)
    assert rdkafka_config(context)["ssl.key.password"] == secret
    for client in (aiokafka.AIOKafkaProducer, aiokafka.AIOKafkaConsumer):
        client(bootstrap_servers="127.0.0.1:1", security_protocol="SSL", ssl_context=context)


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_a_tls_protocol_without_ssl_context_is_refused_as_aiokafka_refuses_it(protocol):
    """aiokafka's clients refuse SSL and SASL_SSL without an ssl_context (ValueError); a
    client that went on would trust the system's CAs, which the program never chose."""
    # PLAIN (the default mechanism) needs them, as in aiokafka
    login = {"sasl_plain_username": "user", "sasl_plain_password": "secret"} if protocol == "SASL_SSL" else {}
    for client in (aiokafka.AIOKafkaProducer, aiokafka.AIOKafkaConsumer):
        with pytest.raises(aiokafka.errors.KafkaConfigurationError, match="needs an ssl_context") as info:
            client(security_protocol=protocol, **login)
        assert isinstance(info.value, ValueError) and "create_ssl_context(" in str(info.value)
        client(security_protocol=protocol, ssl_context=create_ssl_context(), **login)  # the system's CAs, chosen
        client(security_protocol=protocol, rdkafka_config={"ssl.ca.location": "probe"}, **login)

@pytest.mark.asyncio
async def test_produce_and_consume_over_mutual_tls(tls_listener, tls_certs):
    listener = tls_listener(tls_certs.broker, client_cafile=tls_certs.ca.certfile)
    client_cert = tls_certs.client
    topic = unique_name("aiossl")
    with KafkaClient(hosts=listener.bootstrap_servers,
                     ssl_config=SslConfig(cafile=tls_certs.ca.certfile, certfile=client_cert.certfile,
                                          keyfile=client_cert.keyfile, password=tls_certs.client_password)) as client:
        client.cluster.create_topics([(topic, 1, 1)])
    context = create_ssl_context(cafile=tls_certs.ca.certfile, certfile=client_cert.certfile,
                                 keyfile=client_cert.keyfile, password=tls_certs.client_password)
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=listener.bootstrap_servers,
                                         security_protocol="SSL", ssl_context=context) as producer:
        md = await producer.send_and_wait(topic, b"Super Message", partition=0)
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=listener.bootstrap_servers, security_protocol="SSL",
                                         ssl_context=context, auto_offset_reset="earliest")
    async with consumer:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, md.offset)
        record = await consumer.getone()
    assert (record.value, record.offset) == (b"Super Message", md.offset)


@pytest.mark.asyncio
async def test_cadata_of_several_der_certificates_trusts_each(tls_listener, tls_certs):
    """cadata may be several DER certificates one after the other (load_verify_locations
    takes them): librdkafka must get each, not the first alone (ssl.ca.pem)."""
    listener = tls_listener(tls_certs.broker)
    der = b"".join(ssl.PEM_cert_to_DER_cert(open(ca.certfile).read()) for ca in (tls_certs.other_ca, tls_certs.ca))
    await starts_over_tls(listener, create_ssl_context(cadata=der))


async def starts_over_tls(listener, context):
    """A producer with ``context`` starts on ``listener`` (its TLS handshake succeeds)."""
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=listener.bootstrap_servers, security_protocol="SSL",
                                         ssl_context=context, request_timeout_ms=30000)
    try:
        await asyncio.wait_for(producer.start(), 60)
    finally:
        await producer.stop()


NEVER_MS = 300 * 1000  # librdkafka's largest socket.timeout.ms, beyond the test's 120 s timeout


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["AIOKafkaConsumer", "AIOKafkaProducer"])
async def test_start_raises_ssl_error_at_once_and_stops_connecting(tls_listener, tls_certs, kind):
    from pyrdk.exceptions import SslError
    listener = tls_listener(tls_certs.broker)
    client = getattr(aiokafka, kind)(
        bootstrap_servers=listener.bootstrap_servers, security_protocol="SSL",
        ssl_context=create_ssl_context(cafile=tls_certs.other_ca.certfile), request_timeout_ms=NEVER_MS)
    try:
        with pytest.raises(SslError) as info:
            await asyncio.wait_for(client.start(), 60)
        assert "unknown CA" in info.value.reason
        assert_no_reconnect(listener.stunnel)
    finally:
        await client.stop()


async def getmany_until_it_raises(consumer):
    while True:
        await consumer.getmany(timeout_ms=500)


@pytest.mark.asyncio
async def test_getmany_raises_ssl_error_when_the_certificate_goes_bad(tls_listener, tls_certs):
    """The error reaches getmany(), never the event loop's exception handler."""
    from pyrdk.exceptions import SslError
    from pyrdk.testing import Stunnel
    listener = tls_listener(tls_certs.broker)
    loop_errors = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: loop_errors.append(context))
    consumer = aiokafka.AIOKafkaConsumer(
        bootstrap_servers=listener.bootstrap_servers, security_protocol="SSL",
        ssl_context=create_ssl_context(cafile=tls_certs.ca.certfile), request_timeout_ms=NEVER_MS)
    await consumer.start()
    consumer.assign([TopicPartition(unique_name("aiossl"), 0)])
    bad = None
    try:
        port = listener.stunnel.port
        listener.stunnel.close()
        bad = Stunnel(listener.broker.port, tls_certs.expired.certfile, tls_certs.expired.keyfile,
                      port=port).start()
        with pytest.raises(SslError) as info:
            await asyncio.wait_for(getmany_until_it_raises(consumer), 60)
        assert info.value.reason == "certificate has expired"
        with pytest.raises(SslError):  # so does a metadata request, at once
            await asyncio.wait_for(consumer.topics(), 60)
        assert loop_errors == []
    finally:
        await consumer.stop()
        if bad is not None:
            bad.close()


@pytest.mark.asyncio
async def test_start_on_a_tls_listener_tells_a_plaintext_producer_to_use_tls(tls_listener, tls_certs):
    """A plaintext producer of a TLS listener: start() fails within request_timeout_ms, as
    aiokafka's does, and its error carries what kept it from the broker and what to set, not
    only 'Broker transport failure'."""
    listener = tls_listener(tls_certs.broker)
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=listener.bootstrap_servers, request_timeout_ms=3000)
    with pytest.raises((aiokafka.errors.KafkaConnectionError, aiokafka.errors.KafkaTimeoutError)) as info:
        await producer.start()
    await producer.stop()
    assert "in state APIVERSION_QUERY" in str(info.value)
    assert "set security_protocol SSL or SASL_SSL (with ssl_config, or ssl_context" in str(info.value)


@pytest.mark.asyncio
async def test_a_client_certificate_loaded_into_the_context_afterwards_is_sent(tls_listener, tls_certs):
    """aiokafka's programs may call load_cert_chain() on the context create_ssl_context()
    returned: librdkafka must get that certificate too, not connect without one."""
    listener = tls_listener(tls_certs.broker, client_cafile=tls_certs.ca.certfile)
    context = create_ssl_context(cafile=tls_certs.ca.certfile)
    context.load_cert_chain(tls_certs.client.certfile, tls_certs.client.keyfile, tls_certs.client_password)
    await starts_over_tls(listener, context)
    with pytest.raises(NotSupportedError, match="one of cafile, capath or cadata"):
        context.load_verify_locations(tls_certs.other_ca.certfile)


# -- SASL OAUTHBEARER: aiokafka's sasl_oauth_token_provider ------------------------------------

class Provider(aiokafka.abc.AbstractTokenProvider):
    """Records the loop each ``token()`` ran in; ``fail``: what ``token()`` raises. As the
    example of aiokafka's docs, it returns the future of a call in the loop's executor."""

    def __init__(self, fail=None):
        super().__init__()
        self.loops, self.fail = [], fail

    async def token(self):
        self.loops.append(asyncio.get_running_loop())
        if self.fail is not None:
            raise self.fail
        return asyncio.get_running_loop().run_in_executor(None, self._token)

    def _token(self):
        return "token-%d" % len(self.loops)

    def extensions(self):
        return {"traceId": "abc"}


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["AIOKafkaConsumer", "AIOKafkaProducer"])
async def test_a_token_providers_token_is_awaited_in_the_clients_loop_and_sent(sasl_listener, kind):
    """Tansu refuses OAUTHBEARER tokens: the provider's token() is awaited in the loop the
    client started in, the token sent (the refusal is the listener's, after
    SaslAuthenticate) and the refusal raised by start() as AuthenticationFailedError."""
    provider = Provider()
    context = create_ssl_context(cafile=sasl_listener.cafile) if sasl_listener.protocol == "SASL_SSL" else None
    client = getattr(aiokafka, kind)(bootstrap_servers=sasl_listener.hosts, security_protocol=sasl_listener.protocol,
                                     ssl_context=context, sasl_mechanism="OAUTHBEARER",
                                     sasl_oauth_token_provider=provider, request_timeout_ms=NEVER_MS)
    try:
        with pytest.raises(aiokafka.errors.AuthenticationFailedError) as info:
            await asyncio.wait_for(client.start(), 60)
        assert "SASL authentication error" in str(info.value)  # the listener's refusal of the token
        assert provider.loops and all(loop is asyncio.get_running_loop() for loop in provider.loops)
    finally:
        await client.stop()


@pytest.mark.asyncio
async def test_a_token_provider_that_raises_fails_start_naming_its_error(kafka_hosts):
    provider = Provider(fail=ValueError("identity provider down"))
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=kafka_hosts, security_protocol="SASL_PLAINTEXT",
                                         sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=provider)
    try:
        with pytest.raises(aiokafka.errors.AuthenticationFailedError,
                           match=r"sasl_oauth_token_provider.token\(\) raised ValueError: identity provider down"):
            await asyncio.wait_for(producer.start(), 60)
        assert provider.loops
    finally:
        await producer.stop()


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["AIOKafkaConsumer", "AIOKafkaProducer"])
async def test_a_token_provider_that_never_answers_fails_start_within_request_timeout_ms(kafka_hosts, kind):
    """start() raises after request_timeout_ms (its wait for the metadata, or the token
    request's own) naming the provider's token(); stop() does not wait for it."""
    class Stuck(aiokafka.abc.AbstractTokenProvider):
        async def token(self):
            await asyncio.Event().wait()

    client = getattr(aiokafka, kind)(bootstrap_servers=kafka_hosts, security_protocol="SASL_PLAINTEXT",
                                     sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Stuck(),
                                     request_timeout_ms=3000)
    try:
        with pytest.raises(aiokafka.errors.KafkaError,
                           match=r"sasl_oauth_token_provider.token\(\) (has not returned a token|raised "
                                 r"TimeoutError: no token within request_timeout_ms)"):
            await asyncio.wait_for(client.start(), 60)
    finally:
        await asyncio.wait_for(client.stop(), 30)


@pytest.mark.parametrize("kind", ["AIOKafkaConsumer", "AIOKafkaProducer"])
def test_a_token_provider_is_refused_where_it_cannot_serve(kind):
    """Not an AbstractTokenProvider, or without SASL OAUTHBEARER: ConfigurationError (a
    ValueError, as aiokafka's) saying what to pass."""
    client = getattr(aiokafka, kind)
    with pytest.raises(aiokafka.errors.KafkaConfigurationError, match="must implement .*AbstractTokenProvider"):
        client(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
               sasl_oauth_token_provider=lambda: "token")
    with pytest.raises(aiokafka.errors.KafkaConfigurationError, match="needs sasl_mechanism='OAUTHBEARER'"):
        client(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="u",
               sasl_plain_password="p", sasl_oauth_token_provider=Provider())
    with pytest.raises(aiokafka.errors.KafkaConfigurationError, match="needs sasl_mechanism='OAUTHBEARER'"):
        client(sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Provider())  # PLAINTEXT
    with pytest.raises(aiokafka.errors.KafkaConfigurationError, match="has no token to send"):
        client(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER")
