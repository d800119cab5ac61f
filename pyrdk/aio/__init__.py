"""aiokafka's API on librdkafka: ``import pyrdk.aio as aiokafka``.

:class:`AIOKafkaProducer` and :class:`AIOKafkaConsumer` take aiokafka's arguments and keep
its semantics; librdkafka does the work on its own threads and signals the event loop through
a pipe (:mod:`pyrdk.aio.wakeup`), so no thread pool and no timer carry the data. The
submodules ``errors``, ``structs``, ``helpers``, ``abc``, ``producer`` and ``consumer``
have aiokafka's names.
"""
from pyrdk.aio import abc, consumer, errors, helpers, producer, structs
from pyrdk.aio.abc import ConsumerRebalanceListener
from pyrdk.aio.consumer import AIOKafkaConsumer
from pyrdk.aio.errors import ConsumerStoppedError, IllegalOperation
from pyrdk.aio.producer import AIOKafkaProducer
from pyrdk.aio.structs import (ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp, RecordMetadata,
                               TopicPartition)

__version__ = "0.8.0"  # the aiokafka API this follows

__all__ = ["AIOKafkaConsumer", "AIOKafkaProducer", "ConsumerRebalanceListener", "ConsumerRecord",
           "ConsumerStoppedError", "IllegalOperation", "OffsetAndMetadata", "OffsetAndTimestamp", "RecordMetadata",
           "TopicPartition", "abc", "consumer", "errors", "helpers", "producer", "structs"]
