"""Read the znodes of ZooKeeper-coordinated consumer groups: pykafka's members and owners,
and the offsets old fleets committed to ZooKeeper.

- ``/consumers/<group>/ids/<member id>``: a member; its value is the topic name (pykafka)
  or a JSON subscription (Kafka's old Scala consumer)
- ``/consumers/<group>/owners/<topic>/<leader id>-<partition id>`` (pykafka) or
  ``.../<partition id>`` (Kafka's old consumer): the owner's member id
- ``/consumers/<group>/offsets/<topic>/<partition id>``: the next offset to read, as text

Nothing here writes to ZooKeeper.
"""
import json

try:
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError
except ImportError as exc:
    raise ImportError("reading ZooKeeper needs kazoo: pip install 'pyrdk[zookeeper]' (%s)" % exc) from exc

from pyrdk.exceptions import KafkaException


class ZooKeeperError(KafkaException):
    """ZooKeeper could not be reached, or answered with an error."""


def _partition_of(name):
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


class GroupZnodes:
    """A read-only view of ``/consumers`` on a ZooKeeper ensemble (``hosts`` may carry a
    chroot); a context manager that closes its kazoo session."""

    def __init__(self, hosts, timeout_ms=10000):
        self._hosts = hosts
        self._zk = KazooClient(hosts=hosts, timeout=timeout_ms / 1000.0, read_only=True)
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
        return self._zk.exists("/consumers/%s" % group) is not None

    def members(self, group):
        """``{member id: [topic names]}`` of the registered members."""
        out = {}
        for member in self._children("/consumers/%s/ids" % group):
            value = self._value("/consumers/%s/ids/%s" % (group, member))
            if value is not None:
                out[member] = _topics_of_member(value)
        return out

    def owners(self, group, topic):
        """``{partition id: owner member id}`` of ``topic``."""
        path = "/consumers/%s/owners/%s" % (group, topic)
        out = {}
        for name in self._children(path):
            pid = _partition_of(name)
            value = self._value("%s/%s" % (path, name))
            if pid is not None and value is not None:
                out[pid] = value.decode("utf-8", "replace")
        return out

    def offsets(self, group, topic):
        """``{partition id: next offset}`` committed to ZooKeeper for ``topic``."""
        path = "/consumers/%s/offsets/%s" % (group, topic)
        out = {}
        for name in self._children(path):
            value = self._value("%s/%s" % (path, name))
            try:
                out[int(name)] = int(value)
            except (TypeError, ValueError):
                continue
        return out

    def topics(self, group):
        """The topics the group has owners or offsets for."""
        return sorted(set(self._children("/consumers/%s/owners" % group))
                      | set(self._children("/consumers/%s/offsets" % group)))
