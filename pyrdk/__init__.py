"""pyrdk: pykafka's API on librdkafka.

    import pyrdk
    client = pyrdk.KafkaClient(hosts="127.0.0.1:9092")
    with client.topics["events"].get_producer() as producer:
        producer.produce(b"payload")

Programs written for pykafka 2.8 run after ``import pyrdk as pykafka``; those that import
``pykafka`` in many places run after one call to :func:`install_as_pykafka`.
"""
import importlib
import importlib.abc
import importlib.util
import sys

__version__ = "0.1.0"

from pyrdk import common, exceptions, handlers, partitioners  # noqa: F401
from pyrdk.broker import Broker
from pyrdk.client import KafkaClient
from pyrdk.cluster import Cluster
from pyrdk.common import CompressionType, Message, OffsetType, SslConfig
from pyrdk.managedbalancedconsumer import ManagedBalancedConsumer
from pyrdk.membershipprotocol import CooperativeStickyProtocol, RangeProtocol, RoundRobinProtocol
from pyrdk.partition import Partition
from pyrdk.producer import Producer
from pyrdk.core import implementation, librdkafka_version
from pyrdk.simpleconsumer import SimpleConsumer
from pyrdk.topic import Topic

_PYKAFKA_MODULES = ("balancedconsumer", "broker", "cli", "client", "cluster", "common", "connection",
                    "exceptions", "handlers", "managedbalancedconsumer", "membershipprotocol",
                    "partition", "partitioners", "producer", "protocol", "simpleconsumer", "topic",
                    "utils")
# pykafka's modules that only programs use: pykafka imported them all, so they are
# attributes of the package (``pykafka.utils.compat``) without an import of their own.
_COMPAT_MODULES = ("connection", "protocol", "utils")


def __getattr__(name):
    # BalancedConsumer needs kazoo (pip install 'pyrdk[zookeeper]'): imported on first use.
    if name == "BalancedConsumer":
        from pyrdk.balancedconsumer import BalancedConsumer
        return BalancedConsumer
    if name in _COMPAT_MODULES:
        return importlib.import_module("pyrdk." + name)
    raise AttributeError("module 'pyrdk' has no attribute %r" % name)


class _PykafkaAliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """After :func:`install_as_pykafka`, ``import pykafka.<name>`` (``pykafka.utils.compat``
    too) gives the module ``pyrdk.<name>`` itself, never a second copy of it, for the names
    in ``_PYKAFKA_MODULES``; other names are not found."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("pykafka."):
            return None
        if fullname.split(".")[1] not in _PYKAFKA_MODULES:  # not a copy of another pyrdk module
            raise ModuleNotFoundError("No module named %r" % fullname, name=fullname)
        name = "pyrdk" + fullname[len("pykafka"):]
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError as exc:  # a parent package is missing, or needs what is
            if exc.name is None or not (name + ".").startswith(exc.name + "."):
                raise
            return None
        if found is None:
            return None  # "No module named 'pykafka....'", as without pyrdk
        module = importlib.import_module(name)
        spec = importlib.util.spec_from_loader(fullname, self, is_package=hasattr(module, "__path__"))
        spec.loader_state = (module, module.__spec__)
        return spec

    def create_module(self, spec):
        return spec.loader_state[0]

    def exec_module(self, module):
        # The import system has just set module.__spec__ to the alias's spec: give the module
        # its own back (reload() and pickling by name keep working).
        module.__spec__ = module.__spec__.loader_state[1]


def install_as_pykafka():
    """Make ``import pykafka`` (and ``pykafka.common``, ``pykafka.utils.compat``...) give
    pyrdk's modules, for programs written for pykafka that import it in many places. A
    module pyrdk does not have (or cannot import: ``balancedconsumer`` without kazoo) is left
    out, so importing it raises ``ImportError`` as it would without pyrdk."""
    sys.modules["pykafka"] = sys.modules[__name__]
    if not any(isinstance(finder, _PykafkaAliases) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PykafkaAliases())
    for name in _PYKAFKA_MODULES:
        try:
            module = importlib.import_module("pyrdk." + name)
        except ImportError:  # balancedconsumer without kazoo; a module this install lacks
            continue
        sys.modules["pykafka." + name] = module


__all__ = ["BalancedConsumer", "Broker", "Cluster", "CompressionType", "CooperativeStickyProtocol",
           "KafkaClient", "ManagedBalancedConsumer", "Message", "OffsetType", "Partition",
           "Producer", "RangeProtocol", "RoundRobinProtocol", "SimpleConsumer", "SslConfig", "Topic",
           "common", "exceptions", "handlers", "implementation", "install_as_pykafka", "librdkafka_version",
           "partitioners"]
