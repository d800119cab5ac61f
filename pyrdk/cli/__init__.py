"""pyrdk's command line: ``pyrdk`` (:mod:`pyrdk.cli.main`) and pykafka's ``kafka-tools``
(:mod:`pyrdk.cli.kafka_tools`), on click and rich."""
