"""pykafka's ``kafka-tools`` commands, names, options and output, run for real (the console
script, and ``pykafka.cli.kafka_tools`` after ``install_as_pykafka()``)."""
import subprocess
import sys
import time

import pytest

from tests.cli.util import BIN, assert_one_line_error, kafka_tools, run
from tests.fix_kafka import commit, fill, make_topic, running_member, tansu_gap, unique_name

pytestmark = pytest.mark.kafka

def rows(out):
    """The rows of a plain table (after its dashes line), split on whitespace."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---"))
    return [line.split() for line in lines[start + 1:] if line.strip() and not line.startswith(" Total")]


def test_print_topics_and_desc_topic(kafka_hosts, client, topic_name):
    make_topic(client, topic_name, 3)
    result = kafka_tools(["print_topics"], kafka_hosts)
    assert result.code == 0 and result.out.split("\n")[0].split() == ["Topic", "Partitions", "Replication"]
    assert [topic_name, "3", "1"] in rows(result.out)
    desc = kafka_tools(["desc_topic", topic_name], kafka_hosts)
    assert desc.out.splitlines()[:3] == ["Topic: %s" % topic_name, "Partitions: 3", "Replicas: 1"]
    assert desc.out.splitlines()[3].split() == ["Partition", "Leader", "Replicas", "ISR"]
    assert [r[0] for r in rows(desc.out)] == ["0", "1", "2"]


def test_print_offsets(kafka_hosts, client, topic_name):
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 3, 1: 1})
    assert rows(kafka_tools(["print_offsets", topic_name, "latest"], kafka_hosts).out) == [["0", "3"], ["1", "1"]]
    assert rows(kafka_tools(["print_offsets", topic_name, "EARLIEST"], kafka_hosts).out) == [["0", "0"], ["1", "0"]]
    assert_one_line_error(kafka_tools(["print_offsets", topic_name, "someday"], kafka_hosts), "YYYY-MM-DDTHH:MM:SS")


@pytest.mark.mock
def test_print_offsets_of_a_datetime_after_the_last_message_is_the_end(mock_cluster):
    """ListOffsets v1 answers -1 for a time after the last message (the mock cluster does, as
    Kafka; Tansu answers 0): the end of the partition, as pykafka's v0 answered, not -1."""
    from pyrdk import KafkaClient
    hosts = mock_cluster.bootstrap_servers
    mock_cluster.create_topic("t", 2, 1)
    with KafkaClient(hosts=hosts) as client:
        fill(client.topics["t"], {0: 2, 1: 1})
    assert rows(kafka_tools(["print_offsets", "t", "2099-01-01T00:00:00"], hosts).out) == [["0", "2"], ["1", "1"]]


def test_print_consumer_lag_and_reset_offsets(kafka_hosts, client, topic_name, group_name):
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 4, 1: 2})
    group = group_name.decode()
    assert kafka_tools(["reset_offsets", topic_name, group, "latest"], kafka_hosts).code == 0
    assert kafka_tools(["print_consumer_lag", topic_name, group], kafka_hosts).out.endswith(" Total lag: 0 messages.\n")
    assert kafka_tools(["reset_offsets", topic_name, group, "earliest"], kafka_hosts).code == 0
    result = kafka_tools(["print_consumer_lag", topic_name, group], kafka_hosts)
    assert result.out.splitlines()[0].split() == ["Partition", "Lag", "Latest", "Offset", "Current", "Offset",
                                                  "Consumer_ID"]
    assert rows(result.out) == [["0", "4", "4", "0", "None"], ["1", "2", "2", "0", "None"]]
    assert result.out.endswith("\n Total lag: 6 messages.\n")


