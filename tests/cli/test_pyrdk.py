"""The ``pyrdk`` command, run for real against the session broker and ZooKeeper: output,
``--json`` documents and exit codes (0 done, 1 failed with one line, 2 usage)."""
import datetime
import json
import logging
import os
import signal
import subprocess
import sys
import time

import pytest

from pyrdk.testing import free_port
from tests.cli.util import BIN, assert_one_line_error, run
from tests.fix_kafka import commit, fill, make_topic, running_member, tansu_gap, unique_name
from tests.rd.util import default_sigint, http_listener

pytestmark = pytest.mark.kafka

# -- entry points, errors, usage -------------------------------------------------------------------

def test_console_scripts_and_module_run():
    assert run(["--version"]).out.startswith("pyrdk, version")
    for program in ([os.path.join(BIN, "pyrdk")], [os.path.join(BIN, "kafka-tools")], [sys.executable, "-m", "pyrdk"]):
        result = run(["--help"], program=program)
        assert result.code == 0, result
    assert "print_consumer_lag" in result.out and "lag" in result.out and "offsets" in result.out


def test_unknown_topic_is_one_line_and_not_created(kafka_hosts, client):
    name = unique_name("nosuch")
    for args in (["topic", "describe", name], ["consume", name], ["produce", name], ["lag", "g", "--topic", name]):
        assert_one_line_error(run(args, kafka_hosts, stdin=b""), "unknown topic %r" % name)
    assert name.encode() not in client.cluster.list_topics()


def test_unreachable_broker_is_one_line():
    hosts = "127.0.0.1:%d" % free_port()  # nothing listens there
    result = run(["--timeout-ms", 500, "topics"], hosts)
    assert_one_line_error(result, "no broker of %s" % hosts)


def test_a_web_server_at_the_address_is_named_in_one_line():
    with http_listener() as (port, _):
        result = run(["topics"], "127.0.0.1:%d" % port)
    assert_one_line_error(result, 'that size is the bytes "HTTP": a web server or proxy answered there, not a '
                                  'Kafka listener: check --hosts')


@pytest.mark.parametrize("args", [
    ["consume", "t", "--from", "yesterday"],
    ["tail", "t", "--from", "2024-13-45"],
    ["offsets", "reset", "g", "--to-earliest", "--to-latest"],
    ["offsets", "reset", "g"],
    ["no-such-command"],
    ["lag"],
    ["config", "alter", "--topic", "t", "--set", "noequals"],
    ["lag", ""],
    ["offsets", "reset", " ", "--to-earliest"],
    ["consume", "t", "--group", ""],
    ["lag", "g", "--watch", "nan"],
    ["lag", "g", "--watch", "inf"],
    ["lag", "g", "--watch", "1e10"],
    ["consume", "t", "--from", "99999999999999999999"],
    ["--timeout-ms", 1, "topics"],
    ["--timeout-ms", 300001, "topics"],
])
def test_usage_errors_exit_2(args):
    result = run(["--timeout-ms", 500] + args, "127.0.0.1:%d" % free_port())
    assert result.code == 2, result
    assert "Traceback" not in result.err and "Usage:" in result.err


@pytest.mark.parametrize("args", [
    [b"lag", b"g\xff"],
    ["topic", "describe", b"\xfe\xff"],
    ["produce", "t", "--header", b"k=\xff"],
    ["offsets", "reset", b"g\xff", "--to-earliest"],
])
def test_an_argument_that_is_not_utf8_is_a_usage_error_naming_it(kafka_hosts, args):
    result = run(args, kafka_hosts, stdin=b"")
    assert result.code == 2, result
    assert "is not UTF-8" in result.err and "Traceback" not in result.err, result
    assert "UnicodeEncodeError" not in result.err, result


def test_a_tls_cluster_is_reached_with_rdkafka_properties(tls_broker, tls_certs):
    """The commands take librdkafka's properties (-X, or PYRDK_RDKAFKA_CONFIG): a TLS or SASL
    cluster is reachable, and the failure without them names the options to give."""
    hosts = tls_broker.bootstrap_servers
    plain = run(["--timeout-ms", 3000, "topics"], hosts)
    assert_one_line_error(plain, "a TLS listener", "-X security.protocol=ssl")
    assert "security_protocol" not in plain.err and "ssl_config" not in plain.err, plain
    tls = ["-X", "security.protocol=ssl", "-X", "ssl.ca.location=%s" % tls_certs.ca.certfile]
    result = run(tls + ["topics", "--json"], hosts)
    assert result.code == 0 and isinstance(result.json, list), result
    result = run(["topics"], hosts, env={"PYRDK_RDKAFKA_CONFIG": "security.protocol=ssl ssl.ca.location=%s"
                                         % tls_certs.ca.certfile})
    assert result.code == 0, result
    result = run(["print_topics"], env={"PYRDK_RDKAFKA_CONFIG": " ".join(tls[1::2])},
                 program=[os.path.join(BIN, "kafka-tools"), "-b", hosts])
    assert result.code == 0 and "Topic" in result.out, result
    assert run(["-X", "no-equals-sign", "topics"], hosts).code == 2


