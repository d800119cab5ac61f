"""The fault matrix on Tansu, with real processes killed for real: the broker (SIGKILL,
then restarted on the same port), a consumer process, and a member of a balanced fleet in
the middle of a rebalance.

Tansu keeps its log in memory, so a killed broker takes the messages it had acknowledged
with it: the broker scenario counts those apart (``gone_with_broker``) and holds the
producers to every message acknowledged by the broker that is still there. It forgets the
producer ids it handed out too: after the restart the idempotent producer bumps its epoch
(librdkafka does that locally) and Tansu answers UNKNOWN_PRODUCER_ID to every batch, so the
producer delivers nothing more and ``stop()`` fails, and reports, what is left. When a batch
was in flight as the broker died, its retry gets UNKNOWN_PRODUCER_ID instead, which
librdkafka cannot retry without risking a duplicate: the producer fails with a fatal error
(``produce()`` and ``stop()`` raise it), and what is left is reported failed all the same.
Which of the two comes is timing (a loaded machine has more in flight). A broker that keeps
its producer state across a restart, as Kafka does, takes the bumped epoch.

Consumers run as fleet members (tests/fleet.py): each writes a message down before it
commits, so what a killed member had processed but not committed is read again by the
next owner: duplicates are bounded by ``COMMIT_EVERY`` per member, and nothing is lost.
"""
import os
import signal
from contextlib import closing

import pytest

from pyrdk import KafkaClient
from tests.fix_kafka import make_topic, unique_name
from tests.fleet import Fleet
from tests.reliability.ledger import (PRODUCERS, FaultSchedule, Ledger, produce_side_by_side, read_log,
                                      report, report_counts)

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.timeout(300)]

PARTITIONS = 3


def test_broker_killed_and_restarted(own_broker):
    names = {kind: unique_name("rel-" + kind) for kind in PRODUCERS}

    def create_topics():
        with KafkaClient(hosts=own_broker.bootstrap_servers) as admin:
            admin.cluster.create_topics([(name, PARTITIONS, 1) for name in names.values()])

    def kill():
        os.kill(own_broker.pid, signal.SIGKILL)
        own_broker.process.wait(10)

    def restart():
        own_broker.stop()
        own_broker.start()
        create_topics()  # memory storage: the topics went with the broker

    create_topics()
    schedule = FaultSchedule([(2.0, "SIGKILL broker", kill), (4.0, "restart broker", restart)])
    with KafkaClient(hosts=own_broker.bootstrap_servers, socket_timeout_ms=30000) as client, \
            closing(schedule):
        topics = {kind: client.topics[name] for kind, name in names.items()}
        ledgers = produce_side_by_side(topics, 8, schedule, pending_timeout_ms=10000, idempotent_fatal_ok=True)
        restarted = schedule.times["restart broker"]
        for kind, ledger in ledgers.items():
            counts = ledger.counts(read_log(topics[kind], ledger.delivered_since(restarted)), since=restarted)
            report_counts("tansu: broker SIGKILLed and restarted, %s producer" % kind, counts,
                          gone_with_broker=ledger.delivered_before(restarted),
                          failures=ledger.failure_kinds(),
                          fatal=getattr(ledger.fatal, "name", None) or "-")
            assert counts.produced > 0 and counts.silent == 0 and counts.lost == 0
            assert ledger.reported_twice == 0
            if kind == "idempotent":
                assert counts.duplicated == 0


# -- consumers -------------------------------------------------------------------------------------

COMMIT_EVERY = 50
DELAY_MS = 5  # per message processed: a fault lands mid-stream
GROUP = {"managed": True, "session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
         "max_poll_interval_ms": 8000}


def produce_numbered(client, scenario, name, count):
    """``count`` numbered messages into a new topic, by an idempotent producer whose counts
    are checked and printed; the topic."""
    topic = make_topic(client, name, PARTITIONS)
    ledger = Ledger("numbered")
    producer = topic.get_producer(delivery_reports=True, linger_ms=5, enable_idempotence=True,
                                  required_acks=-1)
    for i in range(count):
        producer.produce(ledger.value(i), partition_key=b"%d" % i)
        ledger.produced += 1
        if i % 500 == 0:
            ledger.drain(producer)
    producer.stop()
    ledger.drain(producer)
    counts = ledger.counts(read_log(topic, count))
    report_counts(scenario + ", idempotent producer", counts, failures=ledger.failure_kinds())
    assert counts.delivered == count and counts.in_log == count
    assert counts.lost == counts.duplicated == counts.silent == 0
    return topic


def numbered_fleet(kafka_hosts, topic, tmp_path):
    """A Fleet of managed consumers on ``topic`` that writes each message down at once."""
    return Fleet(kafka_hosts, topic.name.decode(), unique_name("group"), GROUP, commit_every=COMMIT_EVERY,
                 delay_ms=DELAY_MS, workdir=str(tmp_path / "fleet"), flush_each=True)


def consumer_counts(scenario, fleet, count, members):
    """Check and print what the fleet processed: each of the ``count`` messages at least once,
    at most ``COMMIT_EVERY`` repeats per member that ever ran."""
    processed = fleet.processed()
    distinct = fleet.distinct_processed()
    lost = count - len(distinct)
    duplicated = len(processed) - len(distinct)
    bound = COMMIT_EVERY * members
    report(scenario + ", consumers", produced=count, processed=len(processed), distinct=len(distinct),
           lost=lost, duplicated=duplicated, duplicate_bound=bound, members=members)
    assert lost == 0
    assert duplicated <= bound


def test_consumer_process_killed(client, kafka_hosts, tmp_path):
    count = 1500
    scenario = "tansu: consumer process SIGKILLed"
    topic = produce_numbered(client, scenario, unique_name("rel-consumer"), count)
    with numbered_fleet(kafka_hosts, topic, tmp_path) as fleet:
        victim = fleet.start_member()
        fleet.wait_processed(count // 3 + COMMIT_EVERY // 2)  # between two commits
        fleet.kill(victim)
        successor = fleet.start_member()
        fleet.wait_processed(count)
        consumer_counts(scenario, fleet, count, members=2)
        assert 0 < len(victim.processed()) < count and len(successor.processed()) > 0
        assert fleet.violations == []


def test_fleet_member_killed_during_a_rebalance(client, kafka_hosts, tmp_path):
    count = 3000
    scenario = "tansu: fleet member SIGKILLed mid-rebalance"
    topic = produce_numbered(client, scenario, unique_name("rel-fleet"), count)
    with numbered_fleet(kafka_hosts, topic, tmp_path) as fleet:
        first = fleet.start(3)
        fleet.wait_balanced(range(PARTITIONS))
        fleet.wait_processed(count // 4)
        fleet.start_member()  # the group rebalances to let it in...
        held = {m.name: m.partitions for m in first}
        fleet.wait_until(lambda owners: any(m.partitions != held[m.name] for m in first),
                         "a member's partitions changed (the rebalance began)")
        fleet.kill(first[0])  # ...and a member dies in the middle of it
        fleet.wait_processed(count)
        consumer_counts(scenario, fleet, count, members=4)
        assert 0 < len(first[0].processed()) < count
        assert fleet.violations == []
