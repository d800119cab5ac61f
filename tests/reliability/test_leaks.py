"""No leak over hundreds of clients: ``tests/reliability/leaks.py`` makes and stops 100
producers, 100 simple consumers, 20 balanced consumers, 20 clients, 20 transactional
producers, and 100 ``pyrdk.aio`` producers, 100 consumers and 20 group members in a process
of its own; after each round its open file descriptors and OS threads are back at their baseline
exactly, and its RSS within ``RSS_SLACK_MB`` of it (room for the allocator's arenas and
the threads' stacks it keeps for reuse; a leaked librdkafka handle would show in the counts
first, as it keeps several threads and sockets of its own)."""
import json
import os
import subprocess
import sys

import pytest

from tests.fleet import ROOT
from tests.reliability.ledger import report

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.soak, pytest.mark.timeout(600)]

RSS_SLACK_MB = 16


def test_fds_threads_and_rss_return_to_their_baseline(kafka_hosts):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable, "-m", "tests.reliability.leaks", kafka_hosts], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr[-5000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    base = figures["baseline"]
    report("leaks: baseline", **base, rss_bound_mb=base["rss_mb"] + RSS_SLACK_MB)
    for what, after in figures["rounds"].items():
        report("leaks: after %d %s" % (after["count"], what), fds=after["fds"], threads=after["threads"],
               rss_mb=after["rss_mb"], seconds=after["seconds"])
    for what, after in figures["rounds"].items():
        assert after["fds"] == base["fds"], what
        assert after["threads"] == base["threads"], what
        assert after["rss_mb"] <= base["rss_mb"] + RSS_SLACK_MB, what
        if "in_loop" in after:  # an aio round, measured in its loop too, before that loop closed
            loop = after["in_loop"]
            assert (loop["after"]["fds"], loop["after"]["threads"]) == \
                (loop["before"]["fds"], loop["before"]["threads"]), what