def test_hints_name_the_options_of_the_command_not_the_python_arguments(tls_broker, kafka_hosts, tmp_path):
    """A hint says what to give on the command line (-X NAME=VALUE, --hosts), not which
    argument of KafkaClient or SslConfig to set."""
    missing = str(tmp_path / "no-such-ca.pem")
    cases = [
        (["--timeout-ms", 3000, "-X", "security.protocol=ssl", "topics"], kafka_hosts,
         ["no broker answered the TLS handshake", "-X security.protocol=plaintext"]),
        (["-X", "security.protocol=ssl", "-X", "ssl.ca.location=%s" % missing, "topics"], tls_broker.bootstrap_servers,
         ["ssl.ca.location=%r: no such file" % missing]),
        (["-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=OAUTHBEARER", "topics"], kafka_hosts,
         ["no token to send", "-X sasl.oauthbearer.method=oidc"]),
        (["-X", "bootstrap.servers=nowhere:x", "topics"], kafka_hosts, ["-X bootstrap.servers: 'nowhere:x'"]),
        (["topics"], "nowhere:x", ["--hosts: 'nowhere:x'"]),
    ]
    for args, hosts, fragments in cases:
        result = run(args, hosts)
        assert_one_line_error(result, *fragments)
        for python in ("security_protocol", "ssl_config", "SslConfig", "oauth_cb", "rdkafka_config"):
            assert python not in result.err, result


@pytest.mark.parametrize("sasl_listener", ["SASL_PLAINTEXT"], indirect=True)
def test_the_sasl_hint_names_the_options_of_the_command(sasl_listener):
    result = run(["--timeout-ms", 3000, "topics"], sasl_listener.hosts)
    assert_one_line_error(result, "a SASL listener", "-X security.protocol=sasl_plaintext", "-X sasl.password=")
    assert "sasl_plain_password" not in result.err and "security_protocol" not in result.err, result


def test_the_environments_properties_are_split_as_a_shell_splits_words(kafka_hosts):
    """A quoted value of ``$PYRDK_RDKAFKA_CONFIG`` holds spaces (a password may), and a piece
    of an unquoted one is refused without being shown."""
    result = run(["topics"], kafka_hosts, env={"PYRDK_RDKAFKA_CONFIG": "client.id=ok security.protocol='no such'"})
    assert_one_line_error(result, "'no such'")  # librdkafka was given the whole value
    result = run(["topics"], kafka_hosts, env={"PYRDK_RDKAFKA_CONFIG": "sasl.password=hunter two"})
    assert result.code == 2 and "not NAME=VALUE" in result.err and "two" not in result.err, result
    result = run(["topics"], kafka_hosts, env={"PYRDK_RDKAFKA_CONFIG": "sasl.password='unclosed"})
    assert result.code == 2 and "quote" in result.err and "unclosed" not in result.err, result


# -- topics, configs, partitions ---------------------------------------------------------------------

def test_topics_and_topic_describe(kafka_hosts, client, topic_name):
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 3, 1: 1})
    listed = {t["topic"]: t for t in run(["topics", "--json"], kafka_hosts).json}
    assert listed[topic_name] == {"topic": topic_name, "partitions": 2, "replication": 1}
    doc = run(["topic", "describe", topic_name, "--json"], kafka_hosts).json
    assert [(p["partition"], p["low"], p["high"]) for p in doc["partitions"]] == [(0, 0, 3), (1, 0, 1)]
    assert all(p["leader"] in p["isr"] for p in doc["partitions"])
    text = run(["topic", "describe", topic_name], kafka_hosts)
    assert text.code == 0 and "topic %s: 2 partitions, replication 1, 4 messages" % topic_name in text.out


def test_topics_lists_internal_ones_on_request(kafka_hosts, client):
    internal = "__" + unique_name("internal")
    client.cluster.create_topics([(internal, 1, 1)])
    assert internal not in run(["topics"], kafka_hosts).out
    assert internal in run(["topics", "--internal"], kafka_hosts).out
    assert internal not in run(["print_topics"], kafka_hosts).out, "pykafka's print_topics leaves them out"
    assert run(["topic", "describe", internal, "--json"], kafka_hosts).json["topic"] == internal
    assert run(["consume", internal], kafka_hosts).code == 0
    assert run(["topic", "delete", internal], kafka_hosts).code == 0
    assert internal.encode() not in client.cluster.list_topics(include_internal=True)


