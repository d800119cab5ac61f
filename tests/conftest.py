"""Shared fixtures: the servers come from fix_*.py; markers are declared here."""
import os

import pytest

pytest_plugins = ["tests.fix_docker", "tests.fix_kafka", "tests.fix_mock", "tests.fix_spark", "tests.fix_tls",
                  "tests.fix_sasl", "tests.fix_zookeeper"]


def pytest_configure(config):
    for name, doc in (("kafka", "needs a Kafka-compatible broker (Tansu, or PYRDK_TEST_BROKERS)"),
                      ("zookeeper", "needs a ZooKeeper server"),
                      ("mock", "uses librdkafka's mock cluster"),
                      ("spark", "needs a SparkSession"),
                      ("slow", "takes more than a few seconds; make soak runs it on the pure-Python core"),
                      ("soak", "a soak of a minute or more; make test leaves it out, make soak runs it"),
                      ("c_core", "the C core's own behaviour: deselected when PYRDK_IMPL=python")):
        config.addinivalue_line("markers", "%s: %s" % (name, doc))


def pytest_collection_modifyitems(config, items):
    """With the pure-Python core, the C core's own tests are deselected (not skipped)."""
    from pyrdk import core
    if core.implementation == "c":
        return
    c_only = [item for item in items if item.get_closest_marker("c_core")]
    if c_only:
        config.hook.pytest_deselected(items=c_only)
        items[:] = [item for item in items if not item.get_closest_marker("c_core")]


def pytest_report_header(config):
    try:
        import pyrdk
        return "pyrdk %s, librdkafka %s" % (pyrdk.__version__, pyrdk.librdkafka_version())
    except Exception as exc:  # the header must not hide the real error
        return "pyrdk failed to import: %s" % exc


def server_unavailable(reason):
    """A server fixture could not start: a failure, or a skip if a person allowed it."""
    if os.environ.get("PYRDK_TEST_ALLOW_SKIP") == "1":
        pytest.skip(reason)
    pytest.fail(reason, pytrace=False)
