"""The spout of the ``pyrdk.spout.storm`` bench case: pyrdk's StormKafkaSpout as a multi-lang
process, configured by the topology configuration the case sends (``pyrdk.hosts``...)."""
from pyrdk.spout.storm import StormKafkaSpout

if __name__ == "__main__":
    StormKafkaSpout().run()
