"""The opt-in Apache Kafka of tests/fix_docker.py: without a Docker engine,
``PYRDK_TEST_DOCKER=1`` fails the tests that need a broker and says why (never a silent
skip, never Tansu instead). With an engine it starts Kafka; that path runs where Docker is."""
import os
import subprocess
import sys

from tests.fleet import ROOT


def test_without_a_docker_engine_the_fixture_fails_saying_why():
    env = {k: v for k, v in os.environ.items() if k not in ("PYRDK_TEST_ALLOW_SKIP", "PYRDK_TEST_BROKERS")}
    env.update(PYRDK_TEST_DOCKER="1", DOCKER_HOST="unix:///nonexistent/docker.sock")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_security.py::test_oauth_cb_is_called_again_before_each_token_expires"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "1 error" in out and "skipped" not in out, out
    assert "PYRDK_TEST_DOCKER=1 asks for Apache Kafka in Docker, but no Docker engine answers" in out
    assert "unix:///nonexistent/docker.sock" in out
