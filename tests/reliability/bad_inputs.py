"""The bad-input table: wrong types and out-of-range values over pyrdk's public API.

Each row is ``(name, expected exception classes, words its message must contain, call)``;
``call(world)`` must raise one of the expected classes -- a pyrdk exception, ``TypeError`` or
``ValueError`` -- and its message must name what to fix (the argument, the key, the
callable). Anything else is a defect: a crash, a hang, an answer (the bad input taken), or
an opaque error (``AttributeError``, ``OverflowError``, ``MemoryError``, cffi's own errors).
A raising serializer, deserializer or partitioner must see its own exception reach the
caller as it is.

Run as a program (``python -m tests.reliability.bad_inputs HOSTS ZOOKEEPER TOPIC NAME...``),
this module runs the named rows one after another in one process and prints one JSON line
as each starts and another as each ends, so that the test (test_bad_inputs.py) can say which
row a crash or a hang belongs to and run the rest in a new process.
"""
import datetime
import faulthandler
import json
import os
import signal
import sys
import time
import uuid

from pyrdk import KafkaClient, SslConfig
from pyrdk.exceptions import (ConfigurationError, ConsumerStoppedException, KafkaException,
                              MessageSizeTooLarge, NoBrokersAvailableError, ProducerStoppedException,
                              TransactionStateError)

D = datetime.datetime
UTC = datetime.timezone.utc
BEFORE_1970 = D(1969, 12, 31, 23, 59, tzinfo=UTC)
HUGE = 2 ** 70


class RaisedByCallback(ValueError):
    """What the raising serializer, deserializer and partitioner raise."""


def raising(*args):
    raise RaisedByCallback("the callback refused %r" % (args[-1],))


def returns(value):
    return lambda *args: value


def _arrow(**columns):
    import pyarrow
    return pyarrow.record_batch(columns)


class World:
    """What the rows act on: a client of the broker, a topic of 4 partitions holding a few
    messages, and the producers and consumers each row makes (stopped after it)."""

    def __init__(self, hosts, zookeeper, topic_name):
        self.hosts = hosts
        self.zookeeper = zookeeper
        self.client = KafkaClient(hosts=hosts)
        self.topic = self.client.topics[topic_name]
        self._made = []

    def made(self, thing):
        self._made.append(thing)
        return thing

    def cleanup(self):
        for thing in reversed(self._made):
            try:
                (getattr(thing, "stop", None) or thing.close)()
            except Exception as exc:  # the row's outcome is already recorded
                print("cleanup: %s: %s" % (type(exc).__name__, exc), file=sys.stderr)
        self._made = []

    # -- what the rows make --------------------------------------------------------------------

    def new_client(self, **kwargs):
        kwargs.setdefault("socket_timeout_ms", 2000)
        return self.made(KafkaClient(**kwargs))

    def closed_client(self):
        client = KafkaClient(hosts=self.hosts)
        client.close()
        return client

    def producer(self, **kwargs):
        kwargs.setdefault("linger_ms", 10)
        return self.made(self.topic.get_producer(**kwargs))

    def sync_producer(self, **kwargs):
        return self.producer(sync=True, **kwargs)

    def stopped_producer(self):
        producer = self.producer()
        producer.stop()
        return producer

    def consumer(self, **kwargs):
        kwargs.setdefault("consumer_group", "bad-%s" % uuid.uuid4().hex[:8])
        kwargs.setdefault("consumer_timeout_ms", 2000)
        return self.made(self.topic.get_simple_consumer(**kwargs))

    def stopped_consumer(self):
        consumer = self.consumer()
        consumer.stop()
        return consumer

    def balanced(self, **kwargs):
        kwargs.setdefault("zookeeper_hosts", self.zookeeper)
        kwargs.setdefault("consumer_timeout_ms", 2000)
        return self.made(self.topic.get_balanced_consumer("bad-%s" % uuid.uuid4().hex[:8], **kwargs))

    def managed(self, **kwargs):
        for key, value in (("session_timeout_ms", 6000), ("heartbeat_interval_ms", 500),
                           ("max_poll_interval_ms", 8000), ("consumer_timeout_ms", 2000)):
            kwargs.setdefault(key, value)
        return self.made(self.topic.get_balanced_consumer("bad-%s" % uuid.uuid4().hex[:8], managed=True,
                                                          **kwargs))

    def stopped(self, consumer):
        consumer.stop()
        return consumer

    def partition(self, pid=0):
        return self.topic.partitions[pid]

    def other_partition(self):
        """A Partition of another topic (the client's view of ``__consumer_offsets`` is hidden;
        any second topic does)."""
        other = self.client.topics["bad-other-%s" % uuid.uuid4().hex[:8]]
        return other.partitions[0]


TE, VE = TypeError, ValueError
KE = KafkaException
CE = ConfigurationError


