"""Storm-style spouts over pyrdk consumers: at-least-once acking, or exactly-once output.

:class:`KafkaSpout` is the framework-neutral core: ``next_tuple()`` hands out messages with
a tuple id ``(topic, partition, offset)``, ``ack(id)`` and ``fail(id)`` come back in any
order, and only the contiguous acked prefix of each partition is committed.
:mod:`pyrdk.spout.storm` adapts it to Apache Storm's multi-lang protocol through ``pystorm``
(``pip install 'pyrdk[storm]'``), as a spout streamparse can run.
"""
from pyrdk.spout.spout import KafkaSpout, SpoutTuple, TupleId

__all__ = ["KafkaSpout", "SpoutTuple", "TupleId"]