def test_topic_create_and_delete(kafka_hosts, client, topic_name):
    result = run(["topic", "create", topic_name, "-p", 3, "--config", "retention.ms=60000"], kafka_hosts)
    assert result.code == 0, result
    client.update_cluster()
    assert len(client.topics[topic_name].partitions) == 3
    assert_one_line_error(run(["topic", "create", topic_name], kafka_hosts), "already exists")
    assert run(["topic", "delete", topic_name], kafka_hosts).code == 0
    assert topic_name.encode() not in client.cluster.list_topics()


def test_config_alter_then_describe(kafka_hosts, topic):
    name = topic.name.decode()
    result = run(["config", "alter", "--topic", name, "--set", "retention.ms=3600000", "--set",
                  "cleanup.policy=compact"], kafka_hosts)
    assert result.code == 0 and "retention.ms = 3600000" in result.out, result
    assert run(["config", "alter", "--topic", name, "--delete", "cleanup.policy"], kafka_hosts).code == 0
    doc = run(["config", "describe", "--topic", name, "--all", "--json"], kafka_hosts).json
    assert doc["retention.ms"]["value"] == "3600000"
    assert doc.get("cleanup.policy", {}).get("value") != "compact"
    assert_one_line_error(run(["config", "describe", "--topic", unique_name("nosuch")], kafka_hosts), "unknown topic")
    assert run(["config", "describe"], kafka_hosts).code == 2


@tansu_gap("DescribeConfigs names every config's source DEFAULT_CONFIG")
def test_config_describe_shows_what_is_set(kafka_hosts, topic):
    name = topic.name.decode()
    assert run(["config", "alter", "--topic", name, "--set", "retention.ms=3600000"], kafka_hosts).code == 0
    assert "retention.ms" in run(["config", "describe", "--topic", name, "--json"], kafka_hosts).json


@tansu_gap("CreatePartitions is not supported")
def test_partitions_add(kafka_hosts, client, topic_name):
    make_topic(client, topic_name, 1)
    result = run(["--timeout-ms", 3000, "partitions", "add", topic_name, "--total", 3], kafka_hosts)
    assert result.code == 0, result
    client.update_cluster()
    assert len(client.topics[topic_name].partitions) == 3


def test_partitions_add_refuses_to_shrink(kafka_hosts, topic):
    assert_one_line_error(run(["partitions", "add", topic.name.decode(), "--total", 2], kafka_hosts),
                          "has 4 partitions already")


# -- records ---------------------------------------------------------------------------------------

def test_an_empty_key_separator_is_refused_not_taken_as_no_keys(kafka_hosts, topic_name):
    result = run(["produce", topic_name, "--key-separator", ""], kafka_hosts, stdin=b"key:value\n")
    assert_one_line_error(result, "--key-separator must not be empty")


def test_produce_then_consume_round_trip(kafka_hosts, client, topic_name):
    make_topic(client, topic_name, 3)
    lines = b"".join(b"key%d:value %d\n" % (i % 5, i) for i in range(300))
    result = run(["produce", topic_name, "--key-separator", ":", "--header", "origin=cli", "--json"], kafka_hosts,
                 stdin=lines)
    assert result.code == 0 and result.json == {"topic": topic_name, "produced": 300}, result
    records = [json.loads(line) for line in
               run(["consume", topic_name, "--format", "json"], kafka_hosts).out.splitlines()]
    assert sorted(r["value"] for r in records) == sorted("value %d" % i for i in range(300)), "read to the end, once"
    assert all(r["headers"] == [["origin", "cli"]] and r["topic"] == topic_name for r in records)
    by_key = {}
    for r in records:
        by_key.setdefault(r["key"], set()).add(r["partition"])
    assert sorted(by_key) == ["key%d" % i for i in range(5)] and all(len(p) == 1 for p in by_key.values()), \
        "one key, one partition"
    kv = run(["consume", topic_name, "--format", "kv", "--count", 7], kafka_hosts)
    assert len(kv.out.splitlines()) == 7 and all("\t" in line for line in kv.out.splitlines())
    text = run(["produce", topic_name], kafka_hosts, stdin=b"one\ntwo\n")
    assert text.out.strip() == "produced 2 messages to %s" % topic_name


def test_repeated_headers_are_produced_and_printed_without_loss(kafka_hosts, client, topic_name):
    """A header name given twice keeps both values, in order, on the way in (--header) and
    out (--format json: [name, value] pairs); a value that is not UTF-8 comes out as base64."""
    topic = make_topic(client, topic_name, 1)
    result = run(["produce", topic_name, "--header", "trace=a", "--header", "trace=b", "--header", "x=\u00e9"],
                 kafka_hosts, stdin=b"one\n")
    assert result.code == 0, result
    with topic.get_sync_producer() as producer:
        producer.produce(b"two", headers=[("bin", b"\xff\x00"), ("bin", b"ok")])
    records = [json.loads(line) for line in
               run(["consume", topic_name, "--format", "json"], kafka_hosts).out.splitlines()]
    assert [r["headers"] for r in records] == [[["trace", "a"], ["trace", "b"], ["x", "\u00e9"]],
                                               [["bin", {"base64": "/wA="}], ["bin", "ok"]]]


