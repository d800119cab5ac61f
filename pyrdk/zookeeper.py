"""ZooKeeper, through kazoo, for what pykafka kept there: the brokers a Kafka cluster
registers under ``/brokers/ids`` (``KafkaClient(zookeeper_hosts=...)`` without ``hosts``),
and the check of a ``zookeeper=`` client given to ``BalancedConsumer``.

kazoo is an optional dependency (``pip install 'pyrdk[zookeeper]'``).
"""
import json
import logging

try:
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException, NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError
except ImportError as exc:
    raise ImportError("ZooKeeper needs kazoo: pip install 'pyrdk[zookeeper]' (%s)" % exc) from exc

from pyrdk.exceptions import NoBrokersAvailableError

log = logging.getLogger(__name__)

BROKERS_PATH = "/brokers/ids"

# What BalancedConsumer uses of a KazooClient (kazoo's ChildrenWatch included): an object
# given as zookeeper= must have each of these.
KAZOO_METHODS = ("add_listener", "remove_listener", "create_async", "delete_async", "ensure_path",
                 "exists", "exists_async", "get_async", "get_children", "get_children_async",
                 "retry", "sync_async", "transaction")
KAZOO_ATTRIBUTES = ("chroot", "client_id", "connected", "handler", "state")


def check_kazoo_interface(zookeeper):
    """``zookeeper`` if it has KazooClient's interface (``KAZOO_METHODS`` callable,
    ``KAZOO_ATTRIBUTES`` present): a KazooClient, or anything that wraps one. Otherwise a
    ``TypeError`` naming what is missing."""
    for name in KAZOO_METHODS + KAZOO_ATTRIBUTES:
        if not hasattr(zookeeper, name):
            raise TypeError("zookeeper must be a kazoo.client.KazooClient or have its interface; "
                            "%s has no %r" % (type(zookeeper).__name__, name))
        if name in KAZOO_METHODS and not callable(getattr(zookeeper, name)):
            raise TypeError("zookeeper must be a kazoo.client.KazooClient or have its interface; "
                            "%s.%s is not callable" % (type(zookeeper).__name__, name))
    return zookeeper


def _endpoint(info, security_protocol):
    """``host:port`` of a broker's registration for clients speaking ``security_protocol``:
    the endpoint of a listener of that protocol (Kafka 0.9 and later), else the ``host`` and
    ``port`` fields (Kafka's PLAINTEXT listener; all Kafka 0.8 wrote). None if it has none."""
    protocols = info.get("listener_security_protocol_map") or {}
    for endpoint in info.get("endpoints") or []:
        listener, _, address = endpoint.partition("://")
        if protocols.get(listener, listener).upper() == security_protocol and address:
            return address
    if security_protocol == "PLAINTEXT" and info.get("host") and info.get("port", -1) > 0:
        return "%s:%d" % (info["host"], info["port"])
    return None


def brokers_from_zookeeper(zookeeper_hosts, security_protocol="PLAINTEXT", timeout_ms=30000):
    """The ``host:port,...`` of the brokers registered under ``/brokers/ids`` in ZooKeeper,
    as pykafka found them; ``NoBrokersAvailableError`` if ZooKeeper does not answer within
    ``timeout_ms`` or lists no broker for ``security_protocol``."""
    zk = KazooClient(zookeeper_hosts, timeout=timeout_ms / 1000.0)
    try:
        zk.start(timeout=timeout_ms / 1000.0)
    except KazooTimeoutError:
        zk.close()
        raise NoBrokersAvailableError("ZooKeeper at %s did not answer within %d ms, so its brokers "
                                      "(%s) are unknown: check zookeeper_hosts, or give hosts"
                                      % (zookeeper_hosts, timeout_ms, BROKERS_PATH)) from None
    try:
        hosts = []
        for broker_id in sorted(zk.get_children(BROKERS_PATH), key=lambda i: (len(i), i)):
            try:
                value, _ = zk.get("%s/%s" % (BROKERS_PATH, broker_id))
                address = _endpoint(json.loads(value.decode()), security_protocol.upper())
            except NoNodeError:  # the broker went away meanwhile
                continue
            except (ValueError, AttributeError, TypeError) as exc:
                log.warning("broker %s's registration in ZooKeeper is not Kafka's JSON: %s", broker_id, exc)
                continue
            if address is not None:
                hosts.append(address)
    except NoNodeError:
        hosts = []
    except (KazooException, KazooTimeoutError) as exc:
        raise NoBrokersAvailableError("could not read %s from ZooKeeper at %s: %r"
                                      % (BROKERS_PATH, zookeeper_hosts, exc)) from exc
    finally:
        zk.stop()
        zk.close()
    if not hosts:
        raise NoBrokersAvailableError("no broker with a %s listener is registered under %s in ZooKeeper "
                                      "at %s: give hosts, or check zookeeper_hosts (and its chroot)"
                                      % (security_protocol, BROKERS_PATH, zookeeper_hosts))
    return ",".join(hosts)
