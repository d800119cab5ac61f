"""Partitioners: pykafka's placement rules, stable hashing, and murmur2 placement that
matches the Java client and confluent-kafka (checked against a real broker)."""
import collections
import hashlib
import json
import os
import random
import subprocess
import sys

import pytest

from pyrdk.partition import Partition
from pyrdk.rd.topic import murmur2_partition
from pyrdk.partitioners import (BasePartitioner, GroupHashingPartitioner, HashingPartitioner,
                                Murmur2Partitioner, RandomPartitioner, hashing_partitioner,
                                murmur2_partitioner, random_partitioner)
from tests.fix_kafka import make_topic
from tests.test_producer import read_back

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = [b"", b"a", b"key-1", b"key-2", b"user:42", b"\x00\xff\x10", "ünïcødé".encode(), b"k" * 300]


def partitions(n, shuffled=True):
    """``n`` real Partition objects, in a scrambled order (partitioners must sort them)."""
    parts = [Partition(None, i, None, [], []) for i in range(n)]
    if shuffled:
        random.Random(n).shuffle(parts)
    return parts


def sha1_partition(key, n):
    """pykafka's HashingPartitioner formula, over partitions sorted by id."""
    return abs(int(hashlib.sha1(key).hexdigest(), 16)) % n


def java_partition(murmur2_hash, n):
    """Java's ``Utils.toPositive(Utils.murmur2(key)) % n`` from a signed 32-bit hash."""
    return (murmur2_hash & 0x7FFFFFFF) % n


# -- RandomPartitioner ---------------------------------------------------------------------------

def test_random_partitioner_spreads_over_all_partitions():
    parts = partitions(5)
    for partitioner in (RandomPartitioner(), random_partitioner):
        chosen = collections.Counter(partitioner(parts, None).id for _ in range(500))
        assert set(chosen) == set(range(5))
        assert max(chosen.values()) - min(chosen.values()) <= 1  # round robin: even spread


def test_random_partitioner_ignores_the_key():
    parts = partitions(3)
    chosen = {RandomPartitioner()(parts, b"same-key").id for _ in range(30)}
    assert chosen == {0, 1, 2}


def test_base_partitioner_is_abstract():
    with pytest.raises(NotImplementedError):
        BasePartitioner()(partitions(2), b"k")


@pytest.mark.parametrize("partitioner", [RandomPartitioner(), HashingPartitioner(),
                                         Murmur2Partitioner(), GroupHashingPartitioner(hash)],
                         ids=["random", "hashing", "murmur2", "group"])
def test_no_partitions_is_a_value_error_not_a_crash(partitioner):
    # Murmur2 used to divide by zero in C (SIGFPE, the interpreter died).
    with pytest.raises(ValueError):
        partitioner([], b"key")


# -- HashingPartitioner --------------------------------------------------------------------------

def test_hashing_partitioner_is_pykafkas_sha1_formula():
    for n in (1, 2, 3, 4, 7, 16):
        parts = partitions(n)
        for key in KEYS:
            assert hashing_partitioner(parts, key).id == sha1_partition(key, n)
            assert HashingPartitioner()(parts, key).id == sha1_partition(key, n)


def test_hashing_partitioner_same_key_same_partition_whatever_the_order():
    keys = [b"key-%d" % i for i in range(200)]
    a = [HashingPartitioner()(partitions(8, shuffled=True), k).id for k in keys]
    b = [HashingPartitioner()(partitions(8, shuffled=False), k).id for k in keys]
    assert a == b
    assert len(set(a)) == 8  # and the keys do spread


def test_hashing_partitioner_custom_hash_func():
    parts = partitions(4)
    p = HashingPartitioner(hash_func=lambda key: len(key))
    assert [p(parts, b"x" * i).id for i in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]
    # abs() of a negative hash, as pykafka
    assert HashingPartitioner(hash_func=lambda key: -5)(parts, b"k").id == 1


_SUBPROCESS = """
import json, sys
sys.path.insert(0, %r)
from pyrdk.partition import Partition
from pyrdk.partitioners import HashingPartitioner
parts = [Partition(None, i, None, [], []) for i in (5, 3, 1, 0, 2, 4)]
keys = [bytes.fromhex(k) for k in json.loads(sys.argv[1])]
print(json.dumps([HashingPartitioner()(parts, k).id for k in keys] + [hash(b"salted") & 0xffff]))
"""


def test_hashing_partitioner_is_stable_across_processes():
    keys = KEYS + [b"key-%d" % i for i in range(100)]
    results = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", _SUBPROCESS % ROOT,
                              json.dumps([k.hex() for k in keys])],
                             env=env, capture_output=True, text=True, check=True).stdout
        results.append(json.loads(out))
    (ids_1, salt_1), (ids_2, salt_2) = [(r[:-1], r[-1]) for r in results]
    assert salt_1 != salt_2, "the two processes should have different str/bytes hash seeds"
    assert ids_1 == ids_2
    assert ids_1 == [sha1_partition(k, 6) for k in keys]


def test_hashing_partitioner_refuses_none_key():
    with pytest.raises(ValueError):
        HashingPartitioner()(partitions(3), None)
    with pytest.raises(ValueError):
        hashing_partitioner(partitions(3), None)


