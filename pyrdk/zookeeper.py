"""ZooKeeper, through kazoo, for what Kafka and pykafka kept there: the brokers a Kafka
cluster registers under ``/brokers/ids`` (``KafkaClient(zookeeper_hosts=...)`` without
``hosts``), the check of a ``zookeeper=`` client given to ``BalancedConsumer``, and a
read-only view of ZooKeeper-coordinated consumer groups (lag, the command line):

- ``/consumers/<group>/ids/<member id>``: a member; its value is the topic name (pykafka)
  or a JSON subscription (Kafka's old Scala consumer)
- ``/consumers/<group>/owners/<topic>/<leader id>-<partition id>`` (pykafka) or
  ``.../<partition id>`` (Kafka's old consumer): the owner's member id. pykafka on Python 3
  formats the topic name, bytes, into the path: its nodes are under ``owners/b'<topic>'``
  (see ``pykafka_owner_dir``)
- ``/consumers/<group>/offsets/<topic>/<partition id>``: the next offset to read, as text

Only ``BalancedConsumer`` writes to ZooKeeper. kazoo is an optional dependency (``pip install
'pyrdk[zookeeper]'``).
"""
import json
import logging

try:
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException, NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError
    from kazoo.hosts import collect_hosts
except ImportError as exc:
    raise ImportError("ZooKeeper needs kazoo: pip install 'pyrdk[zookeeper]' (%s)" % exc) from exc

from pyrdk.exceptions import KafkaException, NoBrokersAvailableError

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


def check_connect_string(hosts):
    """``hosts`` if kazoo reads it as a ZooKeeper connect string (``host:port,...[/chroot]``),
    else a ``ValueError`` naming it (kazoo's own says "bad hostname", or names a port)."""
    try:
        for host, _ in collect_hosts(hosts)[0]:
            if ":" not in host:  # a name (not an IPv6 address): resolvable only if IDNA encodes it
                host.encode("idna")  # else kazoo's connection thread dies on it, and start() times out
    except ValueError as exc:  # UnicodeError too
        raise ValueError("zookeeper_hosts %r is not a 'host:port,...[/chroot]' connect string: %s"
                         % (hosts, exc)) from None
    return hosts


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
    zk = KazooClient(check_connect_string(zookeeper_hosts), timeout=timeout_ms / 1000.0)
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


class ZooKeeperError(KafkaException):
    """ZooKeeper could not be reached, or answered with an error."""


def pykafka_owner_dir(topic):
    """The name of the directory under ``/consumers/<group>/owners`` where pykafka on Python
    3 keeps the ownership nodes of ``topic`` (str or bytes): pykafka formats the topic name,
    bytes, into the path (``'/consumers/{group}/owners/{topic}'.format(topic=b"events")``),
    so ``b'events'``."""
    if isinstance(topic, str):
        topic = topic.encode()
    return str(topic)


def _topic_of_owner_dir(name):
    """The topic an ownership directory is of: ``events`` for ``events`` and ``b'events'``."""
    if len(name) > 3 and name.startswith("b'") and name.endswith("'"):
        return name[2:-1]
    return name


def partition_of(name):
    """The partition id in an owner node's name, ``<leader>-<partition>`` or ``<partition>``."""
    try:
        return int(name.rsplit("-", 1)[-1])
    except ValueError:
        return None


def _topics_of_member(value):
    """The topics a member's id node names: pykafka stores the topic name, Kafka's old
    consumer a JSON ``{"subscription": {topic: count}}``."""
    text = value.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
    except ValueError:
        return [text] if text else []
    if isinstance(doc, dict) and isinstance(doc.get("subscription"), dict):
        return sorted(doc["subscription"])
    return [text]


def _group_path(name):
    """``/consumers/<name>`` for a group (or a topic below it), or None for a name no znode
    has: empty, ``.``, ``..``, or holding ``/`` or NUL (``a/b`` would name a node of group
    ``a``; kazoo refuses the rest with a bare ValueError)."""
    if not name or name in (".", "..") or "/" in name or "\x00" in name:
        return None
    return "/consumers/%s" % name


class GroupZnodes:
    """A read-only view of ``/consumers`` on a ZooKeeper ensemble (``hosts`` may carry a
    chroot); a context manager that closes its kazoo session."""

    def __init__(self, hosts, timeout_ms=10000):
        self._hosts = hosts
        self._zk = KazooClient(hosts=check_connect_string(hosts), timeout=timeout_ms / 1000.0, read_only=True)
        try:
            self._zk.start(timeout=timeout_ms / 1000.0)
        except KazooTimeoutError as exc:
            self._zk.close()
            raise ZooKeeperError("ZooKeeper at %s did not answer within %d ms" % (hosts, timeout_ms)) from exc

    def close(self):
        self._zk.stop()
        self._zk.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _children(self, path):
        try:
            return sorted(self._zk.get_children(path))
        except NoNodeError:
            return []

    def _value(self, path):
        try:
            return self._zk.get(path)[0] or b""
        except NoNodeError:
            return None

    def groups(self):
        """The groups that have a node under ``/consumers``."""
        return self._children("/consumers")

    def exists(self, group):
        path = _group_path(group)
        return path is not None and self._zk.exists(path) is not None

    def members(self, group):
        """``{member id: [topic names]}`` of the registered members."""
        out = {}
        path = _group_path(group)
        if path is None:
            return out
        for member in self._children("%s/ids" % path):
            value = self._value("%s/ids/%s" % (path, member))
            if value is not None:
                out[member] = _topics_of_member(value)
        return out

    def owners(self, group, topic):
        """``{partition id: owner member id}`` of ``topic``."""
        out = {}
        if _group_path(group) is None or _group_path(topic) is None:
            return out
        for directory in (topic, pykafka_owner_dir(topic)):  # pyrdk's and pykafka 2's; pykafka 3's
            path = "/consumers/%s/owners/%s" % (group, directory)
            for name in self._children(path):
                pid = partition_of(name)
                value = self._value("%s/%s" % (path, name))
                if pid is not None and value is not None:
                    out.setdefault(pid, value.decode("utf-8", "replace"))
        return out

    def offsets(self, group, topic):
        """``{partition id: next offset}`` committed to ZooKeeper for ``topic``."""
        out = {}
        if _group_path(group) is None or _group_path(topic) is None:
            return out
        path = "/consumers/%s/offsets/%s" % (group, topic)
        for name in self._children(path):
            value = self._value("%s/%s" % (path, name))
            try:
                out[int(name)] = int(value)
            except (TypeError, ValueError):
                continue
        return out

    def topics(self, group):
        """The topics the group has owners or offsets for."""
        path = _group_path(group)
        if path is None:
            return []
        owners = {_topic_of_owner_dir(name) for name in self._children("%s/owners" % path)}
        return sorted(owners | set(self._children("%s/offsets" % path)))
