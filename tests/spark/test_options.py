"""pyrdk.spark.options and the pure parts of pyrdk.spark.offsets: no Spark, no broker."""
import pytest

from pyrdk.exceptions import ConfigurationError
from pyrdk.spark.offsets import OffsetRange, _cut, from_json, rate_limit, split, to_json
from pyrdk.spark.options import ReadOptions, WriteOptions

HOSTS = {"kafka.bootstrap.servers": "127.0.0.1:9"}


def read(streaming=False, **options):
    return ReadOptions(dict(HOSTS, **options), streaming)


def test_defaults_follow_spark():
    opts = read(subscribe="a, b,a")
    assert opts.subscription == ("subscribe", ["a", "b"])
    assert (opts.starting.kind, opts.ending.kind) == ("earliest", "latest")
    assert read(streaming=True, subscribe="a").starting.kind == "latest"
    assert opts.fail_on_data_loss is True and opts.include_headers is False
    assert opts.min_partitions is None and opts.poll_timeout_ms == 120000


def test_option_names_are_case_insensitive_and_kafka_properties_pass_through():
    opts = ReadOptions({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "Subscribe": "t", "kafka.client.id": "me",
                        "includeHeaders": "TRUE", "minPartitions": "8"}, False)
    assert opts.hosts == "h:1" and opts.rdkafka_config == {"client.id": "me"}
    assert opts.include_headers is True and opts.min_partitions == 8


@pytest.mark.parametrize("options, named", [
    ({"subscribe": "t", "assign": '{"t": [0]}'}, ["'subscribe'", "'assign'"]),
    ({"subscribe": "t", "subscribePattern": "t.*"}, ["'subscribe'", "'subscribePattern'"]),
    ({}, ["'subscribe'", "'subscribePattern'", "'assign'", "none is"]),
])
def test_exactly_one_subscription(options, named):
    with pytest.raises(ConfigurationError) as info:
        read(**options)
    for name in named:
        assert name in str(info.value)


@pytest.mark.parametrize("options, named", [
    ({"startingOffsets": '{"t": {"0": 1'}, "'startingOffsets' is not valid JSON"),
    ({"startingOffsets": '{"t": [0]}'}, "'startingOffsets' must be"),
    ({"startingOffsets": '{"t": {"x": 1}}'}, "'startingOffsets' must be"),
    ({"startingOffsets": '{"t": {"0": -3}}'}, "'startingOffsets' must be"),
    ({"startingOffsets": '{"t": {"\u00b2": 1}}'}, "'startingOffsets' must be"),  # a digit, but not 0-9
    ({"startingOffsets": '{"t": {"0": -1}}'}, "'startingOffsets' cannot use -1 (latest) in a batch query"),
    ({"startingOffsets": "latest"}, "'startingOffsets' cannot be 'latest' in a batch query"),
    ({"endingOffsets": "earliest"}, "'endingOffsets' cannot be 'earliest'"),
    ({"endingOffsets": '{"t": {"0": -2}}'}, "'endingOffsets' cannot use -2"),
    ({"assign": "[0, 1]"}, "'assign' must map topics"),
    ({"subscribePattern": "("}, "'subscribePattern' is not a valid regular expression"),
    ({"startingTimestamp": "yesterday"}, "'startingTimestamp' must be a timestamp"),
    ({"failOnDataLoss": "maybe"}, "'failOnDataLoss' must be 'true' or 'false'"),
    ({"minPartitions": "0"}, "'minPartitions' must be an integer >= 1"),
    ({"kafka.auto.offset.reset": "earliest"}, "'kafka.auto.offset.reset' is not supported"),
])
def test_bad_read_options_name_the_option(options, named):
    options.setdefault("assign" if "assign" in options else "subscribe", "t")
    if "subscribePattern" in options or "assign" in options:
        options.pop("subscribe", None)
    with pytest.raises(ConfigurationError) as info:
        read(**options)
    assert named in str(info.value)


def test_unknown_option_names_are_refused_with_the_likely_one():
    with pytest.raises(ConfigurationError, match="unknown option 'startingoffset' \\(did you mean 'startingOffsets'"):
        read(subscribe="t", startingOffset="earliest")
    with pytest.raises(ConfigurationError, match="unknown option 'topics' \\(did you mean 'topic'"):
        WriteOptions(dict(HOSTS, topics="t"))
    with pytest.raises(ConfigurationError, match="'minoffsetspertrigger' is not supported"):
        read(subscribe="t", minOffsetsPerTrigger="10")
    with pytest.raises(ConfigurationError, match="unknown option 'groupid': the options are"):
        read(subscribe="t", groupId="g")  # no likely one: groupIdPrefix means nothing here
    with pytest.raises(ConfigurationError, match="'path' is not supported: Kafka has no paths"):
        read(subscribe="t", path="t")
    # Spark's own options that mean nothing here, and what Spark adds to a stream's sink.
    read(subscribe="t", groupIdPrefix="g", **{"fetchOffset.numRetries": "3"})
    WriteOptions(dict(HOSTS, topic="t", checkpointLocation="/tmp/c", queryName="q"))


