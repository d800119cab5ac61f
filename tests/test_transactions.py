"""The transactional Producer: on Tansu (whose log is read back with its transaction markers,
tests/kafka_log.py), and on librdkafka's mock cluster for coordinator errors and fencing."""
import logging
import subprocess
import sys
import time

import pytest

from pyrdk import KafkaClient
from pyrdk.exceptions import (ConfigurationError, KafkaException, KafkaTimeoutError, ProducerFenced,
                              ProducerStoppedException, TransactionError, TransactionStateError)
from pyrdk._ffi import lib
from pyrdk.rd import transaction
from pyrdk.rd.mock import ApiKey
from tests.fix_kafka import make_topic, tansu_gap
from tests.kafka_log import committed_records, read_partition
from tests.rd.util import default_sigint

PATIENCE_MS = 60000
GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 6000}
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
CONCURRENT_TRANSACTIONS = 51
MSG_SIZE_TOO_LARGE = 10
PRODUCER_FENCED = 90


def log_of(client, topic_name, partition=0):
    """``(committed values, open values, every value)`` of a partition, from its log."""
    leader = client.topics[topic_name].partitions[partition].leader
    batches = read_partition(leader.host, leader.port, topic_name, partition)
    committed, still_open = committed_records(batches)
    everything = [r.value for b in batches for r in b[3]]
    return [r.value for r in committed], [r.value for r in still_open], everything


def read_values(topic, isolation_level, count=None, timeout_ms=3000):
    consumer = topic.get_simple_consumer(isolation_level=isolation_level, consumer_timeout_ms=timeout_ms)
    try:
        out = []
        for message in consumer:
            out.append(message.value)
            if count is not None and len(out) == count:
                break
        return out
    finally:
        consumer.stop()


# -- on Tansu --------------------------------------------------------------------------------------

