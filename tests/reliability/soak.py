"""The soak: ``make soak SOAK_MINUTES=30`` (not part of ``make test``; the file's name keeps
pytest from collecting it unless named).

An idempotent producer (``required_acks=-1``) writes numbered messages at ``SOAK_RATE`` a
second, over TLS (Tansu behind stunnel), while a fleet of managed balanced consumers, each
a process of its own, reads them. Every minute a fault schedule repeats: a member killed
with SIGKILL and replaced, every connection cut (stunnel killed with SIGKILL and started
again), a member joining and later leaving (two rebalances). Each minute prints throughput
and the counters; at the end the producer stops, the fleet catches up, and the run must
show 0 lost, 0 written twice, 0 silent, and consumer repeats within what was uncommitted.
"""
import array
import os
import signal
import time
from contextlib import closing

import pytest

from pyrdk import KafkaClient
from pyrdk.connection import SslConfig
from tests.fix_kafka import unique_name
from tests.fleet import Fleet
from tests.reliability.ledger import FaultSchedule, report

pytestmark = [pytest.mark.slow, pytest.mark.kafka, pytest.mark.timeout(0)]

MINUTES = float(os.environ.get("SOAK_MINUTES", "2"))
RATE = int(os.environ.get("SOAK_RATE", "1000"))  # messages a second
PARTITIONS = 6
MEMBERS = 3
COMMIT_EVERY = 200
GROUP = {"managed": True, "session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
         "max_poll_interval_ms": 8000}


class Tally:
    """What the producer was told and what the fleet processed, per message number, in
    compact arrays (a 30-minute run numbers millions)."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.produced = 0
        self.state = bytearray()  # per number: 0 unreported, 1 delivered, 2 failed
        self.first = array.array("q")  # per number: partition << 48 | offset where first processed, -1
        self.processed = 0  # lines written by members
        self.repeats = 0  # a (partition, offset) processed again
        self.written_twice = 0  # a number processed at two different (partition, offset)
        self._positions = {}

    def produced_one(self):
        self.produced += 1
        self.state.append(0)
        self.first.append(-1)

    def report(self, message, exc):
        self.state[int(message.partition_key)] = 1 if exc is None else 2

    def read_fleet(self):
        """Take in the lines the members wrote since the last call."""
        for member in self.fleet.members:
            path = self.fleet.path(member.name, "processed")
            try:
                f = open(path)
            except FileNotFoundError:
                continue
            with f:
                f.seek(self._positions.get(path, 0))
                while True:
                    line = f.readline()
                    if not line.endswith("\n"):
                        break  # a line being written (or cut by kill -9): read it next time
                    self._positions[path] = f.tell()
                    partition, offset, key = line.split()
                    number, where = int(key), int(partition) << 48 | int(offset)
                    self.processed += 1
                    if self.first[number] == -1:
                        self.first[number] = where
                    elif self.first[number] == where:
                        self.repeats += 1
                    else:
                        self.written_twice += 1

    def counts(self):
        delivered = self.state.count(1)
        consumed = sum(1 for n in range(self.produced) if self.first[n] != -1)
        not_consumed = sum(1 for n in range(self.produced) if self.state[n] == 1 and self.first[n] == -1)
        return {"produced": self.produced, "delivered": delivered, "failed": self.state.count(2),
                "unreported": self.state.count(0), "consumed": consumed, "not_consumed": not_consumed,
                "consumer_repeats": self.repeats, "written_twice": self.written_twice}


def test_soak(tls_certs, tls_listener, tmp_path):
    listener = tls_listener(tls_certs.broker)
    ssl = SslConfig(cafile=tls_certs.ca.certfile)
    name = unique_name("soak")
    with KafkaClient(hosts=listener.bootstrap_servers, ssl_config=ssl) as client, \
            Fleet(listener.bootstrap_servers, name, unique_name("soak-group"), GROUP, commit_every=COMMIT_EVERY,
                  workdir=str(tmp_path / "fleet"), flush_each=True,
                  ssl_cafile=tls_certs.ca.certfile) as fleet:
        client.cluster.create_topics([(name, PARTITIONS, 1)])
        topic = client.topics[name]
        fleet.start(MEMBERS)
        fleet.wait_balanced(range(PARTITIONS))
        tally = Tally(fleet)
        faults = {"members_killed": 0, "connections_cut": 0, "rebalances": 0}
        extra = []

        def kill_member():
            fleet.kill(next(m for m in fleet.live() if m not in extra))
            fleet.start_member()
            faults["members_killed"] += 1

        def cut_connections():
            stunnel = listener.stunnel
            os.kill(stunnel.pid, signal.SIGKILL)
            stunnel.process.wait(30)
            stunnel.stop()
            time.sleep(3)
            stunnel.start()
            faults["connections_cut"] += 1

        def join():
            extra.append(fleet.start_member())
            faults["rebalances"] += 1

        def leave():
            fleet.stop(extra.pop())
            faults["rebalances"] += 1

        steps = []
        for minute in range(int(MINUTES + 0.999)):
            base = 60 * minute
            steps += [(base + 10, "kill a member", kill_member), (base + 25, "cut every connection", cut_connections),
                      (base + 35, "a member joins", join), (base + 50, "the member leaves", leave)]
        schedule = FaultSchedule([s for s in steps if s[0] < MINUTES * 60])
        producer = topic.get_producer(delivery_reports=True, linger_ms=5, enable_idempotence=True,
                                      required_acks=-1, max_retries=1000000, pending_timeout_ms=120000)

        def drain():
            while True:
                try:
                    message, exc = producer.get_delivery_report(block=False)
                except Exception:  # queue.Empty
                    return
                tally.report(message, exc)

        started = last = time.monotonic()
        last_counts = tally.counts()
        minute = 0
        with closing(schedule):
            schedule.start()
            while time.monotonic() - started < MINUTES * 60:
                tick = time.monotonic()
                for _ in range(RATE // 10):
                    producer.produce(b"soak %d" % tally.produced, partition_key=b"%d" % tally.produced)
                    tally.produced_one()
                drain()
                fleet.check_failures()
                if time.monotonic() - last >= 60:
                    minute += 1
                    tally.read_fleet()
                    counts = tally.counts()
                    seconds = time.monotonic() - last
                    report("soak: minute %d" % minute,
                           produced_per_s=round((counts["produced"] - last_counts["produced"]) / seconds),
                           delivered_per_s=round((counts["delivered"] - last_counts["delivered"]) / seconds),
                           consumed_per_s=round((counts["consumed"] - last_counts["consumed"]) / seconds),
                           **counts, **faults)
                    last, last_counts = time.monotonic(), counts
                time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
            schedule.join()
            producer.stop()
            drain()
            fleet.wait_until(lambda owners: (tally.read_fleet() or True) and tally.counts()["not_consumed"] == 0,
                             "the fleet consumed every message delivered", timeout_s=300)
        counts = tally.counts()
        bound = COMMIT_EVERY * len(fleet.members)
        report("soak: end, %.0f minutes" % MINUTES, **counts, repeat_bound=bound, **faults)
        assert counts["unreported"] == 0  # 0 silent
        assert counts["not_consumed"] == 0  # 0 lost
        assert counts["written_twice"] == 0  # 0 duplicated by the idempotent producer
        assert counts["consumer_repeats"] <= bound
        assert fleet.violations == []