def test_bootstrap_servers_are_required():
    with pytest.raises(ConfigurationError, match="'kafka.bootstrap.servers' is required"):
        ReadOptions({"subscribe": "t"}, False)
    with pytest.raises(ConfigurationError, match="'kafka.bootstrap.servers' is required"):
        WriteOptions({"topic": "t"})
    for bad in ("not a host", "h:99999", "h:1,gopher://h:2"):
        with pytest.raises(ConfigurationError, match="option 'kafka.bootstrap.servers': '"):
            ReadOptions({"kafka.bootstrap.servers": bad, "subscribe": "t"}, False)
        with pytest.raises(ConfigurationError, match="option 'kafka.bootstrap.servers': '"):
            WriteOptions({"kafka.bootstrap.servers": bad, "topic": "t"})


def test_kafka_properties_librdkafka_refuses_fail_at_load_and_save_naming_the_option():
    """Not in a task: load() and save() check the kafka.* properties as a client would."""
    for options in ({"kafka.bogus.prop": "1"}, {"kafka.linger.ms": "soon"}):
        name = next(iter(options))
        with pytest.raises(ConfigurationError, match="option '%s': librdkafka refused" % name):
            read(subscribe="t", **options)
        with pytest.raises(ConfigurationError, match="option '%s': librdkafka refused" % name):
            WriteOptions(dict(HOSTS, topic="t", **options))
    assert WriteOptions(dict(HOSTS, **{"kafka.linger.ms": "5"})).rdkafka_config == {"linger.ms": "5"}


def test_per_partition_offsets_and_timestamps():
    opts = read(subscribe="a", startingOffsets='{"a": {"0": 5, "1": -2}}', endingOffsets='{"a": {"0": -1, "1": 9}}')
    assert opts.starting.value == {("a", 0): 5, ("a", 1): -2}
    assert opts.ending.value == {("a", 0): -1, ("a", 1): 9}
    opts = read(subscribe="a", startingTimestamp="1700000000000", startingOffsets="earliest")
    assert (opts.starting.kind, opts.starting.value) == ("timestamp", 1700000000000)


def test_offsets_json_round_trip():
    offsets = {("a", 0): 3, ("a", 10): 7, ("b", 1): 0}
    assert to_json(offsets) == {"a": {"0": 3, "10": 7}, "b": {"1": 0}}
    assert from_json(to_json(offsets)) == offsets


def test_split_into_min_partitions_in_proportion():
    ranges = [OffsetRange("t", 0, 0, 900), OffsetRange("t", 1, 100, 400)]
    pieces = split(ranges, min_partitions=4)
    assert [(r.partition, r.start, r.end) for r in pieces] == [
        (0, 0, 300), (0, 300, 600), (0, 600, 900), (1, 100, 400)]
    assert split(ranges, min_partitions=2) == ranges
    assert [(r.start, r.end) for r in split([OffsetRange("t", 0, 0, 10)], max_records=4)] == [
        (0, 3), (3, 6), (6, 10)]


def test_min_partitions_beyond_the_offsets_makes_one_range_per_offset():
    assert [(r.start, r.end) for r in _cut(OffsetRange("t", 0, 10, 13), 5)] == [(10, 11), (11, 12), (12, 13)]
    assert len(split([OffsetRange("t", 0, 0, 30), OffsetRange("t", 1, 0, 20)], min_partitions=2 ** 62)) == 50


def test_rate_limit_shares_in_proportion_to_backlog():
    starts = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    ends = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}
    assert rate_limit(starts, ends, 200) == {("t", 0): 150, ("t", 1): 150, ("t", 2): 50}
    assert rate_limit(starts, ends, 1000) == ends
    assert rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 1000, ("t", 1): 1}, 10) == {("t", 0): 9, ("t", 1): 1}


@pytest.mark.parametrize("option", ["startingOffsets", "endingOffsets", "startingTimestamp", "endingTimestamp",
                                    "startingOffsetsByTimestamp", "endingOffsetsByTimestamp"])
def test_an_empty_offset_option_is_refused_not_taken_for_the_default(option):
    """As Spark's connector: an option given empty (a config variable left unset, say) is a bad
    value, not the default: "" read from earliest in a batch and from latest in a stream."""
    with pytest.raises(ConfigurationError, match="option '%s'" % option):
        read(subscribe="t", **{option: ""})
    if option.startswith("starting"):
        with pytest.raises(ConfigurationError, match="option '%s'" % option):
            read(streaming=True, subscribe="t", **{option: ""})


def test_an_empty_ending_option_fails_a_stream_naming_it():
    from pyrdk.spark.options import check_stream
    with pytest.raises(ConfigurationError, match="option 'endingOffsets' is not valid in a streaming query"):
        check_stream(dict(HOSTS, subscribe="t", endingOffsets=""))


def test_a_bad_offsets_by_timestamp_names_what_it_takes():
    with pytest.raises(ConfigurationError) as info:
        read(subscribe="t", startingOffsetsByTimestamp='{"t": {"0": -1}}')
    assert "'earliest'" not in str(info.value)  # it takes JSON only
    assert "must be JSON mapping each topic to {partition: timestamp}" in str(info.value)
