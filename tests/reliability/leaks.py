"""Run as ``python -m tests.reliability.leaks HOSTS``: make and stop 100 producers, 100
simple consumers (one after the other), 20 balanced consumers (the broker's group protocol,
each in a group of its own, side by side) and 20 clients, each doing real work (a produce,
a consume, a join), and print JSON with
the process's open file descriptors, OS threads and RSS before and after each round.

The baseline is taken after one warm-up object of each kind, so that what is made once per
process (imported modules, librdkafka's global state, the allocator's first arenas) is in
it. Run in a process of its own so that nothing else shares the counts.
"""
import gc
import json
import os
import sys
import threading
import time

ROUNDS = {"producers": 100, "simple consumers": 100, "balanced consumers": 20, "clients": 20}


def usage():
    """``{"fds", "threads", "rss_mb"}`` of this process, from /proc."""
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    return {"fds": len(os.listdir("/proc/self/fd")), "threads": int(status["Threads"]),
            "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024.0, 1)}


def settle():
    """Let librdkafka's threads finish exiting and Python free what is unreachable."""
    gc.collect()
    time.sleep(0.5)
    gc.collect()


def main(hosts):
    from pyrdk import KafkaClient
    from pyrdk.common import OffsetType

    name = "leaks-%d" % os.getpid()
    client = KafkaClient(hosts=hosts)
    client.cluster.create_topics([(name, 2, 1)])
    topic = client.topics[name]
    group = iter(range(10 ** 6))

    def producer():
        with topic.get_producer(linger_ms=1) as p:
            p.produce(b"leak check")

    def simple_consumer():
        c = topic.get_simple_consumer(auto_offset_reset=OffsetType.EARLIEST, consumer_timeout_ms=5000)
        assert c.consume() is not None
        c.stop()

    def balanced_consumer():
        c = topic.get_balanced_consumer(b"leaks-%d-%d" % (os.getpid(), next(group)), managed=True,
                                        auto_offset_reset=OffsetType.EARLIEST, consumer_timeout_ms=30000,
                                        session_timeout_ms=6000, heartbeat_interval_ms=500,
                                        max_poll_interval_ms=8000)
        assert c.consume() is not None
        c.stop()

    def another_client():
        with KafkaClient(hosts=hosts) as other:
            assert name.encode() in other.topics

    makers = {"producers": producer, "simple consumers": simple_consumer,
              "balanced consumers": balanced_consumer, "clients": another_client}
    for make in makers.values():  # warm-up
        make()
    settle()
    out = {"baseline": usage(), "rounds": {}}
    for what, count in ROUNDS.items():
        started = time.monotonic()
        if what == "balanced consumers":  # side by side: each waits seconds for its group to form
            threads = [threading.Thread(target=makers[what]) for _ in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for _ in range(count):
                makers[what]()
        settle()
        out["rounds"][what] = dict(usage(), count=count, seconds=round(time.monotonic() - started, 1))
    client.cluster.delete_topics([name])
    client.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
