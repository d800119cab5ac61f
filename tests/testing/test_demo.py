"""pyrdk.testing.demo: the tally that decides the demo's exit status, and a small run."""
import pytest

from pyrdk.common import Message
from pyrdk.testing import demo
from tests.fix_kafka import unique_name


def _messages(ids):
    return [Message(demo.payload(i, 20), partition_key=b"k") for i in ids]


def test_payload_starts_with_the_id():
    assert demo.payload(42, 16) == b"0000000042......"
    assert len(demo.payload(7, 100)) == 100


def test_tally_accepts_exactly_once():
    tally = demo.Tally(5)
    tally.add(_messages([3, 1]))
    tally.add(_messages([0, 4, 2]))
    assert tally.problems() == []
    assert tally.received == 5
    assert tally.nbytes == 5 * (20 + 1)


def test_tally_reports_missing_duplicated_and_stray():
    tally = demo.Tally(5)
    tally.add(_messages([0, 1, 1, 2, 9]))
    tally.add([Message(b"not a demo message")])
    problems = "\n".join(tally.problems())
    assert "2 messages missing (first ids: [3, 4])" in problems
    assert "1 messages duplicated (first ids: [1])" in problems
    assert "2 messages that the demo did not produce" in problems


@pytest.mark.kafka
def test_demo_against_the_session_broker(kafka_hosts, capsys):
    status = demo.main(["--hosts", kafka_hosts, "--topic", unique_name("demo"), "--messages", "3000",
                        "--size", "50"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "OK: all 3000 messages arrived exactly once" in out
    assert "produced 3000 msgs" in out and "consumed 3000 msgs" in out
