"""``pyrdk groups``, ``group describe|delete``, ``lag`` and ``offsets reset``: consumer groups
coordinated by the brokers, and by ZooKeeper when ``--zookeeper`` is given."""
import sys
import time

import click

from pyrdk.cli.common import (CommandError, Datetime, GroupName, UntilInterrupted, emit_json, is_terminal, json_option,
                              pass_env, table)
from pyrdk.common import OffsetType

MAX_WATCH_S = 86400  # lag --watch: a day between refreshes at most (time.sleep overflows further on)


def _znodes(env):
    from pyrdk.zookeeper import GroupZnodes
    return GroupZnodes(env.zookeeper, env.timeout_ms)


@click.command("groups")
@json_option
@pass_env
def groups_command(env, as_json):
    """List the consumer groups (and ZooKeeper's, with --zookeeper): the coordination column
    says who coordinates each, kafka (a broker) or zookeeper."""
    rows = [(g.group_id, "kafka", g.state, "simple" if g.is_simple else "consumer")
            for g in env.client.cluster.list_consumer_groups()]
    if env.zookeeper:
        with _znodes(env) as zk:
            rows.extend((g, "zookeeper", "Stable" if zk.members(g) else "Empty", "consumer") for g in zk.groups())
    rows.sort()
    if as_json:
        emit_json([{"group": g, "coordination": c, "state": s, "type": t} for g, c, s, t in rows])
    else:
        table(["group", "coordination", "state", "type"], rows)


@click.group("group")
def group_group():
    """Describe or delete one consumer group."""


def _describe(env, group):
    """The group as a dict: its state and members, from the brokers or from ZooKeeper;
    ``coordination`` is ``kafka`` or ``zookeeper`` (as in ``pyrdk groups``), ``coordinator``
    the id of the broker coordinating a kafka group (None for ZooKeeper's)."""
    found = None
    if env.zookeeper:
        with _znodes(env) as zk:
            if zk.exists(group):
                members = zk.members(group)
                owned = {}
                for topic in zk.topics(group):
                    for pid, owner in zk.owners(group, topic).items():
                        owned.setdefault(owner, []).append("%s:%d" % (topic, pid))
                found = {"group": group, "coordination": "zookeeper", "coordinator": None,
                         "state": "Stable" if members else "Empty",
                         "assignor": None,
                         "members": [{"member": m, "client": None, "host": m.rsplit(":", 1)[0], "topics": topics,
                                      "assignment": sorted(owned.get(m, []))} for m, topics in sorted(members.items())]}
    if found is None:
        known = {g.group_id for g in env.client.cluster.list_consumer_groups()}
        if group not in known:
            raise CommandError("unknown group %r on %s%s (`pyrdk groups` lists them)" % (
                group, env.hosts, "" if env.zookeeper else " (a ZooKeeper-coordinated group needs --zookeeper)"))
        d = env.client.cluster.describe_consumer_groups([group])[group]
        found = {"group": group, "coordination": "kafka", "coordinator": d.coordinator.id if d.coordinator else None,
                 "state": d.state, "assignor": d.partition_assignor or None,
                 "members": [{"member": m.member_id, "client": m.client_id, "host": m.host, "topics": None,
                              "assignment": ["%s:%d" % tp for tp in sorted(m.assignment)]} for m in d.members]}
    return found


@group_group.command("describe")
@click.argument("group", type=GroupName())
@json_option
@pass_env
def group_describe(env, group, as_json):
    """State, coordination (kafka with its coordinator broker's id, or zookeeper), members
    and their partitions of GROUP."""
    doc = _describe(env, group)
    if as_json:
        emit_json(doc)
        return
    by = "zookeeper" if doc["coordination"] == "zookeeper" else "kafka, coordinator %s" % (
        "unknown" if doc["coordinator"] is None else "broker %d" % doc["coordinator"])
    click.echo("group %s: %s, coordination %s, %d member(s)%s" % (
        group, doc["state"], by, len(doc["members"]),
        ", assignor %s" % doc["assignor"] if doc["assignor"] else ""))
    if doc["members"]:
        table(["member", "client", "host", "partitions"],
              [(m["member"], m["client"], m["host"], " ".join(m["assignment"])) for m in doc["members"]])