@pytest.mark.parametrize("command", [["print_consumer_lag"], ["reset_offsets"]])
@pytest.mark.parametrize("group", ["", " "])
def test_a_blank_group_name_is_a_usage_error_as_in_pyrdk_commands(kafka_hosts, client, topic_name, command, group):
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 2})
    result = kafka_tools(command + [topic_name, group] + (["earliest"] if command == ["reset_offsets"] else []),
                         kafka_hosts)
    assert result.code == 2 and "%r is no group's name" % group in result.err, result
    if group:  # nothing committed for " " ("" the library refuses outright)
        assert topic.consumer_lag(group) == topic.consumer_lag(unique_name("never"))


@pytest.mark.zookeeper
def test_reset_offsets_refuses_a_group_running_in_zookeeper(kafka_hosts, client, zookeeper_chroot, topic_name,
                                                           group_name):
    """As pyrdk offsets reset: with --zookeeper, members registered there stop the reset
    (they would commit over it)."""
    from kazoo.client import KazooClient
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 3})
    group = group_name.decode()
    assert kafka_tools(["reset_offsets", topic_name, group, "latest"], kafka_hosts).code == 0
    zk = KazooClient(zookeeper_chroot, timeout=10)
    zk.start(timeout=30)
    try:
        zk.create("/consumers/%s/ids/host-1:abc" % group, topic_name.encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()
    result = kafka_tools(["--zookeeper", zookeeper_chroot, "reset_offsets", topic_name, group, "earliest"],
                         kafka_hosts)
    assert_one_line_error(result, "registered in ZooKeeper", "stop them first")
    assert topic.consumer_lag(group)[0].committed == 3, "nothing was reset"


def test_create_and_delete_topic(kafka_hosts, client, topic_name):
    result = kafka_tools(["-o", "0.10.1", "create_topic", topic_name, "-p", 2, "-r", 1, "-t", 5000,
                          "-c", '{"retention.ms": "60000"}'], kafka_hosts)
    assert result.code == 0, result
    client.update_cluster()
    assert len(client.topics[topic_name].partitions) == 2
    assert kafka_tools(["delete_topic", topic_name], kafka_hosts).code == 0
    assert topic_name.encode() not in client.cluster.list_topics()
    assert kafka_tools(["create_topic", topic_name, "-c", "not json"], kafka_hosts).code == 2


def test_consume_topic_writes_new_messages(kafka_hosts, client, topic_name, tmp_path):
    topic = make_topic(client, topic_name, 1)
    fill(topic, {0: 2})  # older messages: consume_topic starts at the end, as pykafka's
    outfile = tmp_path / "out.txt"
    proc = subprocess.Popen([BIN + "/kafka-tools", "-b", kafka_hosts, "consume_topic", topic_name, "-l", "3",
                             "-o", str(outfile)], stderr=subprocess.PIPE)
    try:
        with topic.get_producer(linger_ms=1) as producer:
            for i in range(600):
                if proc.poll() is not None:
                    break
                producer.produce(b"new-%d" % i)
                producer.flush()
                time.sleep(0.1)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, proc.stderr.read()
    lines = outfile.read_text().splitlines()
    assert len(lines) == 3 and all(line.startswith("new-") for line in lines)


def test_unknown_topic_and_group(kafka_hosts, client):
    name = unique_name("nosuch")
    for command in (["desc_topic", name], ["print_offsets", name, "latest"], ["print_consumer_lag", name, "g"]):
        assert_one_line_error(kafka_tools(command, kafka_hosts), "unknown topic %r" % name,
                              "(`kafka-tools -b %s print_topics` lists them)" % kafka_hosts)
    assert name.encode() not in client.cluster.list_topics(), "kafka-tools does not create topics"
    assert kafka_tools(["print_consumer_lag"], kafka_hosts).code == 2


@tansu_gap("DescribeGroups answers no members")
def test_print_managed_consumer_groups(kafka_hosts, client, topic_name, group_name):
    topic = make_topic(client, topic_name, 1)
    consumer = running_member(topic, group_name)
    try:
        result = kafka_tools(["print_managed_consumer_groups", topic_name], kafka_hosts)
    finally:
        consumer.stop()
    assert result.out.splitlines()[0] == "Topic: %s" % topic_name
    assert [r[0] for r in rows(result.out)] == [group_name.decode()]


def test_same_commands_under_pyrdk_and_as_pykafka_module(kafka_hosts, client, topic_name):
    make_topic(client, topic_name, 1)
    assert [topic_name, "1", "1"] in rows(run(["print_topics"], kafka_hosts).out)
    script = ("import pyrdk, sys; pyrdk.install_as_pykafka(); from pykafka.cli import kafka_tools; "
              "kafka_tools.main(['-b', sys.argv[1], 'desc_topic', sys.argv[2]])")
    result = run([kafka_hosts, topic_name], program=[sys.executable, "-c", script])
    assert result.code == 0 and result.out.startswith("Topic: %s\n" % topic_name), result


def test_fetch_consumer_lag_helper_takes_and_returns_what_pykafkas_does(client, topic_name, group_name):
    """pykafka's helper, called by scripts that import pykafka.cli.kafka_tools:
    (client, topic, consumer_group) -> {partition_id: (latest offset, consumer offset)}."""
    from pyrdk.cli.kafka_tools import fetch_consumer_lag
    topic = make_topic(client, topic_name, 2)
    fill(topic, {0: 4, 1: 2})
    commit(topic, group_name, {0: 3})
    assert fetch_consumer_lag(client, topic, group_name) == {0: (4, 3), 1: (2, -1)}


@pytest.mark.parametrize("hosts, fragment", [("nowhere:x", "-b/--broker: 'nowhere:x'"),
                                             ("", "-b/--broker must be a non-empty")])
def test_a_bad_broker_address_is_named_by_the_option_kafka_tools_takes(hosts, fragment):
    result = kafka_tools(["print_topics"], hosts)
    assert_one_line_error(result, fragment)
    assert "--hosts" not in result.err, result


def test_a_bad_zookeeper_string_is_named_by_its_option(kafka_hosts, client, topic_name):
    make_topic(client, topic_name, 1)
    result = kafka_tools(["--zookeeper", "::", "print_consumer_lag", topic_name, "g"], kafka_hosts)
    assert_one_line_error(result, "--zookeeper '::' is not a")
    assert "zookeeper_hosts" not in result.err, result


def test_main_returns_to_the_program_that_calls_it_as_pykafkas(kafka_hosts, client, topic_name):
    make_topic(client, topic_name, 1)
    script = ("import pyrdk, sys; pyrdk.install_as_pykafka(); from pykafka.cli import kafka_tools; "
              "sys.argv = ['kafka-tools', '-b', sys.argv[1], 'desc_topic', sys.argv[2]]; kafka_tools.main(); "
              "print('after main')")
    result = run([kafka_hosts, topic_name], program=[sys.executable, "-c", script])
    assert result.code == 0 and result.out.endswith("after main\n"), result
    failed = run([kafka_hosts, unique_name("nosuch")], program=[sys.executable, "-c", script])
    assert failed.code == 1 and "after main" not in failed.out, failed


@pytest.mark.parametrize("timeout", [-5, 3600001])
def test_a_timeout_out_of_range_is_a_usage_error_naming_the_option(kafka_hosts, topic_name, timeout):
    result = kafka_tools(["create_topic", topic_name, "-t", timeout], kafka_hosts)
    assert result.code == 2 and "'-t' / '--timeout'" in result.err, result
    assert "socket_timeout_ms" not in result.err, result


@pytest.mark.parametrize("command", ["print_offsets", "reset_offsets"])
def test_the_help_of_a_command_taking_an_offset_says_what_it_can_be(command):
    result = kafka_tools([command, "--help"], "127.0.0.1:9")
    # (click wraps the help at a hyphen too)
    assert result.code == 0 and "EARLIEST,LATESTorYYYY-MM-DDTHH:MM:SS" in "".join(result.out.split()), result
