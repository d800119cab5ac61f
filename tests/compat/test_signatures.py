"""The consumers take every keyword argument pykafka 2.8's do, with pykafka's defaults (but
those pyrdk changes on purpose, each named in the README's Differences from pykafka). The
lists are pykafka 2.8.0's signatures, written out here from its source."""
import inspect

import pytest

from pyrdk import OffsetType, RangeProtocol
from pyrdk.managedbalancedconsumer import ManagedBalancedConsumer
from pyrdk.simpleconsumer import SimpleConsumer

COMMON = dict(fetch_message_max_bytes=1024 * 1024, num_consumer_fetchers=1, auto_commit_enable=False,
              auto_commit_interval_ms=60 * 1000, queued_max_messages=2000, fetch_min_bytes=1,
              fetch_error_backoff_ms=500, fetch_wait_max_ms=100, offsets_channel_backoff_ms=1000,
              offsets_commit_max_retries=5, auto_offset_reset=OffsetType.EARLIEST, consumer_timeout_ms=-1)

PYKAFKA = {
    "SimpleConsumer": dict(consumer_group=None, partitions=None, **COMMON, auto_start=True,
                           reset_offset_on_start=False, compacted_topic=False, generation_id=-1,
                           consumer_id=b"", deserializer=None, reset_offset_on_fetch=True),
    "BalancedConsumer": dict(consumer_group=inspect.Parameter.empty, **COMMON, rebalance_max_retries=5,
                             rebalance_backoff_ms=2 * 1000, zookeeper_connection_timeout_ms=6 * 1000,
                             zookeeper_connect=None, zookeeper_hosts="127.0.0.1:2181", zookeeper=None,
                             auto_start=True, reset_offset_on_start=False, post_rebalance_callback=None,
                             use_rdkafka=False, compacted_topic=False, membership_protocol=RangeProtocol,
                             deserializer=None, reset_offset_on_fetch=True),
    "ManagedBalancedConsumer": dict(consumer_group=inspect.Parameter.empty, **COMMON, rebalance_max_retries=5,
                                    rebalance_backoff_ms=2 * 1000, auto_start=True, reset_offset_on_start=False,
                                    post_rebalance_callback=None, use_rdkafka=False, compacted_topic=True,
                                    heartbeat_interval_ms=3000, membership_protocol=RangeProtocol,
                                    deserializer=None, reset_offset_on_fetch=True),
}
# pyrdk's own defaults (README: Behaviour worth knowing): librdkafka's prefetch of 100000
# messages per partition for the SimpleConsumer, as pykafka's rdkafka consumer had.
CHANGED = {("SimpleConsumer", "queued_max_messages"): 100000}


def consumer_class(name):
    if name == "BalancedConsumer":
        from pyrdk.balancedconsumer import BalancedConsumer
        return BalancedConsumer
    return {"SimpleConsumer": SimpleConsumer, "ManagedBalancedConsumer": ManagedBalancedConsumer}[name]


@pytest.mark.parametrize("name", sorted(PYKAFKA))
def test_every_pykafka_argument_is_taken_in_pykafkas_order_with_its_default(name):
    params = inspect.signature(consumer_class(name)).parameters
    expected = PYKAFKA[name]
    names = list(params)
    assert names[:2] == ["topic", "cluster"]
    assert names[2:2 + len(expected)] == list(expected), "pykafka's positional order"
    defaults = {key: params[key].default for key in expected}
    assert defaults == {key: CHANGED.get((name, key), value) for key, value in expected.items()}
