"""Run as ``python -m tests.reliability.leaks HOSTS``: make and stop 100 producers, 100
simple consumers (one after the other), 20 balanced consumers (the broker's group protocol,
each in a group of its own, side by side), 20 clients, 20 transactional producers, and 100
``pyrdk.aio`` producers, 100 consumers and 20 group members (one event loop for the round, as
a service keeps), each doing real work (a produce, a consume, a join, a committed transaction), and
print JSON with the process's open file descriptors, OS threads and RSS before and after
each round.

The baseline is taken after one warm-up object of each kind, so that what is made once per
process (imported modules, librdkafka's global state, the allocator's first arenas) is in
it. Run in a process of its own so that nothing else shares the counts.
"""
import asyncio
import gc
import json
import os
import sys
import threading
import time

ROUNDS = {"producers": 100, "simple consumers": 100, "balanced consumers": 20, "clients": 20,
          "transactional producers": 20, "aio producers": 100, "aio consumers": 100, "aio group consumers": 20}


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

    def transactional_producer():
        with topic.get_producer(transactional_id="leaks-%d-%d" % (os.getpid(), next(group))) as p:
            p.begin_transaction()
            p.produce(b"leak check")
            p.commit_transaction()

    async def aio_producer():
        import pyrdk.aio as aiokafka
        async with aiokafka.AIOKafkaProducer(bootstrap_servers=hosts) as p:
            assert (await p.send_and_wait(name, b"leak check")).offset >= 0

    async def aio_consumer():
        import pyrdk.aio as aiokafka
        async with aiokafka.AIOKafkaConsumer(bootstrap_servers=hosts, enable_auto_commit=False) as c:
            c.assign([aiokafka.TopicPartition(name, 0), aiokafka.TopicPartition(name, 1)])
            await c.seek_to_beginning()
            assert (await asyncio.wait_for(c.getone(), 30)) is not None

    async def aio_group_consumer():
        import pyrdk.aio as aiokafka
        async with aiokafka.AIOKafkaConsumer(name, bootstrap_servers=hosts, auto_offset_reset="earliest",
                                             group_id="leaks-%d-%d" % (os.getpid(), next(group)),
                                             session_timeout_ms=6000, heartbeat_interval_ms=500) as c:
            assert (await asyncio.wait_for(c.getone(), 30)) is not None

    def in_a_loop(make, count):
        """``count`` of ``make()`` one after the other, in one event loop, and the usage before
        and after them measured in that loop while it is open: a service keeps its loop for
        years, and asyncio.run() closing it would free what it still holds (reader
        registrations, callbacks, the executor's threads) before the round's own figures."""
        async def run():
            await make()  # what the loop makes once (its executor's thread)
            before = await settled()
            for _ in range(count):
                await make()
            return {"before": before, "after": await settled()}

        async def settled():
            """usage(), less the loop's executor threads: it starts one more (up to its
            max_workers) when a close is handed to it before the last one's thread is idle."""
            gc.collect()
            await asyncio.sleep(0.5)
            gc.collect()
            figures = usage()
            figures["threads"] -= sum(t.name.startswith("asyncio_") for t in threading.enumerate())
            return figures
        return asyncio.run(run())

    makers = {"producers": producer, "simple consumers": simple_consumer,
              "balanced consumers": balanced_consumer, "clients": another_client,
              "transactional producers": transactional_producer,
              "aio producers": lambda count=1: in_a_loop(aio_producer, count),
              "aio consumers": lambda count=1: in_a_loop(aio_consumer, count),
              "aio group consumers": lambda count=1: in_a_loop(aio_group_consumer, count)}
    for make in makers.values():  # warm-up
        make()
    settle()
    out = {"baseline": usage(), "rounds": {}}
    in_loop = {}
    for what, count in ROUNDS.items():
        started = time.monotonic()
        if what == "balanced consumers":  # side by side: each waits seconds for its group to form
            threads = [threading.Thread(target=makers[what]) for _ in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        elif what.startswith("aio "):
            in_loop[what] = makers[what](count)
        else:
            for _ in range(count):
                makers[what]()
        settle()
        out["rounds"][what] = dict(usage(), count=count, seconds=round(time.monotonic() - started, 1))
        if what in in_loop:
            out["rounds"][what]["in_loop"] = in_loop[what]
    client.cluster.delete_topics([name])
    client.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
