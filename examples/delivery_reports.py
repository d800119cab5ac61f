"""Know the fate of every message: delivery reports, and what to do with a failure.

    python examples/delivery_reports.py --hosts 127.0.0.1:9092 --topic events
"""
import argparse
import queue

from pyrdk import KafkaClient


def drain(producer, outcome):
    """Count the reports that are ready; a real program would retry or log the failures."""
    while True:
        try:
            message, error = producer.get_delivery_report(block=False)
        except queue.Empty:
            return
        if error is None:
            outcome["delivered"] += 1
        else:
            outcome["failed"] += 1
            print("not delivered: %r (%s)" % (message.value, error))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="events")
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()

    topic = KafkaClient(hosts=args.hosts).topics[args.topic]
    outcome = {"delivered": 0, "failed": 0}
    with topic.get_producer(delivery_reports=True, linger_ms=5) as producer:
        for i in range(args.count):
            producer.produce(b"event %d" % i, headers=[("source", b"example")])
            drain(producer, outcome)  # reports queue up per producing thread: drain as you go
        producer.flush()
        drain(producer, outcome)
    print("delivered %(delivered)d, failed %(failed)d" % outcome)


if __name__ == "__main__":
    main()
