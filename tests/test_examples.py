"""The programs in examples/ run against a real broker and say what they did."""
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")

pytestmark = pytest.mark.kafka


def run(name, *args):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] + list(args),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_quickstart(kafka_hosts, topic_name):
    out = run("quickstart.py", "--hosts", kafka_hosts, "--topic", topic_name, "--count", "5000")
    assert "read 5000 messages" in out


def test_delivery_reports(kafka_hosts, topic_name):
    out = run("delivery_reports.py", "--hosts", kafka_hosts, "--topic", topic_name, "--count", "500")
    assert "delivered 500, failed 0" in out
