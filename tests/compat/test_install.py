"""``pyrdk.install_as_pykafka()`` and ``import pyrdk as pykafka``: every pykafka module a
program imports is pyrdk's own module (never a copy), and what pyrdk lacks fails to import
as it would without pyrdk. Each case runs in a fresh interpreter."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(code):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_pykafka_modules_are_pyrdks_own():
    out = run("""
        import importlib, sys
        import pyrdk
        pyrdk.install_as_pykafka()
        import pykafka
        assert pykafka is pyrdk
        for name in pyrdk._PYKAFKA_MODULES:
            assert sys.modules["pykafka." + name] is importlib.import_module("pyrdk." + name), name
        import pykafka.utils.compat
        import pyrdk.utils.compat
        assert pykafka.utils.compat is pyrdk.utils.compat
        assert pyrdk.utils.compat.__spec__.name == "pyrdk.utils.compat"  # its own spec, kept
        importlib.reload(pyrdk.utils.compat)
        # a submodule imported for the first time under pykafka's name is not a second copy
        del sys.modules["pykafka.utils.compat"], sys.modules["pyrdk.utils.compat"]
        import pykafka.utils.compat
        assert sys.modules["pykafka.utils.compat"] is sys.modules["pyrdk.utils.compat"]
        print("OK", len(pyrdk._PYKAFKA_MODULES))
    """)
    assert out.startswith("OK")


def test_the_imports_pykafka_programs_make():
    run("""
        import pyrdk
        pyrdk.install_as_pykafka()
        from pykafka import KafkaClient, SslConfig, Topic, Producer, SimpleConsumer, BalancedConsumer
        from pykafka.balancedconsumer import BalancedConsumer
        from pykafka.managedbalancedconsumer import ManagedBalancedConsumer
        from pykafka.common import OffsetType, CompressionType, Message
        from pykafka.exceptions import KafkaException, SocketDisconnectedError, NoBrokersAvailableError
        from pykafka.partitioners import hashing_partitioner, HashingPartitioner, BasePartitioner
        from pykafka.membershipprotocol import RangeProtocol, RoundRobinProtocol
        from pykafka.utils import serialize_utf8, deserialize_utf8
        from pykafka.utils.compat import iteritems, itervalues, iterkeys, get_bytes, get_string, PY3
        from pykafka.utils.compat import range, buffer, Queue, Empty, Semaphore
        from pykafka.connection import SslConfig as ConnectionSslConfig
        from pykafka.protocol import (CreateTopicRequest, DeleteTopicsRequest, Message as ProtocolMessage,
                                      PartitionOffsetCommitRequest, PartitionOffsetFetchRequest)
        from pykafka.handlers import ThreadingHandler, Handler
        from pykafka.simpleconsumer import OwnedPartition
        from pykafka.producer import OwnedBroker
        import pykafka.cluster, pykafka.broker, pykafka.topic, pykafka.partition, pykafka.client
        assert ConnectionSslConfig is SslConfig and issubclass(Message, ProtocolMessage)
        import datetime
        from pykafka.common import EPOCH
        from pykafka.simpleconsumer import MAGIC_OFFSETS
        assert EPOCH == datetime.datetime(1970, 1, 1) and MAGIC_OFFSETS == [OffsetType.EARLIEST, OffsetType.LATEST]
    """)


def test_import_pyrdk_as_pykafka_reaches_the_compat_modules():
    run("""
        import pyrdk as pykafka
        assert pykafka.utils.serialize_utf8(u"x", None) == (b"x", None)
        assert pykafka.utils.compat.PY3
        assert pykafka.protocol.Message(b"v").value == b"v"
        assert pykafka.connection.SslConfig is pykafka.SslConfig
        assert pykafka.handlers.ThreadingHandler
    """)


@pytest.mark.parametrize("name", ["pykafka.rdkafka", "pykafka.test.utils", "pykafka.rd", "pykafka.spark",
                                  "pykafka.nosuchmodule"])
def test_what_pykafka_had_and_pyrdk_lacks_is_not_found(name):
    run("""
        import pyrdk
        pyrdk._PYKAFKA_MODULES += ("nosuchmodule",)  # a listed module this install lacks
        pyrdk.install_as_pykafka()
        try:
            import %s
        except ModuleNotFoundError as exc:
            assert exc.name == %r or %r.startswith(exc.name + "."), exc
        else:
            raise AssertionError("imported")
    """ % (name, name, name))


def test_without_kazoo_the_rest_installs_and_the_balanced_consumer_says_what_is_missing():
    run("""
        import sys
        sys.modules["kazoo"] = None  # as if kazoo were not installed
        import pyrdk
        pyrdk.install_as_pykafka()
        from pykafka.simpleconsumer import SimpleConsumer
        try:
            import pykafka.balancedconsumer
        except ImportError as exc:
            assert "pip install 'pyrdk[zookeeper]'" in str(exc), exc
        else:
            raise AssertionError("imported without kazoo")
    """)
