"""RangeProtocol and RoundRobinProtocol decide what pykafka 2.8's decide_partitions decides.

pykafka sorts partitions by the string ``"<str(topic name)>-<leader id>-<partition id>"`` (so
partition 10 comes before 2, and the leader id matters) and the member ids as bytes. The
tables below were worked out by hand from that rule for one topic of 12 partitions whose
leaders are brokers 1, 2 and 3 in turn: the order is 0 3 6 9 | 1 10 4 7 | 11 2 5 8.
"""
import collections

import pytest

from pyrdk.membershipprotocol import (RangeProtocol, RoundRobinProtocol, decide_partitions_range,
                                      decide_partitions_roundrobin)

Topic = collections.namedtuple("Topic", "name")
Broker = collections.namedtuple("Broker", "id")
Partition = collections.namedtuple("Partition", "topic leader id")

TOPIC = Topic(b"events")
PARTITIONS = {i: Partition(TOPIC, Broker(1 + i % 3), i) for i in range(12)}
PYKAFKA_ORDER = [0, 3, 6, 9, 1, 10, 4, 7, 11, 2, 5, 8]

# Member ids sort as bytes: b"m-1" < b"m-10" < b"m-2" < b"m-3" < b"m-4".
MEMBERS = [b"m-2", b"m-10", b"m-1", b"m-4", b"m-3"]

RANGE = {
    1: [[0, 3, 6, 9, 1, 10, 4, 7, 11, 2, 5, 8]],
    2: [[0, 3, 6, 9, 1, 10], [4, 7, 11, 2, 5, 8]],
    3: [[0, 3, 6, 9], [1, 10, 4, 7], [11, 2, 5, 8]],
    5: [[0, 3, 6], [9, 1, 10], [4, 7], [11, 2], [5, 8]],
}
ROUNDROBIN = {
    1: [[0, 3, 6, 9, 1, 10, 4, 7, 11, 2, 5, 8]],
    2: [[0, 6, 1, 4, 11, 5], [3, 9, 10, 7, 2, 8]],
    3: [[0, 9, 4, 2], [3, 1, 7, 5], [6, 10, 11, 8]],
    5: [[0, 10, 5], [3, 4, 8], [6, 7], [9, 11], [1, 2]],
}


def _decide(decide, members, partitions=PARTITIONS):
    """``{member: set of partition ids}`` for every member, as each would decide alone."""
    return {m: {p.id for p in decide(list(members), partitions, m)} for m in members}


@pytest.mark.parametrize("decide,table", [(decide_partitions_range, RANGE),
                                          (decide_partitions_roundrobin, ROUNDROBIN)],
                         ids=["range", "roundrobin"])
@pytest.mark.parametrize("n", sorted(RANGE))
def test_matches_pykafka_tables(decide, table, n):
    members = MEMBERS[:n]
    in_order = sorted(members)
    got = _decide(decide, members)
    assert [got[m] for m in in_order] == [set(ids) for ids in table[n]]


@pytest.mark.parametrize("protocol", [RangeProtocol, RoundRobinProtocol], ids=["range", "roundrobin"])
@pytest.mark.parametrize("n", range(1, 21))
def test_every_partition_has_exactly_one_member(protocol, n):
    members = [b"member-%d" % i for i in range(n)]
    got = _decide(protocol.decide_partitions, members)
    owned = [pid for ids in got.values() for pid in ids]
    assert sorted(owned) == sorted(PARTITIONS)
    sizes = sorted(len(ids) for ids in got.values())
    assert sizes[-1] - sizes[0] <= 1
    assert sizes.count(0) == max(0, n - len(PARTITIONS))  # the extra members idle


@pytest.mark.parametrize("n", range(1, 13))
def test_range_gives_contiguous_runs_in_pykafka_order(n):
    members = sorted(b"member-%02d" % i for i in range(n))
    got = _decide(decide_partitions_range, members)
    runs = [sorted(got[m], key=PYKAFKA_ORDER.index) for m in members]
    assert [pid for run in runs for pid in run] == PYKAFKA_ORDER


def test_members_agree_whatever_order_they_list_each_other_in():
    members = [b"b", b"c", b"a"]
    first = {p.id for p in decide_partitions_range(members, PARTITIONS, b"a")}
    again = {p.id for p in decide_partitions_range(list(reversed(members)), PARTITIONS, b"a")}
    assert first == again == {0, 3, 6, 9}


def test_a_leader_change_reorders_as_in_pykafka():
    moved = dict(PARTITIONS)
    moved[0] = Partition(TOPIC, Broker(3), 0)  # 0 moves to broker 3's run: 3 6 9 1 | 10 4 7 0 ...
    got = {p.id for p in decide_partitions_range([b"a", b"b", b"c"], moved, b"a")}
    assert got == {3, 6, 9, 1}


def test_a_partition_without_leader_still_gets_one_member():
    orphan = dict(PARTITIONS)
    orphan[4] = Partition(TOPIC, None, 4)
    got = _decide(decide_partitions_roundrobin, [b"a", b"b"], orphan)
    assert sorted(got[b"a"] | got[b"b"]) == sorted(orphan) and not got[b"a"] & got[b"b"]


def test_a_member_not_in_the_group_is_an_error():
    with pytest.raises(ValueError):
        decide_partitions_range([b"a"], PARTITIONS, b"z")


def test_protocol_names_are_the_assignment_strategies():
    assert RangeProtocol.protocol_name == b"range"
    assert RoundRobinProtocol.protocol_name == b"roundrobin"
