"""pyrdk's type hints (``py.typed``) accept what its calls accept in the programs pykafka
users write: mypy checks a typical one, bytes and str names alike."""
import os
import textwrap

import pytest

PROGRAM = '''
import datetime
import pathlib
from pyrdk import KafkaClient, OffsetType, SslConfig

client = KafkaClient(hosts=b"127.0.0.1:9092")  # bytes, as Python 2 programs wrote it
client2 = KafkaClient(hosts="127.0.0.1:9092", zookeeper_hosts="127.0.0.1:2181")
topic = client.topics[b"events"]
assert client.topics["events"] is topic
with topic.get_producer(linger_ms=10, min_queued_messages=1) as producer:
    producer.produce(b"v", partition_key=b"k", timestamp=datetime.datetime(2020, 1, 1))
    producer.produce(b"v", timestamp=1700000000000.5)
consumer = topic.get_simple_consumer(consumer_group="g", partitions=[topic.partitions[0], 1],
                                     auto_offset_reset=OffsetType.LATEST, consumer_timeout_ms=100)
message = consumer.consume()
if message is not None:
    consumer.commit_offsets([(topic.partitions[0], message.offset + 1)])
consumer.reset_offsets([(0, OffsetType.EARLIEST), (topic.partitions[0], datetime.datetime(2020, 1, 1))])
consumer.seek(topic.partitions[0], 3)
offsets: dict[int, int] = consumer.held_offsets
topic.fetch_offset_limits(datetime.datetime(2020, 1, 1), partitions=[0])
balanced = topic.get_balanced_consumer(b"g", managed=True)
ssl = SslConfig(cafile=pathlib.Path("/etc/ca.pem"), certfile=b"/etc/cert.pem", keyfile="/etc/key.pem",
                password=b"secret")
'''


def test_a_typical_pykafka_program_type_checks(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api")
    path = tmp_path / "program.py"
    path.write_text(textwrap.dedent(PROGRAM))
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # finds pyrdk
    out, err, status = api.run([str(path), "--no-incremental", "--cache-dir", os.devnull,
                                "--python-version", "3.10", "--config-file", os.devnull,
                                "--follow-imports", "silent"])  # as for an installed package: the program's errors only
    assert status == 0, out + err
