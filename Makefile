# pyrdk: `make test` on a fresh Debian machine installs what is missing (system packages
# through apt-get, a virtualenv in .venv with `pip install -e '.[test]'`), then runs the tests.

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.pyrdk-installed
RDKAFKA_H := /usr/include/librdkafka/rdkafka.h
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_GET := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get
PYTEST_ARGS ?=

# Re-install (and so rebuild the cffi extension) when any of these change.
BUILD_INPUTS := setup.py pyproject.toml build_ffi.py $(shell find csrc -name '*.[ch]' 2>/dev/null)

.PHONY: test test-c-1 test-c-2 test-python demo bench soak sysdeps venv clean

# Every test but the soaks (marked `soak`: the exactly-once crash test's six SIGKILLs over
# 100,000 records, the leak test's hundreds of clients; `make soak` runs them) runs on the C
# core (PYRDK_IMPL=c: a core that cannot be imported is an error, not a fall-back); the
# core's, producer and consumer suites run again on the pure-Python core, which must behave
# the same (not tests/rd: the librdkafka layer uses no core, as tests/test_layering.py
# checks; nor the ZooKeeper BalancedConsumer's, whose member reads through a SimpleConsumer,
# which the pass covers: its subject is the coordination). That second pass leaves out the
# tests marked `slow` (fleets of processes killed and restarted, a million records through
# asyncio: their subject is the group protocol and the processes, not the core) to keep
# `make test` within half an hour; `make soak` runs them on the pure-Python core.
CORE_TESTS := tests/core tests/aio tests/test_producer.py tests/test_simpleconsumer.py \
	tests/test_managedbalancedconsumer.py tests/test_arrow.py \
	tests/reliability/test_fuzz_inputs.py

# The C pass in two parts and the pure-Python pass, JOBS of them at once (each waits on
# brokers, group coordination and timeouts far more than it computes: the C pass alone left
# two cores 75-86% idle), each with its own servers on free ports; a part's output is printed
# as it ends. Against shared servers (PYRDK_TEST_BROKERS, PYRDK_TEST_ZOOKEEPER,
# PYRDK_TEST_DOCKER) they run one after the other: some tests use fixed topic names.
C_PART_1 := tests/test_managedbalancedconsumer.py tests/test_balancedconsumer.py tests/reliability \
	tests/spout tests/test_exactlyonce.py
JOBS ?= $(if $(PYRDK_TEST_BROKERS)$(PYRDK_TEST_ZOOKEEPER)$(PYRDK_TEST_DOCKER),1,2)

# The types first (the settings are pyproject.toml's [tool.mypy]): the package, and the stubs of
# the C core against the built module.
test: venv
	$(VPY) -m mypy pyrdk
	$(VPY) -m mypy.stubtest pyrdk._core --mypy-config-file pyproject.toml
	PYRDK_IMPL=c $(VPY) -c "import pyrdk; print(pyrdk.librdkafka_version())"
	$(MAKE) --no-print-directory -j$(JOBS) --output-sync=target test-c-1 test-c-2 test-python

# Each session picks its servers' ports from a block of its own (PYRDK_PORT_BLOCK, see
# pyrdk.testing.free_port): none takes a port another's broker is restarting on.
test-c-1:
	PYRDK_IMPL=c PYRDK_PORT_BLOCK=0/3 $(VPY) -m pytest $(C_PART_1) -m "not soak" $(PYTEST_ARGS)

test-c-2:
	PYRDK_IMPL=c PYRDK_PORT_BLOCK=1/3 $(VPY) -m pytest tests $(addprefix --ignore=,$(C_PART_1)) -m "not soak" \
		$(PYTEST_ARGS)

test-python:
	PYRDK_IMPL=python PYRDK_PORT_BLOCK=2/3 $(VPY) -m pytest $(CORE_TESTS) -m "not slow and not soak" $(PYTEST_ARGS)

demo: venv
	$(VPY) -m pyrdk.testing.demo

# The soak (tests/reliability/soak.py, not part of `make test`): a fleet and a producer under
# a fault schedule repeated every minute, printing the counters each minute; then the soak
# tests on the C core; then the core's, producer and consumer suites' `slow` tests on the
# pure-Python core.
SOAK_MINUTES ?= 10
SOAK_RATE ?= 1000

soak: venv
	SOAK_MINUTES=$(SOAK_MINUTES) SOAK_RATE=$(SOAK_RATE) $(VPY) -m pytest tests/reliability/soak.py -s -q $(PYTEST_ARGS)
	PYRDK_IMPL=c $(VPY) -m pytest tests -m soak -s -q $(PYTEST_ARGS)
	PYRDK_IMPL=python $(VPY) -m pytest $(CORE_TESTS) -m slow -q $(PYTEST_ARGS)

venv: $(STAMP)

# The side-by-side benchmark (bench/README.md): the other clients and matplotlib come from
# setup.py's `bench` extra. BENCH_ARGS=--quick for a ten-times smaller run.
BENCH_STAMP := $(VENV)/.pyrdk-bench-installed
BENCH_ARGS ?=

bench: $(BENCH_STAMP)
	$(VPY) bench/run.py $(BENCH_ARGS)

$(BENCH_STAMP): $(STAMP)
	$(VPY) -m pip install --disable-pip-version-check -e '.[test,bench]'
	touch $@

# librdkafka-dev for rdkafka.h (unless PYRDK_RDKAFKA_INCLUDE points elsewhere), a C compiler,
# Python's headers and venv support, a Java runtime for Spark and for the ZooKeeper server
# the tests start (its jars come with pyspark), and stunnel, the TLS terminator the security
# tests put in front of Tansu: apt-get only what is absent.
sysdeps:
	@missing=""; \
	if [ -z "$$PYRDK_RDKAFKA_INCLUDE" ] && [ ! -f $(RDKAFKA_H) ]; then missing="$$missing librdkafka-dev"; fi; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc libc6-dev"; \
	command -v stunnel4 >/dev/null 2>&1 || command -v stunnel >/dev/null 2>&1 || missing="$$missing stunnel4"; \
	command -v java >/dev/null 2>&1 || [ -x "$$JAVA_HOME/bin/java" ] || missing="$$missing default-jre-headless"; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	$(PYTHON) -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
		|| missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(APT_GET) update && $(APT_GET) install -y --no-install-recommends $$missing; \
	fi

$(VPY): | sysdeps
	$(PYTHON) -m venv $(VENV)

# An older in-place build (python build_ffi.py) would shadow the one pip makes.
$(STAMP): $(BUILD_INPUTS) | $(VPY) sysdeps
	rm -f pyrdk/_rdkafka*.so pyrdk/_rdkafka.c pyrdk/_core*.so
	$(VPY) -m pip install --disable-pip-version-check --upgrade pip
	$(VPY) -m pip install --disable-pip-version-check -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .tox .mypy_cache
	rm -f pyrdk/_rdkafka.c pyrdk/_rdkafka*.so pyrdk/_rdkafka.o pyrdk/_core*.so csrc/*.o csrc/core/*.o
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
