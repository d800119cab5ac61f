"""The topology's bolt: counts the events per key and emits the running count.

pystorm acks each tuple once ``process`` returns (and fails it if it raises), so the spout
commits an event's offset only after it was counted.
"""
from collections import Counter

try:
    from streamparse import Bolt
except ImportError:
    from pystorm import Bolt


class CountBolt(Bolt):
    outputs = ["key", "count"]

    def initialize(self, storm_conf, context):
        self.counts = Counter()

    def process(self, tup):
        key = tup.values[0]
        self.counts[key] += 1
        self.emit([key, self.counts[key]])


if __name__ == "__main__":
    CountBolt().run()