def test_produce_length_prefixed_records_from_a_file(kafka_hosts, client, topic_name, tmp_path):
    make_topic(client, topic_name, 1)
    values = [b"line one\nwith a newline", b"", b"\x00\xff binary"]
    path = tmp_path / "records.bin"
    path.write_bytes(b"".join(len(v).to_bytes(4, "big") + v for v in values))
    result = run(["produce", topic_name, "--file", path, "--format", "length-prefixed"], kafka_hosts)
    assert result.code == 0, result
    records = [json.loads(line) for line in
               run(["consume", topic_name, "--format", "json"], kafka_hosts).out.splitlines()]
    assert [r.get("value") for r in records[:2]] == ["line one\nwith a newline", ""]
    assert records[2]["value_base64"] == "AP8gYmluYXJ5"
    path.write_bytes(b"\x00\x00\x00\x09short")
    assert_one_line_error(run(["produce", topic_name, "--file", path, "--format", "length-prefixed"], kafka_hosts),
                          "ends inside a record")


def test_produce_says_how_many_records_were_sent_before_one_it_cannot_send(kafka_hosts, client, topic_name):
    make_topic(client, topic_name, 1)
    result = run(["produce", topic_name], kafka_hosts, stdin=b"a\nb\n" + b"x" * 11000000 + b"\nc\n")
    assert_one_line_error(result, "record 3; the 2 before it were produced")
    assert run(["consume", topic_name], kafka_hosts).out.split() == ["a", "b"]


def test_produce_interrupted_says_how_many_records_it_produced(kafka_hosts, client, topic_name):
    """Ctrl-C while produce waits for more input: exit 130, what was read is delivered, and
    stderr says how many records that was (it said nothing)."""
    topic = make_topic(client, topic_name, 1)
    proc = subprocess.Popen([sys.executable, "-m", "pyrdk", "--hosts", kafka_hosts, "produce", topic_name],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=default_sigint)
    try:
        proc.stdin.write(b"a\nb\nc\n")
        proc.stdin.flush()
        with topic.get_simple_consumer(consumer_timeout_ms=60000) as reader:
            assert [reader.consume().value for _ in range(3)] == [b"a", b"b", b"c"]
        proc.send_signal(signal.SIGINT)
        proc.wait(60)  # stdin still open: its end (communicate() closes it) is no end of the input
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "interrupted: produced 3 messages to %s" % topic_name in err, err


def test_consume_from_an_offset(kafka_hosts, client, topic_name):
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 6})
    assert run(["consume", topic_name, "--from", 4], kafka_hosts).out.split() == ["m4", "m5"]
    assert run(["consume", topic_name, "--from", 0], kafka_hosts).out.split() == ["m%d" % i for i in range(6)]
    assert run(["consume", topic_name, "--from", "latest"], kafka_hosts).out == ""
    assert run(["consume", topic_name, "--partition", 7], kafka_hosts).code == 1


def test_consume_from_an_offset_past_the_end_of_a_partition(kafka_hosts, client, topic_name):
    """A partition that ends before --from OFFSET prints nothing (its position moves back to
    its start, which was not asked for); the others print from OFFSET."""
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 3, 1: 8})
    result = run(["consume", topic_name, "--from", 5, "--format", "json"], kafka_hosts)
    assert result.code == 0, result
    printed = sorted((doc["partition"], doc["offset"]) for doc in map(json.loads, result.out.splitlines()))
    assert printed == [(1, 5), (1, 6), (1, 7)]
    assert run(["consume", topic_name, "--from", 5, "--count", 2], kafka_hosts).out.split() == ["m5", "m6"]


@pytest.mark.mock
def test_consume_of_a_partition_whose_leader_is_down_ends_with_one_line(mock_cluster):
    """Without --follow, a partition that brings neither a record nor its end within
    --timeout-ms ends the read with an error naming it, after what the others held (it
    waited for ever, silent)."""
    from pyrdk import KafkaClient
    hosts = mock_cluster.bootstrap_servers
    mock_cluster.create_topic("t", 2, 1)
    mock_cluster.set_partition_leader("t", 0, 1)
    mock_cluster.set_partition_leader("t", 1, 2)
    with KafkaClient(hosts=hosts) as client:
        fill(client.topics["t"], {0: 1, 1: 2})  # partition 1's m0 and m1 must not be printed
    mock_cluster.broker_down(2)
    result = run(["--timeout-ms", 1000, "consume", "t"], hosts)
    assert_one_line_error(result, "topic t partition(s) [1]: no record and no end of the partition within "
                                  "--timeout-ms=1000")
    assert result.out.split() == ["m0"]


