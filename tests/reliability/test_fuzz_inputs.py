"""Property tests of what programs hand pyrdk: ``produce()`` arguments and ``rdkafka_config``
dicts of random types and values, against the session broker. Each call either works or
raises TypeError, ValueError or a pyrdk exception with a message of its own; never an
opaque error (``AttributeError``, ``OverflowError``, cffi's own complaints), a crash or a
hang (the test's timeout bounds it). The example counts are kept small, so that it runs in
seconds; each test reports how many examples worked and how many were refused."""
import collections
import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyrdk.exceptions import KafkaException
from tests.fix_kafka import make_topic, unique_name
from tests.reliability.bad_inputs import OPAQUE
from tests.reliability.ledger import report

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]

# Words of cffi's own errors: a TypeError or ValueError saying them names no argument.
CFFI_WORDS = ("cdata", "ctype", "initializer for", "char *", "ffi.")

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

scalars = st.one_of(
    st.none(), st.booleans(), st.binary(max_size=20), st.text(max_size=10),
    st.integers(min_value=-2 ** 80, max_value=2 ** 80), st.floats(allow_nan=True, allow_infinity=True),
    st.datetimes(min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30),
                 timezones=st.one_of(st.none(), st.just(datetime.timezone.utc))),
    st.just(object()))
anything = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner), st.tuples(inner, inner), st.tuples(inner, inner, inner),
    st.dictionaries(st.one_of(st.text(max_size=5), st.binary(max_size=5), st.integers()), inner, max_size=3)),
    max_leaves=6)
header_parts = st.one_of(st.none(), st.text(max_size=8), st.binary(max_size=8), st.integers(), st.just("\udcff"))
headers = st.one_of(
    st.none(),
    anything,
    st.lists(st.tuples(header_parts, header_parts), max_size=3),
    st.dictionaries(header_parts, header_parts, max_size=3),
    st.lists(st.one_of(st.tuples(header_parts), st.tuples(header_parts, header_parts, header_parts),
                       st.text(max_size=3)), min_size=1, max_size=3))
timestamps = st.one_of(st.none(), st.integers(min_value=-2 ** 70, max_value=2 ** 70),
                       st.integers(min_value=0, max_value=2 ** 41), anything)

# Properties a producer or consumer takes, a few of them refusing most values; left out are
# those that would point the client elsewhere (bootstrap.servers, security.protocol...).
PROPERTIES = ["linger.ms", "client.id", "acks", "batch.num.messages", "compression.codec", "message.max.bytes",
              "queue.buffering.max.messages", "retries", "enable.idempotence", "debug", "fetch.wait.max.ms",
              "queued.min.messages", "fetch.min.bytes", "isolation.level", "auto.offset.reset",
              "no.such.property", "", "linger.ms\0", "\udcff"]
config_values = st.one_of(scalars, st.sampled_from(["0", "1", "-1", "true", "all", "gzip", "earliest", "x" * 300]),
                          st.lists(st.one_of(st.text(max_size=4), st.integers()), max_size=3))
configs = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(PROPERTIES), st.text(max_size=8), st.integers(), st.binary(max_size=4)),
                    config_values, max_size=4),
    anything)


def judge(exc):
    """Why ``exc`` is not an acceptable refusal, or None if it is."""
    if isinstance(exc, OPAQUE):
        return "opaque %s: %s" % (type(exc).__name__, exc)
    if not isinstance(exc, (TypeError, ValueError, KafkaException)):
        return "%s is not TypeError, ValueError or a pyrdk exception: %s" % (type(exc).__name__, exc)
    text = str(exc)
    if not text.strip():
        return "%s without a message" % type(exc).__name__
    if any(word in text for word in CFFI_WORDS):
        return "cffi's own error: %s: %s" % (type(exc).__name__, text)
    return None


def attempt(outcomes, call):
    """Run ``call``; count whether it worked or was refused acceptably; fail otherwise."""
    try:
        result = call()
    except Exception as exc:
        why = judge(exc)
        assert why is None, why
        outcomes["refused"] += 1
        return None
    outcomes["worked"] += 1
    return result


@pytest.fixture
def fuzz_topic(client):
    return make_topic(client, unique_name("fuzz"), 2)


def test_produce_arguments_work_or_are_refused_clearly(fuzz_topic):
    outcomes = collections.Counter()
    producer = fuzz_topic.get_producer(linger_ms=10)
    try:
        @settings(max_examples=300, **SETTINGS)
        @given(value=st.one_of(st.binary(max_size=50), anything), partition_key=st.one_of(st.binary(max_size=8),
                                                                                           anything),
               timestamp=timestamps, headers=headers)
        def produce(value, partition_key, timestamp, headers):
            attempt(outcomes, lambda: producer.produce(value, partition_key=partition_key, timestamp=timestamp,
                                                       headers=headers))

        produce()
        attempt(outcomes, lambda: producer.flush(30))  # what was accepted is delivered or reported
    finally:
        producer.stop()
    report("fuzz: produce() arguments", examples=sum(outcomes.values()), **outcomes)
    assert outcomes["worked"] and outcomes["refused"]  # both sides were reached


def test_config_dicts_work_or_are_refused_clearly(fuzz_topic):
    outcomes = collections.Counter()

    @settings(max_examples=60, **SETTINGS)
    @given(config=configs)
    def producer_config(config):
        producer = attempt(outcomes, lambda: fuzz_topic.get_producer(rdkafka_config=config, linger_ms=10))
        if producer is not None:
            producer.stop()

    @settings(max_examples=25, **SETTINGS)
    @given(config=configs)
    def consumer_config(config):
        consumer = attempt(outcomes, lambda: fuzz_topic.get_simple_consumer(rdkafka_config=config,
                                                                            consumer_timeout_ms=100))
        if consumer is not None:
            consumer.stop()

    producer_config()
    consumer_config()
    report("fuzz: rdkafka_config dicts", examples=sum(outcomes.values()), **outcomes)
    assert outcomes["worked"] and outcomes["refused"]
