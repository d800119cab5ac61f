"""Membership protocols: how a consumer group splits a topic's partitions (pykafka's).

A protocol is a ``GroupMembershipProtocol``. The ZooKeeper ``BalancedConsumer`` runs its
``decide_partitions(participants, partitions, consumer_id)`` on every member; the managed
consumer hands its ``protocol_name`` to librdkafka as ``partition.assignment.strategy``.

Every member must compute the same answer from the same inputs, so both functions sort the
participants, and sort partitions by pykafka's key ``"<topic>-<leader id>-<partition id>"``:
a pyrdk member and a pykafka member of one group agree on who owns what.
"""
import itertools
import logging
from collections import namedtuple

log = logging.getLogger(__name__)

__all__ = ["CooperativeStickyProtocol", "GroupMembershipProtocol", "RangeProtocol", "RoundRobinProtocol",
           "decide_partitions_range", "decide_partitions_roundrobin"]

GroupMembershipProtocol = namedtuple(
    "GroupMembershipProtocol", ["protocol_type", "protocol_name", "metadata", "decide_partitions"])


def _sort_key(partition):
    leader = partition.leader
    return "-".join([str(partition.topic.name), str(leader.id if leader else None),
                     str(partition.id)])


def _sorted_partitions(partitions):
    if isinstance(partitions, dict):
        partitions = partitions.values()
    return sorted(partitions, key=_sort_key)


def _log_decision(consumer_id, participants, partitions, mine):
    log.info("%s: balancing %d participants for %d partitions, owning %d",
             consumer_id, len(participants), len(partitions), len(mine))


def decide_partitions_range(participants, partitions, consumer_id):
    """The partitions ``consumer_id`` owns under Kafka's range algorithm: member *i* of the
    sorted participants takes a contiguous run of ``len // n`` partitions, plus one if
    ``i < len % n``.

    :param participants: ids of every member of the group (any order)
    :param partitions: the topic's partitions, a dict ``{id: Partition}`` or an iterable
    :param consumer_id: the member deciding, one of ``participants``
    """
    parts = _sorted_partitions(partitions)
    participants = sorted(participants)
    idx = participants.index(consumer_id)
    per_member, remainder = divmod(len(parts), len(participants))
    start = per_member * idx + min(idx, remainder)
    count = per_member + (1 if idx < remainder else 0)
    mine = set(itertools.islice(parts, start, start + count))
    _log_decision(consumer_id, participants, parts, mine)
    return mine


def decide_partitions_roundrobin(participants, partitions, consumer_id):
    """The partitions ``consumer_id`` owns when the sorted partitions are dealt one at a
    time to the sorted participants. Parameters as ``decide_partitions_range``."""
    parts = _sorted_partitions(partitions)
    participants = sorted(participants)
    idx = participants.index(consumer_id)
    mine = set(parts[idx::len(participants)])
    _log_decision(consumer_id, participants, parts, mine)
    return mine


RangeProtocol = GroupMembershipProtocol(b"consumer", b"range", None, decide_partitions_range)
RoundRobinProtocol = GroupMembershipProtocol(b"consumer", b"roundrobin", None,
                                             decide_partitions_roundrobin)


def decide_partitions_cooperative_sticky(participants, partitions, consumer_id):
    """Not decidable by one member: the broker group protocol's leader assigns sticky."""
    raise ValueError("CooperativeStickyProtocol needs the broker group protocol: use "
                     "get_balanced_consumer(..., managed=True)")


# librdkafka's incremental assignor, for the managed consumer only: a rebalance moves as few
# partitions as it can and revokes only those.
CooperativeStickyProtocol = GroupMembershipProtocol(b"consumer", b"cooperative-sticky", None,
                                                    decide_partitions_cooperative_sticky)