def test_consume_from_a_datetime(kafka_hosts, client, topic_name):
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 3})
    time.sleep(0.05)
    later = datetime.datetime.now(datetime.timezone.utc).isoformat()
    fill(topic, {0: 2})
    assert run(["consume", topic_name, "--from", later], kafka_hosts).out.split() == ["m0", "m1"]


def test_consume_as_a_group_commits_and_goes_on(kafka_hosts, client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 5})
    group = group_name.decode()
    assert run(["consume", topic_name, "--group", group, "--count", 3], kafka_hosts).out.split() == ["m0", "m1", "m2"]
    assert run(["consume", topic_name, "--group", group, "--no-commit"], kafka_hosts).out.split() == ["m3", "m4"]
    assert run(["consume", topic_name, "--group", group], kafka_hosts).out.split() == ["m3", "m4"]
    assert topic.consumer_lag(group_name)[0].committed == 5
    # --no-commit on a new group commits nothing, not even where it started
    fresh = unique_name("group")
    for start in ([], ["--from", "earliest"]):
        assert run(["consume", topic_name, "--group", fresh, "--no-commit"] + start, kafka_hosts).out.split() == \
            ["m%d" % i for i in range(5)]
    assert topic.consumer_lag(fresh.encode())[0].committed is None


def test_a_ctrl_c_inside_a_batch_commits_only_what_was_printed(kafka_hosts, client, topic_name, group_name,
                                                               monkeypatch):
    """consume --group G: a Ctrl-C while a batch is being printed (a backlog being caught up
    spends its time there) committed the consumer's positions, past the whole batch, so the
    group skipped the messages of the batch never printed."""
    from click.testing import CliRunner

    from pyrdk.cli import records
    from pyrdk.cli.main import cli
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 10})
    value = records._format("value", topic_name)
    printed = []

    def interrupted_at_the_fourth(m):  # as SIGINT's handler raises, between two messages
        if len(printed) == 3:
            raise KeyboardInterrupt
        printed.append(m.offset)
        return value(m)

    monkeypatch.setattr(records, "_format", lambda fmt, topic: interrupted_at_the_fourth)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    loggers = [logging.getLogger(name) for name in ("pyrdk", "kazoo")]
    levels = [logger.level for logger in loggers]  # the command quiets them: the next tests' caplog needs them
    try:
        result = CliRunner().invoke(cli, ["--hosts", kafka_hosts, "consume", topic_name, "--group",
                                          group_name.decode(), "--follow"])
    finally:
        signal.signal(signal.SIGINT, before)
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
    assert result.output.split() == ["m0", "m1", "m2"], result.output
    assert topic.consumer_lag(group_name)[0].committed == 3, "m3 to m9 were never printed"


def _produce_until(proc, topic, what):
    """Produce one message at a time until ``proc`` exits (bounded)."""
    with topic.get_producer(linger_ms=1) as producer:
        for i in range(600):
            if proc.poll() is not None:
                return
            producer.produce(b"%s-%d" % (what, i))
            producer.flush()
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the command did not end after 600 messages")


def test_tail_prints_new_messages(kafka_hosts, client, topic_name):
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 3})
    proc = subprocess.Popen([sys.executable, "-m", "pyrdk", "--hosts", kafka_hosts, "tail", topic_name, "--count", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _produce_until(proc, topic, b"new")
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    lines = out.decode().split()
    assert len(lines) == 2 and all(line.startswith("new-") for line in lines), "only messages after the start"


# -- groups, lag, offsets ------------------------------------------------------------------------------

def test_lag_per_partition_and_total(kafka_hosts, client, topic_name, group_name):
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 5, 1: 2})
    commit(topic, group_name, {0: 1})
    doc = run(["lag", group_name.decode(), "--json"], kafka_hosts).json
    assert doc["total"] == 6
    assert [(p["partition"], p["committed"], p["log_end"], p["lag"]) for p in doc["partitions"]] == \
        [(0, 1, 5, 4), (1, None, 2, 2)]
    text = run(["lag", group_name.decode()], kafka_hosts)
    assert "group %s: lag 6" % group_name.decode() in text.out
    assert_one_line_error(run(["lag", unique_name("nosuch")], kafka_hosts), "no committed offsets")


