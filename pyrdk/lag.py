"""Consumer lag of a group without joining it: its committed offsets against the ends of the
logs, for groups coordinated by the broker or by ZooKeeper.

The committed offsets come from the broker (``rd_kafka_ListConsumerGroupOffsets``: pykafka's
and pyrdk's balanced consumers commit there too); with a ZooKeeper connect string, offsets
that old fleets committed to ZooKeeper fill in the partitions the broker has none for, and
the owner of each partition is read from pykafka's ownership znodes. Log starts and ends are
ListOffsets answers (``rd_kafka_offsets_for_times``).
"""
from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import NamedTuple, Optional, Union

from pyrdk.cluster import Cluster, _group_id, _list_of, to_str
from pyrdk.common import OffsetType
from pyrdk.exceptions import GroupIdNotFoundError, UnknownTopicOrPartition, for_code
from pyrdk.topic import Topic


class PartitionLag(NamedTuple):
    """The lag of one partition: ``committed`` is the next offset the group
    will read (None if it committed none), ``lag`` the messages between it and ``log_end`` (from
    ``log_start`` when nothing is committed, as a group starting at the earliest offset would
    read), ``owner`` the member holding the partition (None if none), ``source`` where the
    committed offset came from (``"kafka"``, ``"zookeeper"`` or None)."""
    topic: str
    partition: int
    committed: Optional[int]
    log_start: int
    log_end: int
    lag: int
    owner: Optional[str]
    source: Optional[str]


def _owners_from_description(description):
    owners = {}
    for member in (description.members if description is not None else ()):
        for tp in member.assignment:
            owners[tp] = member.member_id
    return owners


def consumer_lag(cluster: Cluster, group: Union[str, bytes], topics: Optional[Iterable[Union[str, bytes]]] = None,
                 zookeeper_hosts: Optional[str] = None) -> dict[bytes, dict[int, PartitionLag]]:
    """``{topic (bytes): {partition id: PartitionLag}}`` for ``group`` (str or bytes), over ``topics``
    (a list of names or Topics) or, with None, every topic it committed offsets for, is
    assigned, or has znodes for."""
    if not isinstance(cluster, Cluster):
        raise TypeError("consumer_lag takes a pyrdk Cluster (client.cluster), not %r" % (cluster,))
    group = _group_id(group, "consumer_group")
    if topics is not None:  # a list of names: one name taken apart would be the lag of its letters
        topics = [to_str(t.name if isinstance(t, Topic) else t)
                  for t in _list_of("consumer_lag", topics, "topic names")]
    try:
        description = cluster.describe_consumer_groups([group]).get(group)
    except GroupIdNotFoundError:
        description = None
    owners = _owners_from_description(description)
    # each topic once: librdkafka refuses a partition listed twice ("Duplicate partitions")
    names = None if topics is None else list(dict.fromkeys(t.decode() if isinstance(t, bytes) else t for t in topics))
    wanted = None
    if names is not None:
        found = _existing(cluster, names)
        for name in names:
            if found[name] is None:
                raise UnknownTopicOrPartition("unknown topic %r: no lag to read (`list_topics()` names them)" % name)
        wanted = [(name, p) for name in names for p in sorted(found[name].partitions)]
    committed = {tp: (offset, "kafka") for tp, offset in cluster.list_consumer_group_offsets(group, wanted).items()
                 if offset >= 0}
    zk_topics = set()
    if zookeeper_hosts:
        from pyrdk.zookeeper import GroupZnodes
        with GroupZnodes(zookeeper_hosts, cluster.timeout_ms) as zk:
            zk_topics = set(zk.topics(group)) if names is None else set(names)
            for topic in zk_topics:
                for pid, offset in zk.offsets(group, topic).items():
                    committed.setdefault((topic, pid), (offset, "zookeeper"))
                for pid, member in zk.owners(group, topic).items():
                    owners.setdefault((topic, pid), member)
    if names is None:
        names = sorted({t for t, _ in committed} | {t for t, _ in owners} | zk_topics)
    tps: list[tuple[str, int]] = []
    for name, topic in _existing(cluster, names).items():
        if topic is not None:  # else a topic the group read once and that is gone now
            tps.extend((name, pid) for pid in sorted(topic.partitions))
    starts = _offsets(cluster, tps, OffsetType.EARLIEST)
    ends = _offsets(cluster, tps, OffsetType.LATEST)
    out: dict[bytes, dict[int, PartitionLag]] = collections.OrderedDict()
    for tp in tps:
        offset, source = committed.get(tp, (None, None))
        start, end = starts[tp], ends[tp]
        lag = end - (offset if offset is not None else start)
        out.setdefault(tp[0].encode(), collections.OrderedDict())[tp[1]] = PartitionLag(
            tp[0], tp[1], offset, start, end, lag, owners.get(tp), source)
    return out


def _existing(cluster, names):
    """``{name: Topic or None}`` from fresh metadata: a lag is a read, and
    ``cluster.topics[name]`` would have a broker that creates topics on demand create a topic
    the group once read (or wait ``socket_timeout_ms`` for it); and the client's known topics
    may be out of date (a lag watched for a while): partitions added since, a topic deleted."""
    if names:
        cluster.update()
    return {name: cluster.topics.get(name) for name in names}


def _offsets(cluster, tps, when):
    if not tps:
        return {}
    out = {}
    for tp in cluster.offsets_for_times([t + (when,) for t in tps]):
        if tp.error:
            raise for_code(tp.error)("list offsets of %s [%d] failed: error %d" % (tp.topic, tp.partition, tp.error),
                                     code=tp.error)
        out[(tp.topic, tp.partition)] = tp.offset
    return out