@pytest.mark.kafka
def test_what_a_transaction_produced_is_committed_with_it_or_not_at_all(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    producer = topic.get_producer(transactional_id=topic_name, linger_ms=5)
    try:
        with producer.transaction():
            committed = [producer.produce(b"c%d" % i) for i in range(100)]
        # Delivered, with their offsets, when the commit returns.
        assert all(m.offset >= 0 for m in committed)
        producer.begin_transaction()
        for i in range(50):
            producer.produce(b"a%d" % i)
        producer.flush()  # in the log before the abort
        producer.abort_transaction()
        with pytest.raises(RuntimeError):
            with producer.transaction():
                producer.produce(b"raised")
                producer.flush()
                raise RuntimeError("the block failed")
        producer.begin_transaction()
        producer.produce(b"open")
        producer.flush()
        values, still_open, everything = log_of(client, topic_name)
        assert values == [b"c%d" % i for i in range(100)]
        assert still_open == [b"open"]
        assert [b"a%d" % i for i in range(50)] + [b"raised"] == [v for v in everything if v[:1] in b"ar"]
        # A read_committed reader stops before the open transaction (the last stable offset).
        assert b"open" not in read_values(topic, "read_committed")
        producer.abort_transaction()
    finally:
        producer.stop()


@pytest.mark.kafka
@tansu_gap("Fetch responses list no aborted transactions, so read_committed readers see aborted records")
def test_read_committed_skips_aborted_transactions(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    with topic.get_producer(transactional_id=topic_name, linger_ms=5) as producer:
        producer.begin_transaction()
        producer.produce(b"aborted")
        producer.flush()
        producer.abort_transaction()
        with producer.transaction():
            producer.produce(b"committed")
    assert read_values(topic, "read_committed") == [b"committed"]
    assert read_values(topic, "read_uncommitted") == [b"aborted", b"committed"]


@pytest.mark.kafka
def test_produce_outside_a_transaction_and_misuse_are_refused(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    with topic.get_producer(transactional_id=topic_name) as producer:
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            producer.produce(b"outside")
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            producer.produce_batch([b"outside"])
        with pytest.raises(TypeError, match="group_metadata"):
            producer.send_offsets_to_transaction(object())
        producer.begin_transaction()
        with pytest.raises(TransactionStateError):
            producer.begin_transaction()
        producer.abort_transaction()
    with topic.get_producer() as plain:
        with pytest.raises(TransactionStateError, match="transactional_id"):
            plain.begin_transaction()
    with pytest.raises(TypeError, match="transactional_id"):
        topic.get_producer(transactional_id=b"bytes")
    with pytest.raises(ValueError, match="isolation_level"):
        topic.get_simple_consumer(isolation_level="committed")


@pytest.mark.kafka
def test_a_transaction_timeout_librdkafka_refuses_is_named_by_the_arguments(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    # The client's socket_timeout_ms is 30000: librdkafka wants transaction.timeout.ms >= 29900.
    with pytest.raises(ConfigurationError, match=r"transaction_timeout_ms=5000 .* socket_timeout_ms=30000"):
        topic.get_producer(transactional_id=topic_name, transaction_timeout_ms=5000)
    with pytest.raises(ConfigurationError, match=r"transaction_timeout_ms=5000 .* linger_ms=5000"):
        topic.get_producer(transactional_id=topic_name, transaction_timeout_ms=5000,
                           rdkafka_config={"socket.timeout.ms": 5000})
    with pytest.raises(ConfigurationError, match=r"rdkafka_config\['transaction.timeout.ms'\]=5000 .* socket_timeout"):
        topic.get_producer(transactional_id=topic_name, rdkafka_config={"transaction.timeout.ms": 5000})
    topic.get_producer(transactional_id=topic_name, transaction_timeout_ms=5000, linger_ms=5,
                       rdkafka_config={"socket.timeout.ms": 5000}).stop()


@pytest.mark.kafka
def test_stop_aborts_an_open_transaction(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    producer = topic.get_producer(transactional_id=topic_name, linger_ms=5)
    producer.begin_transaction()
    producer.produce(b"never committed")
    producer.flush()
    producer.stop()  # nothing raised: the purged or aborted message is not a failure to report
    with pytest.raises(ProducerStoppedException):
        producer.begin_transaction()
    values, still_open, everything = log_of(client, topic_name)
    assert values == [] and still_open == [] and everything == [b"never committed"]



@pytest.mark.kafka
def test_a_dropped_producer_aborts_its_open_transaction(client, topic_name, caplog):
    """A transactional producer let go of without stop() is stopped by its poller thread as
    stop() does: the open transaction is aborted (not left for the coordinator's timeout), and
    its messages, never meant to be written, are not logged as lost."""
    import gc
    topic = make_topic(client, topic_name, 1)
    producer = topic.get_producer(transactional_id=topic_name, linger_ms=1000)
    producer.begin_transaction()
    producer.produce(b"never committed")  # lingers: the abort purges it
    poller = producer._poller
    del producer
    gc.collect()
    poller.join(PATIENCE_MS / 1000.0)
    assert not poller.is_alive()
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "pyrdk.producer"]
    assert said == [(logging.WARNING, "a transactional producer of topic %s was dropped without stop(): its open "
                     "transaction is aborted" % topic_name)]
    values, still_open, _ = log_of(client, topic_name)
    assert values == [] and still_open == []

@pytest.mark.kafka
def test_offsets_sent_to_a_transaction_count_only_when_it_commits(client, topic_name, group_name):
    source = make_topic(client, topic_name, 1)
    sink = make_topic(client, topic_name + "-out", 1)
    with source.get_producer(linger_ms=5) as producer:
        for i in range(10):
            producer.produce(b"in%d" % i)
    consumer = source.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_MS, **GROUP)
    producer = sink.get_producer(transactional_id=topic_name, linger_ms=5)
    try:
        first = [consumer.consume() for _ in range(4)]
        with producer.transaction():
            for m in first:
                producer.produce(m.value.upper())
            producer.send_offsets_to_transaction(consumer)  # held offset 3 + 1
        assert dict((pid, r.offset) for pid, r in consumer.fetch_offsets()) == {0: 4}
        more = [consumer.consume() for _ in range(3)]
        producer.begin_transaction()
        producer.produce(more[0].value)
        producer.send_offsets_to_transaction([(source.partitions[0], 7)], consumer.group_metadata())
        producer.abort_transaction()
        assert dict((pid, r.offset) for pid, r in consumer.fetch_offsets()) == {0: 4}
        with producer.transaction():
            producer.produce(b"IN6")
            producer.send_offsets_to_transaction([(topic_name, 0, 7)], consumer.group_metadata())
        assert dict((pid, r.offset) for pid, r in consumer.fetch_offsets()) == {0: 7}
        with pytest.raises(ValueError, match="offset"):
            producer.send_offsets_to_transaction([(source.partitions[0], -1)], consumer.group_metadata())
    finally:
        producer.stop()
        consumer.stop()
    assert log_of(client, topic_name + "-out")[0] == [b"IN0", b"IN1", b"IN2", b"IN3", b"IN6"]


@pytest.mark.kafka
@tansu_gap("after an aborted transaction that sent offsets, a transaction that produces nothing does "
           "not commit the offsets sent to it")
def test_a_transaction_of_offsets_alone_commits_them(client, topic_name, group_name):
    source = make_topic(client, topic_name, 1)
    with source.get_producer(linger_ms=5) as producer:
        producer.produce(b"in")
    consumer = source.get_balanced_consumer(group_name, managed=True, consumer_timeout_ms=PATIENCE_MS, **GROUP)
    producer = source.get_producer(transactional_id=topic_name)
    try:
        assert consumer.consume().value == b"in"
        producer.begin_transaction()
        producer.send_offsets_to_transaction(consumer)
        producer.abort_transaction()
        with producer.transaction():
            producer.send_offsets_to_transaction(consumer)
        assert dict((pid, r.offset) for pid, r in consumer.fetch_offsets()) == {0: 1}
    finally:
        producer.stop()
        consumer.stop()


# -- on librdkafka's mock cluster ------------------------------------------------------------------

@pytest.fixture
def mock_topic(mock_cluster):
    mock_cluster.create_topic("txn", 2, 3)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=5000)
    yield client.topics["txn"]
    client.close()


@pytest.mark.mock
def test_coordinator_errors_are_retried_and_the_transaction_commits(mock_cluster, mock_topic):
    producer = mock_topic.get_producer(transactional_id="coord", linger_ms=5)
    try:
        mock_cluster.push_request_errors(ApiKey.FindCoordinator, COORDINATOR_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE)
        mock_cluster.push_request_errors(ApiKey.InitProducerId, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS)
        producer.init_transactions(30)
        mock_cluster.push_request_errors(ApiKey.AddPartitionsToTxn, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS)
        mock_cluster.push_request_errors(ApiKey.EndTxn, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)
        with producer.transaction(timeout=30):
            messages = [producer.produce(b"m%d" % i) for i in range(20)]
        assert all(m.offset >= 0 for m in messages)
    finally:
        producer.stop()


@pytest.mark.mock
def test_the_report_of_a_message_an_abort_purged_says_the_transaction_was_aborted(mock_topic):
    """librdkafka's abort purges the messages not yet sent: their delivery reports say why,
    where they said only "Local: Purged in queue"."""
    with mock_topic.get_producer(transactional_id="purged", linger_ms=20000, delivery_reports=True) as producer:
        producer.begin_transaction()
        msg = producer.produce(b"never sent")
        producer.abort_transaction()
        reported, exc = producer.get_delivery_report(timeout=60)
        assert reported is msg and "the transaction was aborted before the message was delivered" in str(exc)


@pytest.mark.mock
def test_a_failed_delivery_makes_the_commit_abortable_and_the_context_manager_aborts(mock_cluster, mock_topic):
    producer = mock_topic.get_producer(transactional_id="abortable", linger_ms=5)
    try:
        producer.init_transactions(30)
        mock_cluster.push_request_errors(ApiKey.Produce, *[MSG_SIZE_TOO_LARGE] * 10)
        with pytest.raises(KafkaException) as info:
            with producer.transaction(timeout=30):
                producer.produce(b"refused")
        assert info.value.txn_requires_abort and not info.value.fatal
        mock_cluster.clear_request_errors(ApiKey.Produce)
        with producer.transaction(timeout=30):  # aborted: the producer goes on
            ok = producer.produce(b"accepted")
        assert ok.offset >= 0
    finally:
        producer.stop()


@pytest.mark.mock
def test_a_fenced_producer_raises_a_fatal_error_and_still_stops(mock_cluster, mock_topic):
    producer = mock_topic.get_producer(transactional_id="fenced", linger_ms=5)
    try:
        producer.init_transactions(30)
        mock_cluster.push_request_errors(ApiKey.EndTxn, PRODUCER_FENCED)
        with pytest.raises(ProducerFenced) as info:
            with producer.transaction(timeout=30):
                producer.produce(b"zombie")
        assert info.value.fatal and isinstance(info.value, TransactionError)
        with pytest.raises(KafkaException) as again:  # nothing more: the error is fatal
            producer.begin_transaction()
        assert again.value.fatal
    finally:
        producer.stop()  # a fenced producer still stops


@pytest.mark.mock
def test_another_producers_fatal_error_through_a_transaction_block_aborts_it_and_the_producer_goes_on(mock_cluster):
    """Two topics, two producers, one transaction block inside the other: the inner one is
    fenced; the outer one is not, so its transaction is aborted and it goes on."""
    for name in ("outer", "inner"):
        mock_cluster.create_topic(name, 1, 1)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=5000)
    outer = client.topics["outer"].get_producer(transactional_id="outer", linger_ms=5)
    inner = client.topics["inner"].get_producer(transactional_id="inner", linger_ms=5)
    try:
        outer.init_transactions(30)
        inner.init_transactions(30)
        mock_cluster.push_request_errors(ApiKey.EndTxn, PRODUCER_FENCED)  # the first EndTxn: the inner commit
        with pytest.raises(ProducerFenced):
            with outer.transaction(timeout=30):
                outer.produce(b"aborted")
                with inner.transaction(timeout=30):
                    inner.produce(b"fenced")
        with outer.transaction(timeout=30):  # not refused as if the outer producer were fenced
            after = outer.produce(b"after")
        assert after.offset >= 0
    finally:
        outer.stop()
        inner.stop()
        client.close()


@pytest.mark.mock
def test_a_commit_or_abort_that_timed_out_is_finished_not_left_blocking_the_next_transaction(
        mock_cluster, mock_topic):
    mock_cluster.set_coordinator("transaction", "slow", 1)
    producer = mock_topic.get_producer(transactional_id="slow", linger_ms=5)
    try:
        producer.init_transactions(30)
        mock_cluster.set_broker_rtt(1, 3000)
        with pytest.raises(KafkaTimeoutError) as info:
            with producer.transaction(timeout=0.5):
                message = producer.produce(b"in doubt")
        assert info.value.retriable and producer.commit_in_doubt
        # It goes on in the background: a new transaction is refused, saying what to call.
        with pytest.raises(TransactionStateError, match="commit_transaction"):
            producer.begin_transaction()
        with pytest.raises(TransactionStateError, match=r"call commit_transaction\(\) again"):
            producer.abort_transaction(1)  # librdkafka would say "Conflicting commit_transaction API call"
        # A produce is refused saying the same, not told to abort (refused above) as after a failure.
        with pytest.raises(TransactionStateError, match=r"call commit_transaction\(\) again") as refused:
            producer.produce(b"after the commit")
        assert not refused.value.txn_requires_abort
        mock_cluster.set_broker_rtt(1, 0)
        producer.commit_transaction(30)  # finishes it
        assert not producer.commit_in_doubt and message.offset >= 0
        producer.begin_transaction()
        producer.produce(b"aborted")
        producer.flush()  # in the transaction: the abort asks the coordinator
        mock_cluster.set_broker_rtt(1, 3000)
        with pytest.raises(KafkaTimeoutError):
            producer.abort_transaction(0.5)
        # The aborted transaction cannot be committed: the error says what to call instead.
        with pytest.raises(TransactionStateError, match=r"call abort_transaction\(\) again"):
            producer.commit_transaction(1)
        mock_cluster.set_broker_rtt(1, 0)
        with producer.transaction(timeout=30):  # the abort is finished first
            after = producer.produce(b"after")
        assert after.offset >= 0
    finally:
        producer.stop()


@pytest.mark.mock
@pytest.mark.parametrize("timeout_ms, late_s", [(1999, 0), (1300, 0.35), (0, 0)])
def test_each_slice_of_a_commit_has_the_time_to_begin_it(mock_cluster, mock_topic, timeout_ms, late_s):
    """A commit waits in slices (for Ctrl-C), each a call of rd_kafka_commit_transaction,
    which first has librdkafka's main thread begin it. A slice cut shorter than that (the
    last one could be 0 ms) made librdkafka forget the commit under way, and abort the
    process at its own assertion when the EndTxn answer came. A slice that returns late (a
    loaded machine: ``late_s``) leaves less than TXN_SLICE_MS: the last one has it still (at
    1300 ms, the first slice is one of two unless the call begins 300 ms late). A timeout
    of 0 (what a retry within a deadline may have left) is one call of TXN_SLICE_MS."""
    mock_cluster.set_coordinator("transaction", "sliced", 1)
    producer = mock_topic.get_producer(transactional_id="sliced", linger_ms=5)
    slices = []

    def commit(rk, slice_ms):
        slices.append(slice_ms)
        error = lib.rd_kafka_commit_transaction(rk, slice_ms)
        time.sleep(late_s)
        return error
    try:
        producer.begin_transaction()
        producer.produce(b"sliced")
        producer.flush()
        mock_cluster.set_broker_rtt(1, 3000)
        with pytest.raises(KafkaTimeoutError):
            transaction._call(producer._handle, commit, timeout_ms, "commit_transaction", resumable=True)
        mock_cluster.set_broker_rtt(1, 0)
        producer.commit_transaction(30)  # finishes it
    finally:
        producer.stop()
    assert (len(slices) > 1 or timeout_ms < 1000) and min(slices) >= 500, slices  # TXN_SLICE_MS


@pytest.mark.mock
def test_stop_after_a_commit_that_timed_out_says_it_may_have_committed(mock_cluster, mock_topic, caplog):
    """The commit goes on in librdkafka's background: stop() cannot abort it, and does not
    say that the coordinator will."""
    mock_cluster.set_coordinator("transaction", "in-doubt", 1)
    producer = mock_topic.get_producer(transactional_id="in-doubt", linger_ms=5,
                                         pending_timeout_ms=30000)
    try:
        producer.init_transactions(30)
        mock_cluster.set_broker_rtt(1, 3000)
        with pytest.raises(KafkaTimeoutError):
            with producer.transaction(timeout=0.5):
                producer.produce(b"in doubt")
        assert producer.commit_in_doubt
    finally:
        with caplog.at_level(logging.WARNING, logger="pyrdk"):
            producer.stop()
        mock_cluster.set_broker_rtt(1, 0)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("pyrdk")]
    assert any("may have committed or not" in line for line in said), said
    assert not any("aborts it" in line for line in said), said