def test_lag_watch_refreshes_until_interrupted(kafka_hosts, client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 2})
    commit(topic, group_name, {0: 1})
    proc = subprocess.Popen([sys.executable, "-m", "pyrdk", "--hosts", kafka_hosts, "lag", group_name.decode(),
                             "--watch", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=default_sigint, env=dict(os.environ, PYTHONFAULTHANDLER="1"))
    try:
        seen = 0
        while seen < 3:
            line = proc.stdout.readline()
            assert line, "the command ended: %s" % proc.stderr.read()
            seen += line.startswith(b"group %s: lag 1" % group_name)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints where each thread is
            err = proc.communicate(timeout=30)[1].decode(errors="replace")
            pytest.fail("lag --watch went on after SIGINT; its threads:\n%s" % err[-8000:])
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0


def test_a_ctrl_c_python_dropped_inside_a_del_still_ends_a_watch(monkeypatch):
    """What lost lag --watch's Ctrl-C once: SIGINT's handler ran inside a ``__del__`` (click's
    stream wrapper, freed after a flush), where Python prints the KeyboardInterrupt as
    "Exception ignored in" and goes on. The loop's check() raises it again."""
    from pyrdk.cli.common import UntilInterrupted
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: dropped.append(unraisable.exc_type))

    class InterruptedWhileFreed:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):  # the handler runs at one of these bytecodes, inside __del__
                pass

    # Python's own handler, as a command run from a terminal has it (a background job's
    # pytest, make test &, starts with SIGINT ignored, which UntilInterrupted leaves alone)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with UntilInterrupted() as until:
            with pytest.raises(KeyboardInterrupt):
                InterruptedWhileFreed()  # freed at once
                assert dropped == [KeyboardInterrupt]  # Python dropped it...
                until.check()  # ...and the check raises it again
        assert until.interrupted and dropped == [KeyboardInterrupt]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_sigint_the_process_ignores_stays_ignored_by_a_watch():
    """A command started with SIGINT ignored (a script's ``pyrdk consume --follow &``, nohup)
    runs on at a SIGINT, as Python leaves SIG_IGN in place: UntilInterrupted sets no handler
    over it, nor over one the program set."""
    from pyrdk.cli.common import UntilInterrupted
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with UntilInterrupted() as until:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):  # where a handler would run
                pass
            until.check()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN and not until.interrupted
    finally:
        signal.signal(signal.SIGINT, before)


def test_lag_watch_into_a_closed_pipe_ends_quietly(kafka_hosts, client, topic_name, group_name):
    # pyrdk lag G --watch | head -3: the reader goes away, which is how the command ends
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 2})
    commit(topic, group_name, {0: 1})
    proc = subprocess.Popen([sys.executable, "-m", "pyrdk", "--hosts", kafka_hosts, "lag", group_name.decode(),
                             "--watch", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline().startswith(b"group %s: lag 1" % group_name), proc.stderr.read()
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (proc.returncode, err) == (0, b"")


def test_offsets_reset_plans_then_applies(kafka_hosts, client, topic_name, group_name):
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 6, 1: 4})
    commit(topic, group_name, {0: 5, 1: 1})
    group = group_name.decode()
    dry = run(["offsets", "reset", group, "--to-earliest", "--dry-run", "--json"], kafka_hosts)
    assert [(p["partition"], p["from"], p["to"]) for p in dry.json["partitions"]] == [(0, 5, 0), (1, 1, 0)]
    assert dry.json["applied"] is False
    assert topic.consumer_lag(group_name)[0].committed == 5, "a dry run changes nothing"
    assert run(["offsets", "reset", group, "--topic", topic_name, "--partition", 0, "--shift-by", -2],
               kafka_hosts).code == 0
    assert run(["offsets", "reset", group, "--to-offset", 99, "--partition", 1], kafka_hosts).code == 0
    lag = topic.consumer_lag(group_name)
    assert (lag[0].committed, lag[1].committed) == (3, 4), "shifted, and clamped to the log end"
    assert run(["offsets", "reset", group, "--to-latest"], kafka_hosts).code == 0
    assert sum(row.lag for row in topic.consumer_lag(group_name).values()) == 0


def test_offsets_reset_refuses_a_partition_that_matches_none(kafka_hosts, client, topic_name, group_name):
    """--partition 0 --partition 9 on a 2-partition topic reset partition 0 and said nothing
    of 9 (an error only when no --partition matched): nothing is reset, and 9 is named."""
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 3, 1: 3})
    commit(topic, group_name, {0: 2})
    commit(topic, group_name, {1: 2})
    result = run(["offsets", "reset", group_name.decode(), "--topic", topic_name, "--to-earliest",
                  "--partition", 0, "--partition", 9], kafka_hosts)
    assert_one_line_error(result, "--partition [9]")
    assert {p: r.committed for p, r in topic.consumer_lag(group_name).items()} == {0: 2, 1: 2}


