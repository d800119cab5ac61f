"""The bad-input table (tests/reliability/bad_inputs.py), run under each core.

The rows run one after another in a child process, which prints a JSON line as each row
starts and another as it ends. A row the child does not finish within ``ROW_TIMEOUT_S`` (a
hang), or during which the child dies (a crash: a segfault, an abort), is recorded as failed
with what the child printed to stderr; the child is killed by its pid and the rows after it
run in a new child. Every row must pass; the counts go to the session summary.
"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading

import pytest

from tests.fix_kafka import fill, make_topic, unique_name
from tests.fleet import ROOT
from tests.reliability.bad_inputs import TABLE
from tests.reliability.ledger import report

pytestmark = [pytest.mark.kafka, pytest.mark.zookeeper, pytest.mark.timeout(900)]

ROW_TIMEOUT_S = 60  # a row still running after this is a hang (rows take seconds at most)
START_TIMEOUT_S = 60  # a child must connect to the broker within this


def _child(hosts, zookeeper, topic_name, names, impl):
    env = dict(os.environ, PYRDK_IMPL=impl, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    child = subprocess.Popen([sys.executable, "-m", "tests.reliability.bad_inputs", hosts, zookeeper, topic_name]
                             + names, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()

    def read():
        for line in child.stdout:
            lines.put(line)
        lines.put(None)  # the child closed its stdout: it exited

    threading.Thread(target=read, daemon=True).start()
    stderr = []
    threading.Thread(target=lambda: stderr.extend(child.stderr), daemon=True).start()
    return child, lines, stderr


def _kill(child):
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait()


def run_table(hosts, zookeeper, topic_name, impl, names=None, row_timeout_s=ROW_TIMEOUT_S):
    """``{row name: result record}`` for the rows ``names`` (default: the whole table), run
    in children, one after another."""
    pending = list(names or [name for name, _, _, _ in TABLE])
    results = {}
    while pending:
        child, lines, stderr = _child(hosts, zookeeper, topic_name, pending, impl)
        current, timeout = "(start-up)", START_TIMEOUT_S
        try:
            while True:
                try:
                    line = lines.get(timeout=timeout)
                except queue.Empty:
                    why = "hang: no answer within %d s" % timeout
                    break
                if line is None:
                    child.wait()
                    why = "crash: the process exited with %s" % child.returncode
                    break
                record = json.loads(line)
                if "start" in record:
                    current, timeout = record["start"], row_timeout_s
                elif "name" in record:
                    results[record["name"]] = record
                    pending.remove(record["name"])
                    current = "(between rows)"
                    if not pending:
                        why = None
                        break
                elif record.get("ready"):
                    current, timeout = "(between rows)", row_timeout_s
        finally:
            _kill(child)
        if why is None:
            break
        if current not in pending:  # failed before any row or between rows: nothing to blame
            raise AssertionError("the table's child process failed outside a row: %s\n%s"
                                 % (why, "".join(stderr)[-5000:]))
        results[current] = {"name": current, "ok": False, "why": why, "stderr": "".join(stderr)[-3000:]}
        pending.remove(current)
    return results


@pytest.fixture
def table_topic(client):
    """A topic of 4 partitions holding 2 messages each."""
    name = unique_name("bad-inputs")
    fill(make_topic(client, name, 4), {pid: 2 for pid in range(4)})
    return name


def test_a_crash_or_a_hang_is_blamed_on_its_row_and_the_rest_run(kafka_hosts, zookeeper_hosts, table_topic):
    rows = ["KafkaClient(hosts=5)", "probe: a crash", "produce('text')", "probe: a hang", "seek(0, -5)"]
    results = run_table(kafka_hosts, zookeeper_hosts, table_topic, "c", rows, row_timeout_s=10)
    assert set(results) == set(rows)
    assert results["probe: a crash"]["why"].startswith("crash"), results["probe: a crash"]
    assert "SIGSEGV" in results["probe: a crash"]["stderr"] or "Segmentation" in results["probe: a crash"]["stderr"]
    assert results["probe: a hang"]["why"].startswith("hang"), results["probe: a hang"]
    assert all(results[name]["ok"] for name in rows if not name.startswith("probe")), results


@pytest.mark.parametrize("impl", ["c", "python"])
def test_every_bad_input_raises_a_named_exception(kafka_hosts, zookeeper_hosts, table_topic, impl):
    results = run_table(kafka_hosts, zookeeper_hosts, table_topic, impl)
    failed = {n: r for n, r in results.items() if not r["ok"]}
    report("bad inputs (PYRDK_IMPL=%s)" % impl, rows=len(TABLE), passed=len(results) - len(failed),
           failed=len(failed), crashed_or_hung=sum(1 for r in failed.values() if "exception" not in r))
    assert len(results) == len(TABLE) >= 60
    assert not failed, "\n".join("%s: %s (%s: %s)%s" % (n, r["why"], r.get("exception"), r.get("message"),
                                                        r.get("stderr", ""))
                                 for n, r in failed.items())
