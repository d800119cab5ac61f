"""The ``pyrdk`` command: inspect a cluster, watch a fleet's lag, reset a stopped group, pipe
records in and out, and measure throughput.

    pyrdk topics                          pyrdk groups
    pyrdk topic describe events           pyrdk group describe workers
    pyrdk lag workers --watch             pyrdk offsets reset workers --topic events --to-earliest --dry-run
    pyrdk produce events < lines.txt      pyrdk consume events --from earliest --count 10
    pyrdk config alter --topic events --set retention.ms=86400000
    pyrdk bench --messages 200000

``--hosts`` (or ``PYRDK_HOSTS``) names the brokers, ``--zookeeper`` (or ``PYRDK_ZOOKEEPER``)
the ZooKeeper of ZooKeeper-coordinated groups. Read commands take ``--json``. Exit codes: 0
done, 1 failed (one line on stderr says why), 2 a usage error. pykafka's ``kafka-tools``
commands (``print_topics``, ``desc_topic``...) are here too.
"""
import click

from pyrdk import __version__
from pyrdk.cli import bench, groups, kafka_tools, records
from pyrdk.cli.common import (CommandError, Env, Group, connection_options, emit_json, json_option, pass_env,
                              rdkafka_option, setup_logging, table, verbose_option)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@connection_options
@rdkafka_option
@verbose_option
@click.version_option(__version__, prog_name="pyrdk")
@click.pass_context
def cli(ctx, hosts, zookeeper, timeout_ms, rdkafka_config, verbose):
    """Operate a Kafka cluster: topics, groups, lag, offsets, records, configs."""
    setup_logging(verbose)
    ctx.obj = Env(ctx, hosts, zookeeper=zookeeper, timeout_ms=timeout_ms, rdkafka_config=rdkafka_config)


# -- topics ------------------------------------------------------------------------------------------

def _replication(topic):
    parts = list(topic.partitions.values())
    return len(parts[0].replicas) if parts else 0


@cli.command("topics")
@click.option("--internal", is_flag=True, help="Include internal topics (names starting with __).")
@json_option
@pass_env
def topics_command(env, internal, as_json):
    """List the topics: partitions and replication factor."""
    cluster = env.client.cluster
    rows = []
    for name in cluster.list_topics(include_internal=internal):
        topic = env.client.topics.get(name)
        if topic is None:  # created since the client's metadata
            rows.append((name.decode(), None, None))
        else:
            rows.append((name.decode(), len(topic.partitions), _replication(topic)))
    if as_json:
        emit_json([{"topic": t, "partitions": p, "replication": r} for t, p, r in rows])
    else:
        table(["topic", "partitions", "replication"], rows)


@cli.group("topic", cls=Group)
def topic_group():
    """Describe, create or delete one topic."""


@topic_group.command("describe")
@click.argument("topic")
@json_option
@pass_env
def topic_describe(env, topic, as_json):
    """Partitions (leader, replicas, ISR, watermarks) and configs of TOPIC."""
    t = env.topic(topic)
    name = t.name.decode()
    starts = t.earliest_available_offsets()
    ends = t.latest_available_offsets()
    partitions = [{"partition": p.id, "leader": p.leader.id if p.leader else None,
                   "replicas": [r.id for r in p.replicas], "isr": [r.id for r in p.isr],
                   "low": starts[p.id].offset[0], "high": ends[p.id].offset[0]}
                  for p in sorted(t.partitions.values())]
    configs = {e.name: e for e in env.client.cluster.describe_configs(topic=name).values()}
    if as_json:
        emit_json({"topic": name, "partitions": partitions,
                   "configs": {k: {"value": e.value, "source": e.source, "default": e.is_default}
                               for k, e in sorted(configs.items())}})
        return
    click.echo("topic %s: %d partitions, replication %d, %d messages"
               % (name, len(partitions), _replication(t), sum(p["high"] - p["low"] for p in partitions)))
    table(["partition", "leader", "replicas", "isr", "low", "high"],
          [(p["partition"], p["leader"], ",".join(map(str, p["replicas"])), ",".join(map(str, p["isr"])),
            p["low"], p["high"]) for p in partitions])
    shown = sorted((k, e) for k, e in configs.items() if not e.is_default)
    if shown:
        table(["config", "value", "source"], [(k, e.value, e.source) for k, e in shown])
    else:
        click.echo("configs: the broker's defaults")


