"""pyrdk: pykafka's API on librdkafka.

    import pyrdk
    client = pyrdk.KafkaClient(hosts="127.0.0.1:9092")
    with client.topics["events"].get_producer() as producer:
        producer.produce(b"payload")

Programs written for pykafka 2.8 run after ``import pyrdk as pykafka``; those that import
``pykafka`` in many places run after one call to :func:`install_as_pykafka`.
"""
import importlib
import sys

__version__ = "0.1.0"

from pyrdk import common, exceptions, partitioners  # noqa: F401
from pyrdk.broker import Broker
from pyrdk.client import KafkaClient
from pyrdk.cluster import Cluster
from pyrdk.common import CompressionType, Message, OffsetType, SslConfig
from pyrdk.managedbalancedconsumer import ManagedBalancedConsumer
from pyrdk.membershipprotocol import CooperativeStickyProtocol, RangeProtocol, RoundRobinProtocol
from pyrdk.partition import Partition
from pyrdk.producer import Producer
from pyrdk.rd.handle import librdkafka_version
from pyrdk.simpleconsumer import SimpleConsumer
from pyrdk.topic import Topic

_PYKAFKA_MODULES = ("balancedconsumer", "broker", "client", "cluster", "common", "connection",
                    "exceptions", "managedbalancedconsumer", "membershipprotocol", "partition",
                    "partitioners", "producer", "simpleconsumer", "topic")


def __getattr__(name):
    # BalancedConsumer needs kazoo (pip install 'pyrdk[zookeeper]'): imported on first use.
    if name == "BalancedConsumer":
        from pyrdk.balancedconsumer import BalancedConsumer
        return BalancedConsumer
    raise AttributeError("module 'pyrdk' has no attribute %r" % name)


def install_as_pykafka():
    """Make ``import pykafka`` (and ``pykafka.common``, ``pykafka.exceptions``...) give
    pyrdk, for programs written for pykafka that import it in many places."""
    sys.modules["pykafka"] = sys.modules[__name__]
    for name in _PYKAFKA_MODULES:
        try:
            module = importlib.import_module("pyrdk." + name)
        except ImportError:  # balancedconsumer without kazoo
            continue
        sys.modules["pykafka." + name] = module


__all__ = ["BalancedConsumer", "Broker", "Cluster", "CompressionType", "CooperativeStickyProtocol",
           "KafkaClient", "ManagedBalancedConsumer", "Message", "OffsetType", "Partition",
           "Producer", "RangeProtocol", "RoundRobinProtocol", "SimpleConsumer", "SslConfig", "Topic",
           "common", "exceptions", "install_as_pykafka", "librdkafka_version", "partitioners"]