def not_bools(shown, make, names):
    """Rows giving each boolean option of ``make`` (a method of the world) the string
    "false", which Python takes as true: it must be refused, not turn the option on."""
    return [("%s(%s='false')" % (shown, name), TE, "%s must be True or False" % name,
             lambda w, name=name: getattr(w, make)(**{name: "false"})) for name in names]


CONSUMER_BOOLS = ("auto_commit_enable", "auto_start", "reset_offset_on_start", "reset_offset_on_fetch")


# (name, expected classes, words the message names, call)
TABLE = [
    # -- KafkaClient -----------------------------------------------------------------------------
    ("KafkaClient(hosts=5)", TE, "hosts", lambda w: w.new_client(hosts=5)),
    ("KafkaClient(hosts='')", TE, "hosts", lambda w: w.new_client(hosts="")),
    ("KafkaClient(hosts=['h:1'])", TE, "hosts", lambda w: w.new_client(hosts=["127.0.0.1:1"])),
    ("KafkaClient(hosts=b'\\xff:1')", (TE, VE), "hosts", lambda w: w.new_client(hosts=b"\xff:1")),
    ("KafkaClient(hosts='127.0.0.1:1') unreachable", NoBrokersAvailableError, "127.0.0.1:1",
     lambda w: w.new_client(hosts="127.0.0.1:1")),
    ("KafkaClient(hosts='127.0.0.1:notaport')", (VE, KE), "127.0.0.1:notaport",
     lambda w: w.new_client(hosts="127.0.0.1:notaport")),
    ("KafkaClient(hosts='127.0.0.1:99999')", (VE, KE), "127.0.0.1:99999",
     lambda w: w.new_client(hosts="127.0.0.1:99999")),
    ("KafkaClient(hosts=',,,')", (TE, VE), "hosts", lambda w: w.new_client(hosts=",,,")),
    ("KafkaClient(socket_timeout_ms='1000')", TE, "socket_timeout_ms",
     lambda w: w.new_client(hosts=w.hosts, socket_timeout_ms="1000")),
    ("KafkaClient(socket_timeout_ms=0)", (TE, VE), "socket_timeout_ms",
     lambda w: w.new_client(hosts=w.hosts, socket_timeout_ms=0)),
    ("KafkaClient(socket_timeout_ms=2**70)", (TE, VE), "socket_timeout_ms",
     lambda w: w.new_client(hosts=w.hosts, socket_timeout_ms=HUGE)),
    ("KafkaClient(offsets_channel_socket_timeout_ms='x')", (TE, VE), "offsets_channel_socket_timeout_ms",
     lambda w: w.new_client(hosts=w.hosts, offsets_channel_socket_timeout_ms="x")),
    ("KafkaClient(statistics_interval_ms=-1)", (TE, VE), "statistics_interval_ms",
     lambda w: w.new_client(hosts=w.hosts, statistics_interval_ms=-1)),
    ("KafkaClient(stats_callback=5)", TE, "stats_callback", lambda w: w.new_client(hosts=w.hosts, stats_callback=5)),
    ("KafkaClient(zookeeper_hosts=5)", TE, "zookeeper_hosts", lambda w: w.new_client(hosts=w.hosts, zookeeper_hosts=5)),
    ("KafkaClient(ssl_config='x')", TE, "ssl_config", lambda w: w.new_client(hosts=w.hosts, ssl_config="x")),
    ("KafkaClient(ssl_config=SslConfig(cafile=5))", (TE, VE), "cafile",
     lambda w: w.new_client(hosts=w.hosts, ssl_config=SslConfig(cafile=5))),
    ("KafkaClient(use_greenlets=True)", VE, "use_greenlets", lambda w: w.new_client(hosts=w.hosts, use_greenlets=True)),
    ("KafkaClient(use_greenlets='false')", TE, "use_greenlets must be True or False",
     lambda w: w.new_client(hosts=w.hosts, use_greenlets="false")),
    ("KafkaClient(exclude_internal_topics='no')", TE, "exclude_internal_topics must be True or False",
     lambda w: w.new_client(hosts=w.hosts, exclude_internal_topics="no")),
    ("KafkaClient(security_protocol='TLS')", VE, "security_protocol",
     lambda w: w.new_client(hosts=w.hosts, security_protocol="TLS")),
    ("KafkaClient(sasl_mechanism='MD5')", VE, "sasl_mechanism",
     lambda w: w.new_client(hosts=w.hosts, sasl_mechanism="MD5")),
    ("KafkaClient(sasl_mechanism='PLAIN') without a user", VE, "sasl_plain_username",
     lambda w: w.new_client(hosts=w.hosts, sasl_mechanism="PLAIN")),
    ("KafkaClient(oauth_cb=5)", TE, "oauth_cb", lambda w: w.new_client(hosts=w.hosts, oauth_cb=5)),
    ("KafkaClient(rdkafka_config='x')", TE, "rdkafka_config",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config="x")),
    ("KafkaClient(rdkafka_config={'no.such.property': 1})", CE, "no.such.property",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config={"no.such.property": 1})),
    ("KafkaClient(rdkafka_config={'linger.ms': 'soon'})", CE, "linger.ms",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config={"linger.ms": "soon"})),
    ("KafkaClient(rdkafka_config={'linger.ms': object()})", TE, "linger.ms",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config={"linger.ms": object()})),
    ("KafkaClient(rdkafka_config={'client.id': None})", TE, "client.id",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config={"client.id": None})),
    ("KafkaClient(rdkafka_config={5: 1})", TE, "rdkafka_config",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config={5: 1})),
    ("KafkaClient(rdkafka_config={'client.id': 'a\\x00b'})", (TE, VE, CE), "client.id",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config={"client.id": "a\x00b"})),
    ("KafkaClient(rdkafka_config={'client.id': '\\udcff'})", (TE, VE, CE), "client.id",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config={"client.id": "\udcff"})),
    ("KafkaClient(rdkafka_config={'socket.timeout.ms': 2**70})", CE, "socket.timeout.ms",
     lambda w: w.new_client(hosts=w.hosts, rdkafka_config={"socket.timeout.ms": HUGE})),
    # -- topics and administration ---------------------------------------------------------------
    ("client.topics[5]", TE, "topic name", lambda w: w.client.topics[5]),
    ("client.topics['']", (VE, KE), "topic", lambda w: w.client.topics[""]),
    ("client.topics['bad name!']", (VE, KE), "bad name!", lambda w: w.client.topics["bad name!"]),
    ("client.topics['x' * 300]", (VE, KE), "topic", lambda w: w.client.topics["x" * 300]),
    ("client.topics['a\\x00b']", (VE, KE), "topic", lambda w: w.client.topics["a\x00b"]),
    ("create_topics([('t', 2**40, 1)])", (TE, VE), "num_partitions",
     lambda w: w.client.cluster.create_topics([("bad-%s" % uuid.uuid4().hex[:8], 2 ** 40, 1)])),
    ("create_topics([('t', 1, 2**40)])", (TE, VE), "replication_factor",
     lambda w: w.client.cluster.create_topics([("bad-%s" % uuid.uuid4().hex[:8], 1, 2 ** 40)])),
    ("create_topics([('t', '4', 1)])", TE, "num_partitions",
     lambda w: w.client.cluster.create_topics([("bad-%s" % uuid.uuid4().hex[:8], "4", 1)])),
    ("create_topics('abc')", TE, "create_topics", lambda w: w.client.cluster.create_topics("abc")),
    ("create_topics([('bad/name', 1, 1)])", (VE, KE), "bad/name",
     lambda w: w.client.cluster.create_topics([("bad/name", 1, 1)])),
    ("client.topics[b'\\xff']", (TE, VE), "topic name", lambda w: w.client.topics[b"\xff"]),
    ("delete_topics([5])", TE, "topic name", lambda w: w.client.cluster.delete_topics([5])),
    ("use after close: client.topics[...]", KE, "close", lambda w: w.closed_client().topics["anything"]),
    ("use after close: update_cluster()", KE, "close", lambda w: w.closed_client().update_cluster()),
    # -- Producer: constructor -------------------------------------------------------------------
    ("get_producer(partitioner=5)", TE, "partitioner", lambda w: w.producer(partitioner=5)),
    ("get_producer(serializer=5)", TE, "serializer", lambda w: w.producer(serializer=5)),
    ("get_producer(compression=99)", (TE, VE), "compression", lambda w: w.producer(compression=99)),
    ("get_producer(compression='zip')", (TE, VE), "compression", lambda w: w.producer(compression="zip")),
    ("get_producer(max_retries='3')", (TE, VE), "max_retries", lambda w: w.producer(max_retries="3")),
    ("get_producer(retry_backoff_ms=-1)", (TE, VE), "retry_backoff_ms", lambda w: w.producer(retry_backoff_ms=-1)),
    ("get_producer(required_acks=5)", (TE, VE), "required_acks", lambda w: w.producer(required_acks=5)),
    ("get_producer(ack_timeout_ms='10')", (TE, VE), "ack_timeout_ms", lambda w: w.producer(ack_timeout_ms="10")),
    ("get_producer(max_queued_messages=0)", (TE, VE), "max_queued_messages",
     lambda w: w.producer(max_queued_messages=0)),
    ("get_producer(min_queued_messages=2**70)", (TE, VE), "min_queued_messages",
     lambda w: w.producer(min_queued_messages=HUGE)),
    ("get_producer(linger_ms=-5)", (TE, VE), "linger_ms", lambda w: w.producer(linger_ms=-5)),
    ("get_producer(linger_ms='soon')", (TE, VE), "linger_ms", lambda w: w.producer(linger_ms="soon")),
    ("get_producer(queue_empty_timeout_ms='x')", (TE, VE), "queue_empty_timeout_ms",
     lambda w: w.producer(queue_empty_timeout_ms="x")),
    ("get_producer(max_request_size=0)", (TE, VE), "max_request_size", lambda w: w.producer(max_request_size=0)),
    ("get_producer(pending_timeout_ms='5')", (TE, VE), "pending_timeout_ms",
     lambda w: w.producer(pending_timeout_ms="5")),
    ("get_producer(transactional_id=5)", TE, "transactional_id", lambda w: w.producer(transactional_id=5)),
    ("get_producer(transaction_timeout_ms=0)", (TE, VE), "transaction_timeout_ms",
     lambda w: w.producer(transaction_timeout_ms=0)),
    ("get_producer(statistics_interval_ms='1')", (TE, VE), "statistics_interval_ms",
     lambda w: w.producer(statistics_interval_ms="1")),
    ("get_producer(stats_callback=5)", TE, "stats_callback", lambda w: w.producer(stats_callback=5)),
    ("get_producer(rdkafka_config='x')", TE, "rdkafka_config", lambda w: w.producer(rdkafka_config="x")),
    ("get_producer(rdkafka_config=[('acks', 1)])", TE, "rdkafka_config",
     lambda w: w.producer(rdkafka_config=[("acks", 1)])),
    ("get_producer(rdkafka_config={'acks': 'lots'})", CE, "acks",
     lambda w: w.producer(rdkafka_config={"acks": "lots"})),
    ("get_producer(rdkafka_config={'linger.ms': 2**70})", CE, "linger.ms",
     lambda w: w.producer(rdkafka_config={"linger.ms": HUGE})),
    ("get_producer(no_such_argument=1)", TE, "no_such_argument", lambda w: w.producer(no_such_argument=1)),
    *not_bools("get_producer", "producer",
               ("sync", "delivery_reports", "block_on_queue_full", "auto_start", "enable_idempotence")),
    # -- Producer: produce() ---------------------------------------------------------------------
    ("produce('text')", TE, "bytes", lambda w: w.producer().produce("text")),
    ("produce(5)", TE, "bytes", lambda w: w.producer().produce(5)),
    ("produce(b'v', partition_key='k')", TE, "partition_key", lambda w: w.producer().produce(b"v", partition_key="k")),
    ("produce(b'v', timestamp=2**70)", (TE, VE), "timestamp", lambda w: w.producer().produce(b"v", timestamp=HUGE)),
    ("sync produce(b'v', timestamp=2**70)", (TE, VE), "timestamp",
     lambda w: w.sync_producer().produce(b"v", timestamp=HUGE)),
    ("produce(b'v', timestamp=-1)", (TE, VE), "timestamp", lambda w: w.producer().produce(b"v", timestamp=-1)),
    ("produce(b'v', timestamp='now')", (TE, VE), "timestamp", lambda w: w.producer().produce(b"v", timestamp="now")),
    ("produce(b'v', timestamp=float('nan'))", (TE, VE), "timestamp",
     lambda w: w.producer().produce(b"v", timestamp=float("nan"))),
    ("produce(b'v', timestamp=datetime before 1970)", (TE, VE), "timestamp",
     lambda w: w.producer().produce(b"v", timestamp=BEFORE_1970)),
    ("produce(b'v', headers='h=v')", TE, "headers", lambda w: w.producer().produce(b"v", headers="h=v")),
    ("produce(b'v', headers=5)", TE, "headers", lambda w: w.producer().produce(b"v", headers=5)),
    ("produce(b'v', headers=[None])", TE, "headers", lambda w: w.producer().produce(b"v", headers=[None])),
    ("produce(b'v', headers=[('h',)])", TE, "headers", lambda w: w.producer().produce(b"v", headers=[("h",)])),
    ("produce(b'v', headers=['ab', 'cd'])", TE, "headers", lambda w: w.producer().produce(b"v", headers=["ab", "cd"])),
    ("produce(b'v', headers=[(5, b'v')])", TE, "headers", lambda w: w.producer().produce(b"v", headers=[(5, b"v")])),
    ("produce(b'v', headers=[('h', 5)])", TE, "headers", lambda w: w.producer().produce(b"v", headers=[("h", 5)])),
    ("produce(b'v', headers={'h': 5})", TE, "headers", lambda w: w.producer().produce(b"v", headers={"h": 5})),
    ("produce(b'v', headers=[('\\udcff', b'v')])", (TE, VE), "headers",
     lambda w: w.producer().produce(b"v", headers=[("\udcff", b"v")])),
    ("produce(value over max_request_size)", MessageSizeTooLarge, "max_request_size",
     lambda w: w.producer(max_request_size=1000).produce(b"x" * 2000)),
    ("produce() with a partitioner returning 1", VE, "partitioner",
     lambda w: w.producer(partitioner=returns(1)).produce(b"v")),
    ("sync produce() with a partitioner returning 1", VE, "partitioner",
     lambda w: w.sync_producer(partitioner=returns(1)).produce(b"v")),
    ("produce() with a partitioner returning None", VE, "partitioner",
     lambda w: w.producer(partitioner=returns(None)).produce(b"v", partition_key=b"k")),
    ("produce() with a partitioner returning another topic's Partition", VE, "partitioner",
     lambda w: w.producer(partitioner=returns(w.other_partition())).produce(b"v")),
    ("produce() with a partitioner returning a list", VE, "partitioner",
     lambda w: w.producer(partitioner=returns([])).produce(b"v")),
    ("produce() with a partitioner returning a Partition id string", VE, "partitioner",
     lambda w: w.producer(partitioner=returns("0")).produce(b"v", partition_key=b"k")),
    ("produce_batch() with a partitioner returning 2", VE, "partitioner",
     lambda w: w.producer(partitioner=returns(2)).produce_batch([b"a", b"b"])),
    ("sync produce() with a serializer returning None", TE, "serializer",
     lambda w: w.sync_producer(serializer=returns(None)).produce("v")),
    ("consume() with a deserializer returning a triple", TE, "deserializer",
     lambda w: w.consumer(deserializer=returns((b"v", b"k", b"x"))).consume()),
    ("get_producer(compression=None)", (TE, VE), "compression", lambda w: w.producer(compression=None)),
    ("produce(b'v', headers=[(b'h', '\\udcff')])", (TE, VE), "headers",
     lambda w: w.producer().produce(b"v", headers=[(b"h", "\udcff")])),
    ("produce() with a raising partitioner", RaisedByCallback, "callback refused",
     lambda w: w.producer(partitioner=raising).produce(b"v", partition_key=b"k")),
    ("produce() with a serializer returning b'v' (not a pair)", TE, "serializer",
     lambda w: w.producer(serializer=returns(b"v")).produce("v")),
    ("produce() with a serializer returning ('v', None)", TE, "serializer returned str as the message",
     lambda w: w.producer(serializer=returns(("v", None))).produce("v")),
    ("produce() with a raising serializer", RaisedByCallback, "callback refused",
     lambda w: w.producer(serializer=raising).produce("v")),
    ("produce_batch(5)", TE, "produce_batch", lambda w: w.producer().produce_batch(5)),
    ("produce_batch([(b'v', b'k', b'x')])", TE, "produce_batch",
     lambda w: w.producer().produce_batch([(b"v", b"k", b"x")])),
    ("produce_batch(['text'])", TE, "bytes", lambda w: w.producer().produce_batch(["text"])),
    ("produce_arrow([b'v'])", TE, "RecordBatch or Table", lambda w: w.producer().produce_arrow([b"v"])),
    ("produce_arrow() of a batch with an int key column", TE, "column 'key' must be binary or string",
     lambda w: w.producer().produce_arrow(_arrow(value=[b"v"], key=[1]))),
    ("produce_arrow() with a partitioner returning 2", VE, "partitioner",
     lambda w: w.producer(partitioner=returns(2)).produce_arrow(_arrow(value=[b"a"]))),
    ("flush(timeout='1')", TE, "timeout", lambda w: w.producer().flush(timeout="1")),
    ("flush(timeout=-1)", (TE, VE), "timeout", lambda w: w.producer().flush(timeout=-1)),
    ("flush(timeout=1e30)", (TE, VE), "timeout", lambda w: w.producer().flush(timeout=1e30)),
    ("get_delivery_report() without delivery_reports", KE, "delivery_reports",
     lambda w: w.producer().get_delivery_report(block=False)),
    ("begin_transaction() on a producer without transactional_id", TransactionStateError, "transactional_id",
     lambda w: w.producer().begin_transaction()),
    ("use after stop: produce()", ProducerStoppedException, "stopped", lambda w: w.stopped_producer().produce(b"v")),
    ("use after stop: produce_batch()", ProducerStoppedException, "stopped",
     lambda w: w.stopped_producer().produce_batch([b"v"])),
    ("use after stop: produce_arrow()", ProducerStoppedException, "stopped",
     lambda w: w.stopped_producer().produce_arrow(_arrow(value=[b"v"]))),
    ("use after stop: flush()", ProducerStoppedException, "stopped", lambda w: w.stopped_producer().flush(1)),
    # -- SimpleConsumer: constructor -------------------------------------------------------------
    ("get_simple_consumer(consumer_group=5)", TE, "consumer_group", lambda w: w.consumer(consumer_group=5)),
    ("get_simple_consumer(partitions=5)", TE, "partitions", lambda w: w.consumer(partitions=5)),
    ("get_simple_consumer(partitions=[99])", VE, "partition", lambda w: w.consumer(partitions=[99])),
    ("get_simple_consumer(partitions=['0'])", TE, "partitions", lambda w: w.consumer(partitions=["0"])),
    ("get_simple_consumer(fetch_message_max_bytes='1M')", (TE, VE), "fetch_message_max_bytes",
     lambda w: w.consumer(fetch_message_max_bytes="1M")),
    ("get_simple_consumer(queued_max_messages=-1)", (TE, VE), "queued_max_messages",
     lambda w: w.consumer(queued_max_messages=-1)),
    ("get_simple_consumer(fetch_min_bytes=2**70)", (TE, VE), "fetch_min_bytes",
     lambda w: w.consumer(fetch_min_bytes=HUGE)),
    ("get_simple_consumer(fetch_error_backoff_ms='x')", (TE, VE), "fetch_error_backoff_ms",
     lambda w: w.consumer(fetch_error_backoff_ms="x")),
    ("get_simple_consumer(fetch_wait_max_ms=-1)", (TE, VE), "fetch_wait_max_ms",
     lambda w: w.consumer(fetch_wait_max_ms=-1)),
    ("get_simple_consumer(offsets_commit_max_retries='5')", TE, "offsets_commit_max_retries",
     lambda w: w.consumer(offsets_commit_max_retries="5")),
    ("get_simple_consumer(offsets_channel_backoff_ms=-1)", (TE, VE), "offsets_channel_backoff_ms",
     lambda w: w.consumer(offsets_channel_backoff_ms=-1)),
    ("get_simple_consumer(auto_offset_reset='earliest')", VE, "auto_offset_reset",
     lambda w: w.consumer(auto_offset_reset="earliest")),
    ("get_simple_consumer(consumer_timeout_ms='x')", TE, "consumer_timeout_ms",
     lambda w: w.consumer(consumer_timeout_ms="x")),
    ("get_simple_consumer(auto_commit_interval_ms=-5)", (TE, VE), "auto_commit_interval_ms",
     lambda w: w.consumer(auto_commit_enable=True, auto_commit_interval_ms=-5)),
    ("get_simple_consumer(auto_commit_enable=True) without a group", VE, "consumer_group",
     lambda w: w.consumer(consumer_group=None, auto_commit_enable=True)),
    ("get_simple_consumer(deserializer=5)", TE, "deserializer", lambda w: w.consumer(deserializer=5)),
    ("get_simple_consumer(isolation_level='all')", VE, "isolation_level", lambda w: w.consumer(isolation_level="all")),
    ("get_simple_consumer(rdkafka_config='x')", TE, "rdkafka_config", lambda w: w.consumer(rdkafka_config="x")),
    ("get_simple_consumer(rdkafka_config={'fetch.wait.max.ms': -9})", CE, "fetch.wait.max.ms",
     lambda w: w.consumer(rdkafka_config={"fetch.wait.max.ms": -9})),
    ("get_simple_consumer(statistics_interval_ms=-1)", (TE, VE), "statistics_interval_ms",
     lambda w: w.consumer(statistics_interval_ms=-1)),
    *not_bools("get_simple_consumer", "consumer", CONSUMER_BOOLS),
    # -- SimpleConsumer: calls -------------------------------------------------------------------
    ("consume_batch(max_messages=-1)", (TE, VE), "max_messages", lambda w: w.consumer().consume_batch(max_messages=-1)),
    ("consume_batch(max_messages='10')", (TE, VE), "max_messages",
     lambda w: w.consumer().consume_batch(max_messages="10")),
    ("consume_batch(max_messages=10**12)", (TE, VE), "max_messages",
     lambda w: w.consumer().consume_batch(max_messages=10 ** 12)),
    ("consume_batch(timeout_ms='100')", (TE, VE), "timeout_ms", lambda w: w.consumer().consume_batch(timeout_ms="100")),
    ("reset_offsets('garbage')", (TE, VE), "partition_offsets", lambda w: w.consumer().reset_offsets("garbage")),
    ("reset_offsets([(0, 2**70)])", (TE, VE), "offset", lambda w: w.consumer().reset_offsets([(0, HUGE)])),
    ("reset_offsets([(0, 'x')])", (TE, VE), "offset", lambda w: w.consumer().reset_offsets([(0, "x")])),
    ("reset_offsets([(99, 0)])", VE, "partition", lambda w: w.consumer().reset_offsets([(99, 0)])),
    ("reset_offsets([(0, datetime before 1970)])", (TE, VE), "1969",
     lambda w: w.consumer().reset_offsets([(0, BEFORE_1970)])),
    ("seek(0, 2**70)", (TE, VE), "offset", lambda w: w.consumer().seek(0, HUGE)),
    ("seek(0, -5)", (TE, VE), "offset", lambda w: w.consumer().seek(0, -5)),
    ("seek('0', 1)", VE, "partition", lambda w: w.consumer().seek("0", 1)),
    ("commit_offsets([(0, 2**70)])", (TE, VE), "offset", lambda w: w.consumer().commit_offsets([(0, HUGE)])),
    ("commit_offsets('garbage')", (TE, VE), "partition_offsets", lambda w: w.consumer().commit_offsets("garbage")),
    ("commit_offsets([(0, -3)])", (TE, VE), "offset", lambda w: w.consumer().commit_offsets([(0, -3)])),
    ("commit_offsets() without a group", VE, "consumer_group",
     lambda w: w.consumer(consumer_group=None).commit_offsets([(0, 1)])),
    ("pause([99])", VE, "partition", lambda w: w.consumer().pause([99])),
    ("consume() with a raising deserializer", RaisedByCallback, "callback refused",
     lambda w: w.consumer(deserializer=raising).consume()),
    ("consume() with a deserializer returning None", TE, "deserializer",
     lambda w: w.consumer(deserializer=returns(None)).consume()),
    ("consume_batch() with a deserializer returning b'v'", TE, "deserializer",
     lambda w: w.consumer(deserializer=returns(b"v")).consume_batch(10, 2000)),
    ("use after stop: consume()", ConsumerStoppedException, "stopped", lambda w: w.stopped_consumer().consume()),
    ("use after stop: consume_batch()", ConsumerStoppedException, "stopped",
     lambda w: w.stopped_consumer().consume_batch()),
    ("use after stop: commit_offsets()", ConsumerStoppedException, "stopped",
     lambda w: w.stopped_consumer().commit_offsets()),
    ("use after stop: seek()", ConsumerStoppedException, "stopped", lambda w: w.stopped_consumer().seek(0, 0)),
    # -- BalancedConsumer (ZooKeeper) ------------------------------------------------------------
    ("get_balanced_consumer(consumer_group=None)", TE, "consumer_group",
     lambda w: w.made(w.topic.get_balanced_consumer(None, zookeeper_hosts=w.zookeeper))),
    ("get_balanced_consumer(zookeeper_hosts=5)", TE, "zookeeper_hosts", lambda w: w.balanced(zookeeper_hosts=5)),
    ("get_balanced_consumer(zookeeper_hosts='127.0.0.1:1') unreachable", KE, "127.0.0.1:1",
     lambda w: w.balanced(zookeeper_hosts="127.0.0.1:1", zookeeper_connection_timeout_ms=1000)),
    ("get_balanced_consumer(rebalance_max_retries='x')", TE, "rebalance_max_retries",
     lambda w: w.balanced(rebalance_max_retries="x")),
    ("get_balanced_consumer(zookeeper_connection_timeout_ms=0)", (TE, VE), "zookeeper_connection_timeout_ms",
     lambda w: w.balanced(zookeeper_connection_timeout_ms=0)),
    ("get_balanced_consumer(membership_protocol='range')", TE, "membership_protocol",
     lambda w: w.balanced(membership_protocol="range")),
    ("get_balanced_consumer(post_rebalance_callback=5)", TE, "post_rebalance_callback",
     lambda w: w.balanced(post_rebalance_callback=5)),
    ("get_balanced_consumer(auto_offset_reset=0)", VE, "auto_offset_reset", lambda w: w.balanced(auto_offset_reset=0)),
    ("get_balanced_consumer(rdkafka_config='x')", TE, "rdkafka_config", lambda w: w.balanced(rdkafka_config="x")),
    *not_bools("get_balanced_consumer", "balanced", CONSUMER_BOOLS),
    ("get_balanced_consumer(offsets_commit_max_retries='x')", TE, "offsets_commit_max_retries",
     lambda w: w.balanced(offsets_commit_max_retries="x")),
    ("get_balanced_consumer(queued_max_messages='x')", (TE, VE), "queued_max_messages",
     lambda w: w.balanced(queued_max_messages="x")),
    ("use after stop: BalancedConsumer.consume()", ConsumerStoppedException, "stopped",
     lambda w: w.stopped(w.balanced()).consume()),
    ("use after stop: BalancedConsumer.commit_offsets()", ConsumerStoppedException, "stopped",
     lambda w: w.stopped(w.balanced()).commit_offsets()),
    # -- ManagedBalancedConsumer -----------------------------------------------------------------
    ("get_balanced_consumer(None, managed=True)", TE, "consumer_group",
     lambda w: w.made(w.topic.get_balanced_consumer(None, managed=True))),
    ("get_balanced_consumer(g, managed='yes')", TE, "managed must be True or False",
     lambda w: w.made(w.topic.get_balanced_consumer("g", managed="yes"))),
    *not_bools("managed: get_balanced_consumer", "managed", CONSUMER_BOOLS),
    ("managed: heartbeat_interval_ms='x'", (TE, VE), "heartbeat_interval_ms",
     lambda w: w.managed(heartbeat_interval_ms="x")),
    ("managed: session_timeout_ms=-1", (TE, VE), "session_timeout_ms", lambda w: w.managed(session_timeout_ms=-1)),
    ("managed: max_poll_interval_ms=2**70", (TE, VE), "max_poll_interval_ms",
     lambda w: w.managed(max_poll_interval_ms=HUGE)),
    ("managed: membership_protocol=5", (TE, VE), "membership_protocol", lambda w: w.managed(membership_protocol=5)),
    ("managed: group_protocol='new'", VE, "group_protocol", lambda w: w.managed(group_protocol="new")),
    ("managed: group_instance_id=5", TE, "group_instance_id", lambda w: w.managed(group_instance_id=5)),
    ("managed: listener=5", TE, "listener", lambda w: w.managed(listener=5)),
    ("managed: zookeeper_hosts='h:1'", VE, "zookeeper_hosts", lambda w: w.managed(zookeeper_hosts="h:1")),
    ("managed: rdkafka_config='x'", TE, "rdkafka_config", lambda w: w.managed(rdkafka_config="x")),
    ("managed: consumer_timeout_ms=None", TE, "consumer_timeout_ms", lambda w: w.managed(consumer_timeout_ms=None)),
    ("managed: commit_offsets('garbage')", (TE, VE), "partition_offsets",
     lambda w: w.managed().commit_offsets("garbage")),
    ("use after stop: ManagedBalancedConsumer.consume()", ConsumerStoppedException, "stopped",
     lambda w: w.stopped(w.managed()).consume()),
    ("use after stop: ManagedBalancedConsumer.reset_offsets()", ConsumerStoppedException, "stopped",
     lambda w: w.stopped(w.managed()).reset_offsets([(0, 0)])),
]