def test_offsets_reset_refuses_a_running_group(kafka_hosts, client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 3})
    commit(topic, group_name, {0: 2})
    consumer = running_member(topic, group_name)
    try:
        result = run(["offsets", "reset", group_name.decode(), "--to-earliest"], kafka_hosts)
    finally:
        consumer.stop()
    assert_one_line_error(result, "stop its members")


def test_groups_describe_and_delete(kafka_hosts, client, topic, group_name):
    commit(topic, group_name, {0: 1})
    group = group_name.decode()
    listed = {g["group"]: g for g in run(["groups", "--json"], kafka_hosts).json}
    assert listed[group]["coordination"] == "kafka"
    doc = run(["group", "describe", group, "--json"], kafka_hosts).json
    assert (doc["group"], doc["state"], doc["members"]) == (group, "Empty", [])
    # the same word in both commands; the coordinator is a broker's id
    assert doc["coordination"] == "kafka" and doc["coordinator"] in client.brokers
    text = run(["group", "describe", group], kafka_hosts).out
    assert "coordination kafka, coordinator broker %d," % doc["coordinator"] in text
    assert "coordination" in run(["groups"], kafka_hosts).out.splitlines()[0]
    assert run(["group", "delete", group], kafka_hosts).code == 0
    assert group not in [g["group"] for g in run(["groups", "--json"], kafka_hosts).json]
    assert_one_line_error(run(["group", "describe", unique_name("nosuch")], kafka_hosts), "unknown group")


def test_group_delete_of_an_empty_name_deletes_nothing(kafka_hosts, topic, group_name):
    commit(topic, group_name, {0: 1})
    result = run(["group", "delete", ""], kafka_hosts)
    assert result.code == 2 and "'' is no group's name" in result.err, result  # a usage error
    assert group_name.decode() in [g["group"] for g in run(["groups", "--json"], kafka_hosts).json]


@pytest.mark.zookeeper
def test_a_zookeeper_chroot_that_does_not_exist_has_no_groups(kafka_hosts, zookeeper_chroot):
    result = run(["--zookeeper", zookeeper_chroot + "/" + unique_name("nosuch"), "groups", "--json"], kafka_hosts)
    assert result.code == 0 and result.err == "", result
    assert all(g["coordination"] == "kafka" for g in result.json)


@pytest.mark.zookeeper
def test_zookeeper_groups(kafka_hosts, client, zookeeper_chroot, topic_name, group_name):
    """A pykafka fleet's group: a member and its partitions in znodes, offsets in ZooKeeper."""
    from kazoo.client import KazooClient
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 4, 1: 4})
    group = group_name.decode()
    zk = KazooClient(zookeeper_chroot, timeout=10)
    zk.start(timeout=30)
    try:
        zk.create("/consumers/%s/ids/host-1:abc" % group, topic_name.encode(), makepath=True)
        zk.create("/consumers/%s/owners/%s/111-0" % (group, topic_name), b"host-1:abc", makepath=True)
        zk.create("/consumers/%s/offsets/%s/0" % (group, topic_name), b"3", makepath=True)
        zz = ["--zookeeper", zookeeper_chroot]
        listed = run(zz + ["groups", "--json"], kafka_hosts).json
        assert {"group": group, "coordination": "zookeeper", "state": "Stable", "type": "consumer"} in listed
        doc = run(zz + ["group", "describe", group, "--json"], kafka_hosts).json
        assert (doc["coordination"], doc["coordinator"]) == ("zookeeper", None)
        assert "coordination zookeeper," in run(zz + ["group", "describe", group], kafka_hosts).out
        assert doc["members"] == [{"member": "host-1:abc", "client": None, "host": "host-1", "topics": [topic_name],
                                   "assignment": ["%s:0" % topic_name]}]
        lag = run(zz + ["lag", group, "--json"], kafka_hosts).json
        assert [(p["committed"], p["lag"], p["owner"], p["source"]) for p in lag["partitions"]] == \
            [(3, 1, "host-1:abc", "zookeeper"), (None, 4, None, None)]
        assert_one_line_error(run(zz + ["offsets", "reset", group, "--to-earliest"], kafka_hosts),
                              "registered in ZooKeeper", "stop them first")
        zk.delete("/consumers/%s/ids/host-1:abc" % group)
        assert run(zz + ["offsets", "reset", group, "--topic", topic_name, "--to-offset", 1], kafka_hosts).code == 0
        assert topic.consumer_lag(group_name)[1].committed == 1
    finally:
        zk.stop()
        zk.close()


# -- bench ---------------------------------------------------------------------------------------------