@pytest.mark.parametrize("key", ["user:42", 42, 4.2])
def test_hashing_partitioner_names_a_key_that_is_not_bytes(key):
    with pytest.raises(TypeError, match="HashingPartitioner hashes bytes keys, not %s" % type(key).__name__):
        hashing_partitioner(partitions(3), key)
    assert hashing_partitioner(partitions(3), bytearray(b"user:42")).id == sha1_partition(b"user:42", 3)


def test_a_hash_func_that_cannot_be_called_is_refused_when_made():
    for make in (lambda: HashingPartitioner(b"sha1"), lambda: GroupHashingPartitioner("sha1", 2)):
        with pytest.raises(TypeError, match="hash_func must be a callable bytes -> int"):
            make()


# -- GroupHashingPartitioner ---------------------------------------------------------------------

def _sha1(key):
    return int(hashlib.sha1(key).hexdigest(), 16)


@pytest.mark.parametrize("group_size", [1, 2, 3, 8])
def test_group_hashing_partitioner_uses_a_group_of_group_size_partitions(group_size):
    n = 8
    parts = partitions(n)
    p = GroupHashingPartitioner(_sha1, group_size=group_size)
    for key in (b"a", b"bb", b"user:42", b"z" * 50):
        chosen = {p(parts, key).id for _ in range(400)}
        expected = {(_sha1(key) + r) % n for r in range(group_size)}  # pykafka's formula
        assert chosen <= expected
        assert len(chosen) <= group_size
        # 400 draws from group_size choices miss one with probability < 8 * (7/8)**400
        assert chosen == expected


def test_group_hashing_partitioner_argument_errors():
    with pytest.raises(ValueError):
        GroupHashingPartitioner(None)
    with pytest.raises(ValueError):
        GroupHashingPartitioner(_sha1, group_size=0)
    with pytest.raises(ValueError):
        GroupHashingPartitioner(_sha1, group_size=-3)
    with pytest.raises(ValueError):  # more than there are partitions
        GroupHashingPartitioner(_sha1, group_size=5)(partitions(4), b"k")
    with pytest.raises(ValueError):
        GroupHashingPartitioner(_sha1, group_size=2)(partitions(4), None)
    for group_size in ("2", 2.0, None):
        with pytest.raises(TypeError, match="group_size must be an int >= 1"):
            GroupHashingPartitioner(_sha1, group_size=group_size)


# -- Murmur2Partitioner --------------------------------------------------------------------------

# Java's Utils.murmur2 (kafka-clients UtilsTest) and librdkafka's unittest_murmur2.
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"kafka": 0xd067cf64 - (1 << 32),
    b"giberish123456789": 0x8f552b0c - (1 << 32),
    b"1234": 0x9fc97b14 - (1 << 32),
    b"234": 0xe7c009ca - (1 << 32),
    b"34": 0x873930da - (1 << 32),
    b"4": 0x5a4b5ca1,
    b"PreAmbleWillBeRemoved,ThePrePartThatIs": 0x78424f1c,
    b"": 0x106e08d9,
}


def test_murmur2_partitioner_matches_the_java_client():
    for n in (1, 2, 3, 4, 7, 10, 12, 100):
        parts = partitions(n)
        for key, h in JAVA_MURMUR2.items():
            assert Murmur2Partitioner()(parts, key).id == java_partition(h, n), (key, n)
            assert murmur2_partitioner(parts, key).id == java_partition(h, n)


def test_murmur2_partitioner_none_key_spreads():
    parts = partitions(4)
    assert {Murmur2Partitioner()(parts, None).id for _ in range(40)} == {0, 1, 2, 3}


def test_murmur2_partitioner_key_types():
    parts = partitions(10)
    assert Murmur2Partitioner()(parts, bytearray(b"kafka")).id == java_partition(JAVA_MURMUR2[b"kafka"], 10)
    with pytest.raises(TypeError):
        Murmur2Partitioner()(parts, "kafka")


# -- against a broker ----------------------------------------------------------------------------

def _read_partitions(hosts, topic_name, n, num_partitions):
    """Read ``n`` messages back with confluent-kafka: ``[(partition, offset, key, value)]``."""
    return [(m.partition(), m.offset(), m.key(), m.value())
            for m in read_back(hosts, topic_name, n, num_partitions)]