def _key_values(items, what):
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter("%r is not NAME=VALUE" % item, param_hint=what)
        out[key] = value
    return out


@topic_group.command("create")
@click.argument("topic")
@click.option("-p", "--partitions", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("-r", "--replication-factor", type=click.IntRange(min=-1), default=-1,
              help="Replicas per partition [default: the broker's].")
@click.option("--config", "configs", multiple=True, metavar="NAME=VALUE", help="A topic config; repeatable.")
@pass_env
def topic_create(env, topic, partitions, replication_factor, configs):
    """Create TOPIC."""
    if replication_factor == 0:
        raise click.BadParameter("must be at least 1, or -1 for the broker's default",
                                 param_hint="--replication-factor")
    env.client.cluster.create_topics([(topic, partitions, replication_factor, _key_values(configs, "--config"))])
    click.echo("created topic %s with %d partitions" % (topic, partitions))


@topic_group.command("delete")
@click.argument("topic")
@pass_env
def topic_delete(env, topic):
    """Delete TOPIC and its messages."""
    env.topic(topic)
    env.client.cluster.delete_topics([topic])
    click.echo("deleted topic %s" % topic)


@cli.group("partitions", cls=Group)
def partitions_group():
    """Add partitions to a topic."""


@partitions_group.command("add")
@click.argument("topic")
@click.option("--total", type=click.IntRange(min=1), required=True, help="The partition count to reach.")
@pass_env
def partitions_add(env, topic, total):
    """Grow TOPIC to --total partitions (keys move to other partitions)."""
    t = env.topic(topic)
    if total <= len(t.partitions):
        raise CommandError("topic %s has %d partitions already: --total must be more" % (topic, len(t.partitions)))
    env.client.cluster.create_partitions([(topic, total)])
    click.echo("topic %s now has %d partitions" % (topic, total))


# -- configs -----------------------------------------------------------------------------------------

def _resource(env, topic, broker):
    if (topic is None) == (broker is None):
        raise click.UsageError("name exactly one of --topic or --broker")
    if topic is not None:
        env.topic(topic)
        return {"topic": topic}
    return {"broker": broker}


@cli.group("config", cls=Group)
def config_group():
    """Describe and alter topic and broker configs."""


@config_group.command("describe")
@click.option("--topic", default=None)
@click.option("--broker", type=click.IntRange(min=0), default=None, help="A broker id.")
@click.option("--all", "show_all", is_flag=True, help="Show the defaults too.")
@json_option
@pass_env
def config_describe(env, topic, broker, show_all, as_json):
    """The configs of one topic or broker (those set, or --all)."""
    entries = env.client.cluster.describe_configs(**_resource(env, topic, broker))
    shown = sorted((k, e) for k, e in entries.items() if show_all or not e.is_default)
    if as_json:
        emit_json({k: {"value": e.value, "source": e.source, "default": e.is_default,
                       "read_only": e.is_read_only, "sensitive": e.is_sensitive} for k, e in shown})
    else:
        table(["config", "value", "source"], [(k, "(sensitive)" if e.is_sensitive else e.value, e.source)
                                              for k, e in shown])


@config_group.command("alter")
@click.option("--topic", default=None)
@click.option("--broker", type=click.IntRange(min=0), default=None, help="A broker id.")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="Set a config; repeatable.")
@click.option("--delete", "deletes", multiple=True, metavar="NAME", help="Return a config to its default; repeatable.")
@pass_env
def config_alter(env, topic, broker, sets, deletes):
    """Change some configs of one topic or broker, leaving the others as they are."""
    changes = _key_values(sets, "--set")
    changes.update({name: None for name in deletes})
    if not changes:
        raise click.UsageError("give at least one --set NAME=VALUE or --delete NAME")
    resource = _resource(env, topic, broker)
    env.client.cluster.alter_configs(changes, **resource)
    for name, value in sorted(changes.items()):
        click.echo("%s %s" % (name, "deleted" if value is None else "= %s" % value))


for _command in groups.COMMANDS + records.COMMANDS + [bench.bench] + kafka_tools.COMMANDS:
    cli.add_command(_command)


def main(args=None):
    """The ``pyrdk`` console script."""
    cli.main(args=args, prog_name="pyrdk")


if __name__ == "__main__":
    main()
