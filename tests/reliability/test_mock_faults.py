"""The fault matrix on librdkafka's mock cluster (3 brokers, topics replicated 3 times):
transient Produce errors over a run, a partition leader moved mid-run, a broker down and up.

Two producers run side by side through each fault, each on its own topic: an idempotent one
(``enable_idempotence=True``, ``required_acks=-1``), which must lose nothing and write
nothing twice, and a plain one (``required_acks=1``, no idempotence), which must leave no
message unreported. Both retry far more than the faults last (``max_retries``), so every
message must end delivered, with one exception: librdkafka takes NETWORK_EXCEPTION (13) in
a Produce response as permanent and fails the batch (reported, never silent). A real broker
never answers 13 (clients make it up for a dropped connection, which librdkafka sees as a
transport failure and retries: the broker down-and-up scenario), so there the failures
must all be NETWORK_EXCEPTION, and the other injected codes retried to delivery.
"""
from contextlib import closing

import pytest

from pyrdk import KafkaClient
from pyrdk.rd.mock import ApiKey
from tests.fix_kafka import unique_name
from tests.reliability.ledger import PRODUCERS, FaultSchedule, produce_side_by_side, read_log, report_counts

pytestmark = [pytest.mark.mock, pytest.mark.slow, pytest.mark.timeout(300)]

NOT_LEADER_FOR_PARTITION = 6
REQUEST_TIMED_OUT = 7
NETWORK_EXCEPTION = 13
PARTITIONS = 3
RUN_S = 6


def run_producers(cluster, scenario, steps):
    """Both producers through the faults of ``steps(topic names)`` (one FaultSchedule for
    the two); their counts, printed."""
    results = {}
    with KafkaClient(hosts=cluster.bootstrap_servers, socket_timeout_ms=60000) as client:
        topics = {}
        for kind in PRODUCERS:
            name = unique_name("rel-" + kind)
            cluster.create_topic(name, PARTITIONS, 3)
            topics[kind] = client.topics[name]
        schedule = FaultSchedule(steps([t.name.decode() for t in topics.values()]))
        with closing(schedule):
            ledgers = produce_side_by_side(topics, RUN_S, schedule)
        for kind, ledger in ledgers.items():
            counts = ledger.counts(read_log(topics[kind], len(ledger.delivered)))
            report_counts("mock: %s, %s producer" % (scenario, kind), counts,
                          faults=len(schedule.log), failures=ledger.failure_kinds())
            results[kind] = (counts, ledger)
    return results


def assert_counts(results, failures=""):
    """0 lost, 0 duplicated and 0 silent for the idempotent producer, 0 lost and 0 silent
    for the plain one; no failure but of the kind ``failures`` names."""
    idem, ledger = results["idempotent"]
    assert idem.produced > 0 and idem.silent == 0 and ledger.reported_twice == 0
    assert idem.lost == 0 and idem.duplicated == 0
    assert idem.in_log == idem.delivered
    plain, plain_ledger = results["plain"]
    assert plain.produced > 0 and plain.silent == 0 and plain.lost == 0
    assert plain_ledger.reported_twice == 0
    for lg in (ledger, plain_ledger):
        assert {failure.name for failure in lg.failed.values()} <= ({failures} if failures else set())


def test_transient_produce_errors_over_a_run(mock_cluster):
    def inject():
        mock_cluster.push_request_errors(ApiKey.Produce, NOT_LEADER_FOR_PARTITION, REQUEST_TIMED_OUT,
                                         NETWORK_EXCEPTION)

    steps = [(0.5 + 0.25 * i, "Produce errors", inject) for i in range(20)]
    assert_counts(run_producers(mock_cluster, "transient Produce errors", lambda names: steps),
                  failures="NETWORK_EXCEPTION")


def test_leader_moved_mid_run(mock_cluster):
    def steps(names):
        moves = []
        for step in range(6):
            for partition in range(PARTITIONS):
                leader = (partition + step + 1) % 3 + 1
                moves.append((1.0 + 0.7 * step, "partition %d leader -> %d" % (partition, leader),
                              _mover(mock_cluster, names, partition, leader)))
        return moves

    assert_counts(run_producers(mock_cluster, "leader moved mid-run", steps))


def _mover(cluster, names, partition, leader):
    def move():
        for name in names:
            cluster.set_partition_leader(name, partition, leader)
    return move


def test_broker_down_and_up(mock_cluster):
    steps = [(1.0, "broker 1 down", lambda: mock_cluster.broker_down(1)),
             (3.0, "broker 1 up", lambda: mock_cluster.broker_up(1)),
             (4.0, "broker 2 down", lambda: mock_cluster.broker_down(2)),
             (6.0, "broker 2 up", lambda: mock_cluster.broker_up(2))]
    assert_counts(run_producers(mock_cluster, "broker down and up", lambda names: steps))