@group_group.command("delete")
@click.argument("group", type=GroupName())
@pass_env
def group_delete(env, group):
    """Delete GROUP and its committed offsets (it must have no members)."""
    env.client.cluster.delete_groups([group])
    click.echo("deleted group %s" % group)


def _lag_rows(env, group, topics):
    lag = env.client.cluster.consumer_lag(group, [env.topic(t).name for t in topics] if topics else None)
    if not lag:
        raise CommandError("group %r has no committed offsets, members or znodes on %s%s" % (
            group, env.hosts, "" if env.zookeeper else " (a ZooKeeper-coordinated group needs --zookeeper)"))
    return [row for partitions in lag.values() for row in partitions.values()]


def _lag_table(group, rows):
    from rich import box
    from rich.table import Table
    from rich.text import Text
    t = Table(title=Text("group %s: lag %s" % (group, "{:,}".format(sum(r.lag for r in rows)))),
              box=box.SIMPLE_HEAD, title_justify="left")
    for name in ("topic", "partition", "committed", "log end", "lag", "owner"):
        t.add_column(name, justify="left" if name in ("topic", "owner") else "right")
    for r in rows:  # Text, not str, which rich reads as markup: an owner may be "[host]:..."
        t.add_row(*map(Text, (r.topic, str(r.partition), "-" if r.committed is None else "{:,}".format(r.committed),
                              "{:,}".format(r.log_end), "{:,}".format(r.lag), r.owner or "")))
    return t


@click.command("lag")
@click.argument("group", type=GroupName())
@click.option("--topic", "topics", multiple=True, help="Only this topic; repeatable [default: the group's].")
@click.option("--watch", type=float, default=None, is_flag=False, flag_value=2.0, metavar="[SECONDS]",
              help="Refresh in place every SECONDS (2 by default) until Ctrl-C.")
@json_option
@pass_env
def lag_command(env, group, topics, watch, as_json):
    """Committed offset, log end and lag of GROUP per partition, and the total."""
    if watch is not None and not 0 < watch <= MAX_WATCH_S:  # also NaN, which time.sleep refuses
        raise click.BadParameter("must be more than 0 and at most %d seconds" % MAX_WATCH_S, param_hint="--watch")
    with UntilInterrupted() as until:
        try:
            if watch is not None and not as_json and is_terminal():
                _watch_live(env, group, topics, watch, until)
            else:
                _print_lag(env, group, topics, watch, as_json, until)
        except KeyboardInterrupt:  # how --watch is meant to end
            if watch is None:
                raise


def _watch_live(env, group, topics, watch, until):
    """Refresh a rich table in place on the terminal; ``until`` is checked before each wait
    (a Ctrl-C during a wait raises there)."""
    from rich.console import Console
    from rich.live import Live
    with Live(_lag_table(group, _lag_rows(env, group, topics)), console=Console(), auto_refresh=False) as live:
        while True:
            until.check()
            time.sleep(watch)
            live.update(_lag_table(group, _lag_rows(env, group, topics)), refresh=True)


def _print_lag(env, group, topics, watch, as_json, until):
    """Print the lag once, or every ``watch`` seconds (a table or a JSON document each time);
    ``until`` is checked before each wait."""
    while True:
        rows = _lag_rows(env, group, topics)
        total = sum(r.lag for r in rows)
        if as_json:
            emit_json({"group": group, "total": total, "partitions": [r._asdict() for r in rows]})
        else:
            table(["topic", "partition", "committed", "log end", "lag", "owner"],
                  [(r.topic, r.partition, "-" if r.committed is None else r.committed, r.log_end, r.lag, r.owner)
                   for r in rows], title="group %s: lag %d" % (group, total))
        if watch is None:
            return
        sys.stdout.flush()
        until.check()
        time.sleep(watch)