# Rows outside the table that fail the way a defect would, for the test of the runner
# itself: it must blame the row, kill the process and go on.
PROBES = [
    ("probe: a crash", TE, "-", lambda w: os.kill(os.getpid(), signal.SIGSEGV)),
    ("probe: a hang", TE, "-", lambda w: time.sleep(3600)),
]

CASES = {name: (expect if isinstance(expect, tuple) else (expect,), words, call)
         for name, expect, words, call in TABLE + PROBES}
assert len(CASES) == len(TABLE) + len(PROBES), "two rows of the table share a name"

# Errors that say nothing about the caller's mistake, whatever their message.
OPAQUE = (AttributeError, OverflowError, MemoryError, KeyError, IndexError, UnicodeError)


def judge(name, exc):
    """``(ok, why)`` for row ``name`` having raised ``exc`` (None: it raised nothing)."""
    expect, words, _ = CASES[name]
    if exc is None:
        return False, "accepted: raised nothing"
    if isinstance(exc, OPAQUE) and not isinstance(exc, RaisedByCallback):
        return False, "opaque %s" % type(exc).__name__
    if not isinstance(exc, (KafkaException, TypeError, ValueError)):
        return False, "%s is not a pyrdk exception, TypeError or ValueError" % type(exc).__name__
    if not isinstance(exc, expect):
        return False, "expected %s" % " or ".join(e.__name__ for e in expect)
    if words.lower() not in str(exc).lower():
        return False, "the message does not name %r" % words
    return True, ""


def _emit(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main(argv):
    """Run the rows named in ``argv[3:]`` on a world of ``argv[0]`` (bootstrap servers),
    ``argv[1]`` (ZooKeeper) and ``argv[2]`` (the topic)."""
    faulthandler.enable()  # a crash prints the Python stack of each thread to stderr
    hosts, zookeeper, topic_name, names = argv[0], argv[1], argv[2], argv[3:]
    world = World(hosts, zookeeper, topic_name)
    _emit({"ready": True})
    for name in names:
        _emit({"start": name})
        started = time.monotonic()
        try:
            CASES[name][2](world)
            exc = None
        except BaseException as caught:
            exc = caught
        finally:
            world.cleanup()
        ok, why = judge(name, exc)
        _emit({"name": name, "ok": ok, "why": why, "seconds": round(time.monotonic() - started, 2),
               "exception": None if exc is None else type(exc).__name__,
               "message": None if exc is None else str(exc)})
    world.client.close()


if __name__ == "__main__":
    main(sys.argv[1:])
