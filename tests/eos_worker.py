"""A consume-transform-produce worker for the exactly-once crash test (test_exactlyonce.py):
``python -m tests.eos_worker SPEC``. It runs a :class:`pyrdk.exactlyonce.Processor` until
SIGTERM, and appends one line per committed batch to ``<progress>`` (so the test can kill
it while it works)."""
import json
import signal
import sys


def transform(message):
    return [(b"out-" + message.value, message.partition_key)]


def main(spec_path):
    from pyrdk import KafkaClient
    from pyrdk.exactlyonce import Processor
    with open(spec_path) as f:
        spec = json.load(f)
    client = KafkaClient(hosts=spec["hosts"])
    processor = Processor(client.topics[spec["input"]], client.topics[spec["output"]], spec["group"],
                          spec["transactional_id"], batch_size=spec["batch_size"], batch_timeout_ms=200,
                          consumer_kwargs=spec["consumer_kwargs"], producer_kwargs={"linger_ms": 5})
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    with open(spec["progress"], "a") as progress:
        while not stopping:
            done = processor.process_batch(transform)
            if done:
                progress.write("%d\n" % done)
                progress.flush()
    processor.close()
    client.close()


if __name__ == "__main__":
    main(sys.argv[1])