@pytest.mark.mock
def test_stop_raises_no_delivery_failure_of_a_transaction_whose_abort_timed_out(mock_cluster):
    """The brokers go down in a transaction block: its message times out, the commit fails,
    and the abort times out too. stop() cannot abort it either (the coordinator will): the
    failed delivery of that transaction, never committed, is not raised as a
    ProduceFailureError, as it is not once an abort succeeds."""
    mock_cluster.create_topic("txn", 1, 1)
    client = KafkaClient(hosts=mock_cluster.bootstrap_servers, socket_timeout_ms=2000)
    producer = client.topics["txn"].get_producer(transactional_id="down", linger_ms=5, transaction_timeout_ms=2000,
                                                 pending_timeout_ms=1000)
    try:
        producer.init_transactions(30)
        with pytest.raises(KafkaException) as info:
            with producer.transaction(timeout=3):
                producer.produce(b"first")
                producer.flush()  # in the transaction: the abort asks the coordinator
                for broker in (1, 2, 3):
                    mock_cluster.broker_down(broker)
                producer.produce(b"timed out")
        assert info.value.txn_requires_abort
    finally:
        producer.stop()
        client.close()


@pytest.mark.kafka
def test_a_sync_producer_fenced_in_a_transaction_block_is_not_aborted_and_does_nothing_more(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    zombie = topic.get_producer(transactional_id=topic_name, linger_ms=5, sync=True, transaction_timeout_ms=5000,
                                rdkafka_config={"socket.timeout.ms": 5000})
    successor = topic.get_producer(transactional_id=topic_name, linger_ms=5)
    try:
        with pytest.raises(ProducerFenced):
            with zombie.transaction():
                zombie.produce(b"zombie")
                successor.init_transactions()  # fences the zombie
                zombie.produce(b"fenced")
        with pytest.raises(ProducerFenced, match="stop"):  # not an abort left to finish, which cannot end well
            zombie.begin_transaction()
        with successor.transaction():
            successor.produce(b"successor")
    finally:
        zombie.stop()
        successor.stop()
    values, still_open, _ = log_of(client, topic_name)
    assert values == [b"successor"] and still_open == []


_CTRL_C_IN_A_COMMIT = """
import os
import signal
import threading
from pyrdk import KafkaClient
from pyrdk.rd.mock import MockCluster
cluster = MockCluster(3)
cluster.create_topic("t", 1, 1)
cluster.set_coordinator("transaction", "slow", 1)
producer = KafkaClient(hosts=cluster.bootstrap_servers).topics["t"].get_producer(transactional_id="slow", linger_ms=5)
producer.begin_transaction()
message = producer.produce(b"interrupted")
producer.flush()
cluster.set_broker_rtt(1, 300000)
threading.Timer(1, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C, a second into the commit
try:
    producer.commit_transaction(600)
except KeyboardInterrupt:
    print("interrupted", producer.commit_in_doubt, flush=True)
cluster.set_broker_rtt(1, 0)
producer.commit_transaction(60)  # finishes it
print("committed", message.offset >= 0, flush=True)
producer.stop()
"""


@pytest.mark.mock
def test_ctrl_c_gets_through_a_commit_and_leaves_it_to_be_finished():
    proc = subprocess.Popen([sys.executable, "-c", _CTRL_C_IN_A_COMMIT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        out, err = proc.communicate(timeout=PATIENCE_MS / 1000)  # not after the coordinator's 300 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out) == (0, "interrupted True\ncommitted True\n"), err


@pytest.mark.kafka
def test_a_second_producer_with_the_same_id_fences_the_first(client, topic_name):
    topic = make_topic(client, topic_name, 1)
    zombie = topic.get_producer(transactional_id=topic_name, linger_ms=5)
    successor = None
    try:
        zombie.begin_transaction()
        zombie.produce(b"zombie")
        zombie.flush()
        successor = topic.get_producer(transactional_id=topic_name, linger_ms=5)
        successor.init_transactions()  # fences the zombie and aborts its transaction
        with pytest.raises(ProducerFenced) as info:
            zombie.produce(b"more")
            zombie.commit_transaction()
        assert info.value.fatal
        # Nothing more: neither an abort (librdkafka would try one, and wait on it) nor a transaction.
        with pytest.raises(ProducerFenced, match="stop"):
            zombie.abort_transaction(5)
        with pytest.raises(ProducerFenced, match="stop"):
            zombie.begin_transaction()
        with successor.transaction():
            successor.produce(b"successor")
    finally:
        zombie.stop()
        if successor is not None:
            successor.stop()
    values, still_open, _ = log_of(client, topic_name)
    assert values == [b"successor"] and still_open == []


def test_transaction_errors_carry_librdkafkas_flags():
    from pyrdk.rd import errors
    exc = errors.exception(-144, "commit_transaction", fatal=True, txn_requires_abort=False)
    assert type(exc) is ProducerFenced and exc.fatal and not exc.txn_requires_abort
    exc = errors.exception(-172, "produce", txn_requires_abort=True)
    assert type(exc) is TransactionStateError and exc.txn_requires_abort
