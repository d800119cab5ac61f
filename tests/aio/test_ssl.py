"""create_ssl_context() and ssl_context= against Tansu behind a TLS listener that asks for a
client certificate (tests/fix_tls.py), and the librdkafka properties a context maps to."""
import os
import ssl

import pytest

import pyrdk.aio as aiokafka
from pyrdk.aio.helpers import create_ssl_context, rdkafka_config
from pyrdk.connection import SslConfig
from pyrdk.exceptions import NotSupportedError
from pyrdk.client import KafkaClient
from pyrdk.aio.structs import TopicPartition
from tests.fix_kafka import unique_name

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