@click.group("offsets")
def offsets_group():
    """Reset the committed offsets of a stopped group."""


def refuse_running_zookeeper_group(env, group):
    """With ``--zookeeper``, a CommandError if ``group`` has members registered there: the
    brokers do not know them, and they would commit over the offsets set."""
    if env.zookeeper:
        with _znodes(env) as zk:
            members = zk.members(group)
        if members:
            raise CommandError("group %r has %d member(s) registered in ZooKeeper (%s): stop them first"
                               % (group, len(members), ", ".join(sorted(members))))


@offsets_group.command("reset")
@click.argument("group", type=GroupName())
@click.option("--topic", "topics", multiple=True, help="The topic; repeatable [default: the group's].")
@click.option("--partition", "partitions", type=int, multiple=True, help="Only this partition; repeatable.")
@click.option("--to-earliest", is_flag=True, help="To the first offset still in the log.")
@click.option("--to-latest", is_flag=True, help="To the end of the log (skip everything).")
@click.option("--to-datetime", type=Datetime(), default=None, metavar="DATETIME",
              help="To the first message at or after an ISO datetime (UTC without a zone).")
@click.option("--to-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET", help="To OFFSET.")
@click.option("--shift-by", type=int, default=None, metavar="N", help="Forward (N > 0) or back (N < 0) by N.")
@click.option("--dry-run", is_flag=True, help="Print the plan and change nothing.")
@json_option
@pass_env
def offsets_reset(env, group, topics, partitions, to_earliest, to_latest, to_datetime, to_offset, shift_by, dry_run,
                  as_json):
    """Move GROUP's committed offsets; its members must be stopped."""
    to = "earliest" if to_earliest else "latest" if to_latest else None
    chosen = [name for name, value in (("--to-earliest", to_earliest or None), ("--to-latest", to_latest or None),
                                       ("--to-datetime", to_datetime), ("--to-offset", to_offset),
                                       ("--shift-by", shift_by)) if value is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset "
                               "or --shift-by")
    refuse_running_zookeeper_group(env, group)
    rows = [r for r in _lag_rows(env, group, topics) if not partitions or r.partition in partitions]
    unmatched = sorted(set(partitions) - {r.partition for r in rows})
    if unmatched:  # a typo among several --partition would otherwise be skipped, silently
        raise CommandError("no partition of group %r matches --partition %s" % (group, unmatched))
    at = {}
    if to_datetime is not None:
        for name in sorted({r.topic for r in rows}):
            found = env.client.topics[name].fetch_offset_limits(to_datetime)
            at.update({(name, pid): res.offset[0] for pid, res in found.items()})
    plan = []
    for r in rows:
        if to == "earliest":
            new = r.log_start
        elif to == "latest":
            new = r.log_end
        elif to_datetime is not None:
            new = at[(r.topic, r.partition)]
            new = r.log_end if new == OffsetType.LATEST or new < 0 else new
        elif to_offset is not None:
            new = to_offset
        else:
            new = (r.committed if r.committed is not None else r.log_start) + shift_by
        plan.append((r.topic, r.partition, r.committed, max(r.log_start, min(new, r.log_end))))
    if not dry_run:
        env.client.cluster.alter_consumer_group_offsets(group, {(t, p): new for t, p, _, new in plan})
    if as_json:
        emit_json({"group": group, "applied": not dry_run,
                   "partitions": [{"topic": t, "partition": p, "from": old, "to": new} for t, p, old, new in plan]})
    else:
        title = "group %s: %s" % (group, "plan (dry run, nothing changed)" if dry_run else "offsets reset")
        table(["topic", "partition", "from", "to"],
              [(t, p, "-" if old is None else old, new) for t, p, old, new in plan], title=title)


COMMANDS = [groups_command, group_group, lag_command, offsets_group]