@pytest.mark.kafka
def test_murmur2_partitioner_places_keys_where_confluent_kafka_does(client, kafka_hosts, topic_name):
    import confluent_kafka as ck
    num_partitions = 6
    keys = [b"key-%d" % i for i in range(60)] + list(JAVA_MURMUR2)
    ck_topic, py_topic = topic_name + "-ck", topic_name + "-py"
    make_topic(client, ck_topic, num_partitions)
    topic = make_topic(client, py_topic, num_partitions)

    placed = {}

    def on_delivery(err, msg):
        assert err is None, err
        placed[msg.key()] = msg.partition()

    producer = ck.Producer({"bootstrap.servers": kafka_hosts, "partitioner": "murmur2",
                            "linger.ms": 5})
    for key in keys:
        producer.produce(ck_topic, value=b"v", key=key, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert len(placed) == len(keys)

    with topic.get_producer(partitioner=Murmur2Partitioner(), linger_ms=5) as producer:
        msgs = [producer.produce(b"v", partition_key=key) for key in keys]
    assert {m.partition_key: m.partition_id for m in msgs} == placed
    # and the broker has them there
    back = _read_partitions(kafka_hosts, py_topic, len(keys), num_partitions)
    assert {key: p for p, _, key, _ in back} == placed


@pytest.mark.kafka
def test_random_partitioner_uses_every_partition_of_a_topic(topic, kafka_hosts, topic_name):
    with topic.get_producer(linger_ms=5) as producer:  # default partitioner
        msgs = [producer.produce(b"m%d" % i) for i in range(40)]
    assert collections.Counter(m.partition_id for m in msgs) == {0: 10, 1: 10, 2: 10, 3: 10}
    back = _read_partitions(kafka_hosts, topic_name, 40, 4)
    assert collections.Counter(p for p, _, _, _ in back) == {0: 10, 1: 10, 2: 10, 3: 10}


@pytest.mark.kafka
@pytest.mark.parametrize("partitioner", [hashing_partitioner, Murmur2Partitioner(),
                                         GroupHashingPartitioner(_sha1, group_size=1)],
                         ids=["hashing", "murmur2", "group1"])
def test_keyed_messages_stay_in_order_per_key(client, kafka_hosts, topic_name, partitioner):
    topic = make_topic(client, topic_name, 4)
    keys = [b"user-%d" % i for i in range(10)]
    sent = []
    with topic.get_producer(partitioner=partitioner, linger_ms=2, min_queued_messages=50) as producer:
        for seq in range(60):
            for key in keys:
                sent.append(producer.produce(b"%s:%d" % (key, seq), partition_key=key))
    back = _read_partitions(kafka_hosts, topic_name, len(sent), 4)
    assert len(back) == len(sent)
    by_key = collections.defaultdict(list)
    partitions_of = collections.defaultdict(set)
    for p, offset, key, value in sorted(back, key=lambda r: (r[0], r[1])):
        by_key[key].append(value)
        partitions_of[key].add(p)
    for key in keys:
        assert partitions_of[key] == {sent[keys.index(key)].partition_id}
        assert by_key[key] == [b"%s:%d" % (key, seq) for seq in range(60)]
    if partitioner is hashing_partitioner:
        for key in keys:
            assert partitions_of[key] == {sha1_partition(key, 4)}


@pytest.mark.kafka
def test_hashing_partitioner_none_key_fails_produce_and_queues_nothing(topic):
    with topic.get_producer(partitioner=hashing_partitioner, linger_ms=5) as producer:
        with pytest.raises(ValueError):
            producer.produce(b"no key")
        assert len(producer) == 0
        msg = producer.produce(b"keyed", partition_key=b"k")
    assert msg.offset >= 0 and msg.partition_id == sha1_partition(b"k", 4)


# -- many partitions ------------------------------------------------------------------------------

def _counting_lt(monkeypatch):
    """Count the Partition comparisons (the sorts) the partitioners make."""
    count = [0]
    lt = Partition.__lt__

    def counted(self, other):
        count[0] += 1
        return lt(self, other)
    monkeypatch.setattr(Partition, "__lt__", counted)
    return count


@pytest.mark.mock
@pytest.mark.parametrize("make", [HashingPartitioner, Murmur2Partitioner,
                                  lambda: GroupHashingPartitioner(lambda k: int(hashlib.sha1(k).hexdigest(), 16))])
def test_a_producer_does_not_sort_the_partitions_at_every_keyed_message(monkeypatch, mock_cluster, make):
    """A producer hands its partitioner the topic's partitions, sorted by id, at every
    message: the hashing partitioners skip their own sort then (sorting 5000 partitions per
    keyed message made produce() 100 times slower), and choose as they do when called."""
    from pyrdk import KafkaClient
    partitioner = make()
    mock_cluster.create_topic("many", 1000, 1)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers)
    try:
        topic = client.topics["many"]
        by_id = sorted(topic.partitions.values())
        keys = [b"key-%d" % i for i in range(200)]
        with topic.get_producer(partitioner=partitioner, linger_ms=5) as producer:
            count = _counting_lt(monkeypatch)
            sent = [producer.produce(b"v", partition_key=k) for k in keys]
            assert count[0] == 0  # no sort, not 200
        for key, msg in zip(keys, sent):
            if isinstance(partitioner, Murmur2Partitioner):
                assert msg.partition_id == murmur2_partition(key, 1000)
            elif isinstance(partitioner, HashingPartitioner):
                assert msg.partition_id == sha1_partition(key, 1000)
            else:
                assert 0 <= msg.partition_id < 1000
        shuffled = partitions(1000)  # called directly, a partitioner still sorts what it is given
        assert partitioner(shuffled, keys[0]).id == sorted(shuffled)[partitioner(by_id, keys[0]).id].id or \
            isinstance(partitioner, GroupHashingPartitioner)
    finally:
        client.close()
