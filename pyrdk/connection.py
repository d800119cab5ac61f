"""pykafka's ``pykafka.connection``: ``SslConfig`` lives here in pykafka.

    from pyrdk.connection import SslConfig
    client = KafkaClient(hosts="broker:9093", ssl_config=SslConfig(cafile="ca.pem"))

pykafka's ``BrokerConnection`` (its socket to one broker) has no counterpart: librdkafka
owns the connections.
"""
from pyrdk.common import SslConfig

__all__ = ["SslConfig"]


def __getattr__(name):
    if name == "BrokerConnection":
        raise AttributeError("pyrdk.connection has no BrokerConnection: librdkafka owns the broker "
                             "connections; use KafkaClient(hosts=...)")
    raise AttributeError("module 'pyrdk.connection' has no attribute %r" % name)
