"""pykafka's ``kafka-tools``: the same commands, options and output, on pyrdk.

    kafka-tools -b broker1:9092 print_topics
    kafka-tools desc_topic events
    kafka-tools print_consumer_lag events workers
    kafka-tools reset_offsets events workers earliest

Also reachable as ``pyrdk <command>`` and, after ``pyrdk.install_as_pykafka()``, as
``pykafka.cli.kafka_tools``. Differences from pykafka 2.8: ``-o/--broker_version`` is accepted
and ignored (librdkafka negotiates versions, so create_topic and delete_topic need no
``-o 0.10.1``); ``print_topics`` shows the replication factor (pykafka printed one less);
``reset_offsets`` refuses a group with running members; ``print_consumer_lag`` reads the
owners from ZooKeeper only when ``--zookeeper`` is given (pykafka guessed port 2181), and a
partition without a committed offset lags by the messages in it.
"""
import datetime
import json
import struct
import sys

import click

from pyrdk.cli.common import (CommandError, Env, Group, GroupName, pass_env, plain_table, rdkafka_option,
                              setup_logging, verbose_option)
from pyrdk.cli.groups import refuse_running_zookeeper_group
from pyrdk.common import OffsetType


# -- pykafka's helper functions ------------------------------------------------------------------

def fetch_offsets(client, topic, offset):
    """``{partition_id: OffsetPartitionResponse}`` for ``offset``: ``earliest``, ``latest`` or a
    UTC datetime ``YYYY-MM-DDTHH:MM:SS`` (pykafka's helper). A datetime gives each partition's
    first offset at or after it (ListOffsets v1), or, with no message that late, the end of
    the partition, as pykafka's ListOffsets v0 answered."""
    text = offset.decode() if isinstance(offset, bytes) else str(offset)
    if text.lower() == "earliest":
        return topic.earliest_available_offsets()
    if text.lower() == "latest":
        return topic.latest_available_offsets()
    try:
        when = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        raise CommandError("offset %r is not EARLIEST, LATEST or a datetime YYYY-MM-DDTHH:MM:SS" % text) from None
    found = topic.fetch_offset_limits(when)
    if any(r.offset[0] < 0 for r in found.values()):  # -1: no message at or after it
        latest = topic.latest_available_offsets()
        found = {pid: latest[pid] if r.offset[0] < 0 else r for pid, r in found.items()}
    return found


def fetch_consumer_lag(client, topic, consumer_group):
    """``{partition_id: (latest offset, consumer offset)}`` (pykafka's helper; -1 for a
    partition without a committed offset, as pykafka's)."""
    return {pid: (row.log_end, -1 if row.committed is None else row.committed)
            for pid, row in topic.consumer_lag(consumer_group).items()}


def _subscribed_topics(metadata):
    """The topics in a consumer-protocol subscription (int16 version, [string] topics...)."""
    try:
        count, = struct.unpack_from(">i", metadata, 2)
        offset, topics = 6, []
        for _ in range(count):
            size, = struct.unpack_from(">h", metadata, offset)
            topics.append(metadata[offset + 2:offset + 2 + size])
            offset += 2 + size
        return topics
    except struct.error:
        return []


def _topic_name(value):
    return value.decode() if isinstance(value, bytes) else value


# -- the commands ----------------------------------------------------------------------------------

topic_argument = click.argument("topic", metavar="TOPIC")
group_argument = click.argument("consumer_group", metavar="CONSUMER_GROUP", type=GroupName())
offset_argument = click.argument("offset", metavar="OFFSET")
timeout_option = click.option("-t", "--timeout", type=click.IntRange(min=0, max=3600000), default=5000,
                              show_default=True, help="Time in ms to wait for the operation to complete.")


@click.command("consume_topic")
@topic_argument
@click.option("-l", "--limit", type=int, default=10, show_default=True, help="Number of messages to consume.")
@click.option("-o", "--outfile", type=click.File("w"), default="-", help="Output file (defaults to stdout).")
@pass_env
def consume_topic(env, topic, limit, outfile):
    """Dump messages for a topic to a file or stdout (new messages, group pykafka_cli)."""
    t = env.topic(topic)
    consumer = t.get_simple_consumer(b"pykafka_cli", consumer_timeout_ms=100, auto_offset_reset=OffsetType.LATEST,
                                     reset_offset_on_start=True, auto_commit_enable=True,
                                     auto_commit_interval_ms=3000, rdkafka_config=env.consumer_config())
    try:
        consumed = 0
        while consumed < limit:
            msg = consumer.consume()
            if not msg or not msg.value:
                continue
            outfile.write(msg.value.decode("utf-8", errors="replace") + "\n")
            outfile.flush()
            consumed += 1
    finally:
        consumer.stop()


@click.command("desc_topic")
@topic_argument
@pass_env
def desc_topic(env, topic):
    """Print detailed info for a topic."""
    t = env.topic(topic)
    parts = sorted(t.partitions.values())
    click.echo("Topic: %s" % t.name.decode())
    click.echo("Partitions: %d" % len(parts))
    click.echo("Replicas: %d" % len(parts[0].replicas))
    click.echo(plain_table(["Partition", "Leader", "Replicas", "ISR"],
                           [(p.id, p.leader.id if p.leader else -1, str([r.id for r in p.replicas]),
                             str([r.id for r in p.isr])) for p in parts], numalign="center"))