def test_bench_measures_both_ways(kafka_hosts, client):
    result = run(["bench", "--messages", 3000, "--size", 200, "--json"], kafka_hosts)
    assert result.code == 0, result
    doc = result.json
    assert [(r["phase"], r["messages"]) for r in doc["results"]] == [("produce", 3000), ("consume", 3000)]
    assert all(r["msgs_per_s"] > 0 and r["mb_per_s"] >= 0 for r in doc["results"])
    assert doc["topic"].encode() not in client.cluster.list_topics(), "the bench topic is deleted"


def test_bench_on_a_topic_with_messages_reads_back_its_own(kafka_hosts, client, topic_name):
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 50, 1: 50})
    result = run(["bench", "--topic", topic_name, "--messages", 300, "--size", 10, "--json"], kafka_hosts)
    assert result.code == 0, result
    assert [(r["phase"], r["messages"]) for r in result.json["results"]] == [("produce", 300), ("consume", 300)]


def test_consume_reads_to_the_end_of_a_topic_written_in_a_transaction(kafka_hosts, client, topic_name):
    """A transaction's commit marker is the partition's last offset: it brings no message."""
    topic = make_topic(client, topic_name, 1)
    producer = topic.get_producer(transactional_id=topic_name, linger_ms=5)
    try:
        with producer.transaction():
            producer.produce(b"t1")
            producer.produce(b"t2")
    finally:
        producer.stop()
    result = run(["consume", topic_name], kafka_hosts)
    assert (result.code, result.out.split()) == (0, ["t1", "t2"])


def test_consumer_properties_given_with_x_win_over_the_commands_defaults(kafka_hosts, client, topic_name):
    """-X isolation.level=read_uncommitted shows a transaction still open, where the
    consumer's own isolation_level argument (read_committed) set it back."""
    topic = make_topic(client, topic_name, 1)
    producer = topic.get_producer(transactional_id=topic_name, linger_ms=5)
    try:
        producer.begin_transaction()
        producer.produce(b"open")
        producer.flush()
        for args in (["consume", topic_name], ["-X", "isolation.level=read_uncommitted", "consume", topic_name]):
            result = run(args, kafka_hosts)
            assert result.code == 0, result
            assert result.out.split() == ([] if "-X" not in args else ["open"]), result
    finally:
        producer.stop()


@pytest.mark.zookeeper
def test_names_on_a_terminal_are_shown_as_they_are_not_as_rich_markup(kafka_hosts, zookeeper_chroot):
    """On a terminal the tables are rich's, which read a str as markup: a group named
    "[bold]b[" showed as a bold "b[", a group that does not exist."""
    import pty
    from kazoo.client import KazooClient
    group = "[bold]" + unique_name("g") + "["
    zk = KazooClient(zookeeper_chroot, timeout=10)
    zk.start(timeout=30)
    try:
        zk.create("/consumers/%s/ids/m1" % group, b"t", makepath=True)
    finally:
        zk.stop()
        zk.close()
    out, terminal = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "pyrdk", "--zookeeper", zookeeper_chroot, "groups"],
                              stdout=terminal, stderr=subprocess.PIPE, env=dict(os.environ, PYRDK_HOSTS=kafka_hosts,
                                                                                COLUMNS="200"),
                              timeout=120)
        os.close(terminal)
        terminal = None
        text = b""
        while True:
            try:
                chunk = os.read(out, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            text += chunk
    finally:
        if terminal is not None:
            os.close(terminal)
        os.close(out)
    assert proc.returncode == 0, proc.stderr
    assert group.encode() in text, text


@pytest.mark.parametrize("args, fragment", [(["--hosts", "", "topics"], "--hosts must be a non-empty"),
                                            (["--zookeeper", "", "groups"], "--zookeeper must be a non-empty")])
def test_an_empty_address_is_named_by_its_option(args, fragment):
    result = run(args)
    assert_one_line_error(result, fragment)
    assert "zookeeper_hosts" not in result.err and "error: TypeError: hosts" not in result.err, result


def test_producer_properties_given_with_x_win_over_the_commands_defaults(kafka_hosts, client, topic_name):
    """-X takes any librdkafka property: a producer's (message.max.bytes here, as acks or
    linger.ms) applies to produce and bench, where their producers' arguments set it."""
    make_topic(client, topic_name, 1)
    result = run(["-X", "message.max.bytes=2000", "produce", topic_name], kafka_hosts, stdin=b"a\n" + b"x" * 5000)
    assert_one_line_error(result, "larger than -X message.max.bytes=2000", "record 2; the 1 before it were produced")
    result = run(["-X", "message.max.bytes=1500", "bench", "--messages", 2, "--size", 2000], kafka_hosts)
    assert_one_line_error(result, "larger than -X message.max.bytes=1500")
    # over the producer's own default (1000012), under a broker's (1048588)
    result = run(["-X", "message.max.bytes=1040000", "bench", "--messages", 2, "--size", 1000100], kafka_hosts)
    assert result.code == 0, result
