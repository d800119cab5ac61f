"""The topology's spout: the ``events`` topic, at least once, through pyrdk.

Storm runs it as a multi-lang ShellSpout (streamparse: ``streamparse_run spouts.events.EventSpout``;
or ``python src/spouts/events.py``). Settings below may be overridden by the topology
configuration under ``pyrdk.<name>`` (``pyrdk.hosts``, ``pyrdk.topic``...).
"""
from pyrdk.spout.storm import StormKafkaSpout

try:
    from streamparse import Spout  # gives the spout streamparse's spec() for topologies/
except ImportError:  # streamparse is not needed to run the spout itself
    from pystorm import Spout


class EventSpout(StormKafkaSpout, Spout):
    outputs = ["key", "value"]
    hosts = "127.0.0.1:9092"
    topic = "events"
    consumer_group = "event-counts"
    consumer = "managed"  # the broker's group protocol: run as many spout tasks as you like
    spout_options = {
        "max_spout_pending": 1000,
        "max_retries": 5,  # then report and skip (or set "dead_letter_topic": "events-dead")
        "commit_interval_ms": 1000,
    }


if __name__ == "__main__":
    EventSpout().run()