@click.command("print_managed_consumer_groups")
@topic_argument
@pass_env
def print_managed_consumer_groups(env, topic):
    """Get consumer groups for a topic (those coordinated by the brokers)."""
    t = env.topic(topic)
    cluster = env.client.cluster
    groups = {}
    listed = cluster.list_groups()
    for group_id, info in (cluster.describe_groups(list(listed)) if listed else {}).items():
        if any(t.name in _subscribed_topics(m.metadata) for m in info.members):
            groups[group_id] = info
    click.echo("Topic: %s" % t.name.decode())
    click.echo(plain_table(["GroupId", "State", "Protocol", "ProtocolType"],
                           [(g.decode(), i.state, i.protocol, i.protocol_type) for g, i in sorted(groups.items())]))


@click.command("print_consumer_lag")
@topic_argument
@group_argument
@pass_env
def print_consumer_lag(env, topic, consumer_group):
    """Get consumer lag for a topic."""
    t = env.topic(topic)
    lag = t.consumer_lag(consumer_group)
    rows = [(pid, "{:,}".format(row.lag), row.log_end, -1 if row.committed is None else row.committed, row.owner)
            for pid, row in sorted(lag.items())]
    click.echo(plain_table(["Partition", "Lag", "Latest Offset", "Current Offset", "Consumer_ID"], rows,
                           numalign="center"))
    click.echo("\n Total lag: {:,} messages.".format(sum(row.lag for row in lag.values())))


@click.command("print_offsets")
@topic_argument
@offset_argument
@pass_env
def print_offsets(env, topic, offset):
    """Fetch broker offsets for a topic (OFFSET: EARLIEST, LATEST or YYYY-MM-DDTHH:MM:SS)."""
    t = env.topic(topic)
    offsets = fetch_offsets(env.client, t, offset)
    click.echo(plain_table(["Partition", "Offset"], [(pid, r.offset[0]) for pid, r in sorted(offsets.items())],
                           numalign="center"))


@click.command("print_topics")
@pass_env
def print_topics(env):
    """Print information about all topics in the cluster."""
    rows = []
    for t in sorted(env.client.topics.values(), key=lambda t: t.name):
        if t.name.startswith(b"__"):  # internal: pykafka's client leaves them out
            continue
        parts = list(t.partitions.values())
        rows.append((t.name.decode(), len(parts), len(parts[0].replicas) if parts else 0))
    click.echo(plain_table(["Topic", "Partitions", "Replication"], rows, numalign="center"))


@click.command("reset_offsets")
@topic_argument
@group_argument
@offset_argument
@pass_env
def reset_offsets(env, topic, consumer_group, offset):
    """Reset offsets for a topic/consumer group to OFFSET: EARLIEST, LATEST or YYYY-MM-DDTHH:MM:SS (the
    group must not be running)."""
    t = env.topic(topic)
    offsets = fetch_offsets(env.client, t, offset)
    refuse_running_zookeeper_group(env, consumer_group)
    env.client.cluster.alter_consumer_group_offsets(
        consumer_group, {(t.name, pid): r.offset[0] for pid, r in offsets.items()})


@click.command("create_topic")
@topic_argument
@timeout_option
@click.option("-p", "--num_partitions", type=int, default=1, show_default=True,
              help="Number of partitions to be created. -1 indicates unset.")
@click.option("-r", "--replication_factor", type=int, default=1, show_default=True,
              help="Replication factor for the topic. -1 indicates unset.")
@click.option("-a", "--replica_assignment", default=None,
              help="Replica assignment (not supported: librdkafka's CreateTopics is used without it).")
@click.option("-c", "--config_entries", default=None, help="Topic level configuration, as a JSON object.")
@pass_env
def create_topic(env, topic, timeout, num_partitions, replication_factor, replica_assignment, config_entries):
    """Create a topic."""
    if replica_assignment:
        raise click.UsageError("--replica_assignment is not supported; give --num_partitions and "
                               "--replication_factor")
    config = None
    if config_entries:
        try:
            config = json.loads(config_entries)
        except ValueError as exc:
            raise click.BadParameter("not a JSON object: %s" % exc, param_hint="--config_entries") from None
        if not isinstance(config, dict):
            raise click.BadParameter("not a JSON object: %r" % config_entries, param_hint="--config_entries")
    env.client.cluster.create_topics([(topic, num_partitions, replication_factor, config)], timeout)


@click.command("delete_topic")
@topic_argument
@timeout_option
@pass_env
def delete_topic(env, topic, timeout):
    """Delete a topic."""
    env.topic(topic)
    env.client.cluster.delete_topics([topic], timeout)


COMMANDS = [consume_topic, desc_topic, print_managed_consumer_groups, print_consumer_lag, print_offsets,
            print_topics, reset_offsets, create_topic, delete_topic]


@click.group(cls=Group, help="Tools for Kafka.", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-b", "--broker", "host", default="localhost:9092", show_default=True,
              help="host:port of any Kafka broker.")
@click.option("-o", "--broker_version", default="0.9.0",
              help="Accepted for pykafka's scripts and ignored: librdkafka negotiates versions.")
@click.option("--zookeeper", default=None, help="ZooKeeper connect string, for print_consumer_lag's owners and "
                                                "reset_offsets' check of running members.")
@rdkafka_option
@verbose_option
@click.pass_context
def cli(ctx, host, broker_version, zookeeper, rdkafka_config, verbose):
    setup_logging(verbose)
    ctx.obj = Env(ctx, host, zookeeper=zookeeper, broker_version=broker_version, rdkafka_config=rdkafka_config,
                  kafka_tools=True)


for _command in COMMANDS:
    cli.add_command(_command)


def main(args=None):
    """The ``kafka-tools`` console script. As pykafka's main(), it returns once the command is
    done, to the program that called it; a failure still exits (1, or 2 for a usage error)."""
    try:
        cli.main(args=args, prog_name="kafka-tools")
    except SystemExit as exc:
        if exc.code:
            raise


if __name__ == "__main__":
    main(sys.argv[1:])
