"""Events from Kafka, counted per key: ``sparse run`` (or ``sparse submit``) in this directory."""
from streamparse import Grouping, Topology

from bolts.counter import CountBolt
from spouts.events import EventSpout


class EventCounts(Topology):
    events = EventSpout.spec(par=2)
    counts = CountBolt.spec(inputs={events: Grouping.fields("key")}, par=2)
