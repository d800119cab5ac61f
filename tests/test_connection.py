"""pyrdk.connection: where pykafka programs import SslConfig from."""
import pytest

from pyrdk import common, connection


def test_ssl_config_is_pyrdks():
    assert connection.SslConfig is common.SslConfig
    config = connection.SslConfig(cafile="/ca.pem", certfile="/c.pem", keyfile="/k.pem", password=b"pw")
    assert config.rdkafka_config() == {"security.protocol": "ssl", "ssl.ca.location": "/ca.pem",
                                       "ssl.certificate.location": "/c.pem",
                                       "ssl.key.location": "/k.pem", "ssl.key.password": "pw"}


def test_broker_connection_is_not_there_and_says_why():
    with pytest.raises(AttributeError, match="librdkafka owns the broker connections"):
        connection.BrokerConnection
