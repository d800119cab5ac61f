"""pykafka's ``pykafka.connection`` module, where pykafka programs import ``SslConfig`` from.

Only ``SslConfig`` lives here (the class is :class:`pyrdk.common.SslConfig`): librdkafka
owns every connection, so pykafka's ``BrokerConnection`` has no counterpart.
"""
from pyrdk.common import SslConfig

__all__ = ["SslConfig"]
