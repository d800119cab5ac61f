"""pyrdk side by side with confluent-kafka, kafka-python, aiokafka and a native C loop.

``python bench/run.py`` (what ``make bench`` runs) starts one Tansu broker, measures every
case in CASES at every size in SIZES (each run in its own process: ``bench/worker.py``, or
the compiled ``bench/native.c``), then the latency and memory modes, and writes
``bench/results/latest.json``, ``latest.png``, ``cpu.png`` and ``memory.png``. ``--quick`` is a
ten-times smaller run for development (most of its cases too short to give a rate: see
MIN_TIMED_S). ``--modes connections --sizes 1024,10240`` measures the
broker's pace per connection instead (give it its own ``--out``: it writes ``latest.json``).
"""
import argparse
import concurrent.futures
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from settings import FILL, LATENCY, NATIVE, TUNED  # noqa: E402

PARTITIONS = 4
# (value bytes, messages): enough that every case's timed section outlasts MIN_TIMED_S on a
# quiet machine (at 100 B the fastest read 1,000,000 messages in under 0.4 s).
SIZES = [(100, 3000000), (1024, 300000), (10240, 50000)]
REPEAT = 3
CASE_TIMEOUT_S = 300
LATENCY_RATE = 10000
LATENCY_SECONDS = 10
MEMORY_COUNT = 5000000
# A case whose timed section lasts less than this is too short to measure: its rate would be
# the fixed costs inside it (the first fetch's round trip, the flush's last one) and the shared
# machine's hiccups more than the client's pace, or, for a consumer whose whole run had come
# in one fetch, the reading of data already there. Such a case shows "too short" and why
# instead of its rates, ratios and broker cores; its client CPU per message stands (CPU time
# counts no waiting, and every message is read within the section).
MIN_TIMED_S = 0.5

# (name, "produce" or "consume", settings shown in the table, fraction of the messages).
# A case is a function registered under its name in worker.py, or "native.*" (native.c).
# The pure-Python clients run once, on a tenth of the messages: at their speed (kafka-python
# writes under 1,000 msgs/s of 10 KB against Tansu) the full counts, three times, would not
# fit in the time budget; they are far from the rows the targets compare. aiokafka's consumer
# reads a tenth in under MIN_TIMED_S: it reads the full count instead, once. Each consumer
# reads a topic holding exactly its count, so that nothing it prefetches is left unread.
# "pyrdk-py.*" are the "pyrdk.*" cases on pyrdk's pure-Python core (PYRDK_IMPL=python);
# "pyrdk-aio.*" are the aiokafka programs with ``import pyrdk.aio as aiokafka``.
FULL, SLOW = 1, 10
CASES = [
    ("native.produce", "produce", "tuned", FULL),
    ("pyrdk.produce", "produce", "defaults", FULL),
    ("pyrdk.produce_batch", "produce", "defaults", FULL),
    ("pyrdk-py.produce", "produce", "defaults", FULL),
    ("pyrdk-py.produce_batch", "produce", "defaults", FULL),
    ("confluent.produce", "produce", "defaults", FULL),
    ("confluent.produce.tuned", "produce", "tuned", FULL),
    ("kafka-python.produce.tuned", "produce", "tuned", SLOW),
    ("aiokafka.produce.tuned", "produce", "tuned", SLOW),
    ("pyrdk-aio.produce.tuned", "produce", "tuned", FULL),
    ("native.consume", "consume", "tuned", FULL),
    ("pyrdk.consume", "consume", "defaults", FULL),
    ("pyrdk.consume_batch", "consume", "defaults", FULL),
    ("pyrdk-py.consume", "consume", "defaults", FULL),
    ("pyrdk-py.consume_batch", "consume", "defaults", FULL),
    ("confluent.consume", "consume", "defaults", FULL),
    ("confluent.consume.tuned", "consume", "tuned", FULL),
    ("kafka-python.consume.tuned", "consume", "tuned", SLOW),
    ("aiokafka.consume.tuned", "consume", "tuned", FULL),
    ("pyrdk-aio.consume.tuned", "consume", "tuned", FULL),
]
# More cases go here, as rows like those above, with their function registered in worker.py
# under the same name. The Spark batch read and write count rows/s through the pyrdk source and
# sink (PySpark's Python workers on local[2], so their RSS column is the driver's alone).
EXTRA_CASES = [
    ("pyrdk.spark.read", "consume", "defaults", FULL),
    ("pyrdk.spark.write", "produce", "defaults", FULL),
    ("pyrdk.spout.storm", "consume", "defaults", SLOW),
]
# Cases that run once: the Spark read and write start a JVM each run (about 25 s) and time 3
# warm queries after a cold one; the spout's tuples go through Storm's multi-lang protocol (a
# tenth of the count); the pure-Python core's rows say what the fallback costs, and aiokafka's
# consumer is the pure-Python client the aio rows compare with, each at full count so that it
# lasts long enough, once to keep the run short.
RUN_ONCE = {"pyrdk.spark.read", "pyrdk.spark.write", "pyrdk.spout.storm", "aiokafka.consume.tuned",
            "pyrdk-py.produce", "pyrdk-py.produce_batch",
            "pyrdk-py.consume", "pyrdk-py.consume_batch"}

BASELINE = {"produce": "confluent.produce.tuned", "consume": "confluent.consume.tuned"}
NATIVE_CASE = {"produce": "native.produce", "consume": "native.consume"}

# Client CPU per message: (path, pyrdk's case, the reference case, the most pyrdk may spend
# as a multiple of the reference's), checked at every size; the pure-Python core's row is
# shown beside each, without a target.
CPU_TARGETS = [
    ("per-message produce()", "pyrdk.produce", "confluent.produce.tuned", 0.6),
    ("produce_batch()", "pyrdk.produce_batch", "native.produce", 1.15),
    ("iteration", "pyrdk.consume", "confluent.consume.tuned", 0.6),
    ("consume_batch()", "pyrdk.consume_batch", "native.consume", 1.15),
]


# -- broker and topics ----------------------------------------------------------------------------

class Broker:
    """One Tansu broker for the whole run, and the topics made on it."""

    def __init__(self):
        from pyrdk.testing import TansuBroker
        self.tansu = TansuBroker().start()
        self.hosts = self.tansu.bootstrap_servers
        from confluent_kafka.admin import AdminClient
        self._admin = AdminClient({"bootstrap.servers": self.hosts})

    def new_topic(self, prefix):
        from confluent_kafka.admin import NewTopic
        name = "%s-%s" % (prefix, uuid.uuid4().hex[:8])
        for future in self._admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
            future.result(30)
        return name

    def cpu_seconds(self):
        """The CPU time the broker process has used so far (``/proc/PID/stat``)."""
        with open("/proc/%d/stat" % self.tansu.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def delete_topic(self, name):
        """Tansu keeps everything in memory: each run's topic goes once measured."""
        for future in self._admin.delete_topics([name]).values():
            future.result(30)

    def stop(self):
        self._admin = None  # its handle goes first, or it logs the stopped broker's refusals
        self.tansu.stop()


# -- running one case -------------------------------------------------------------------------------

def build_native(workdir):
    """Compile native.c against the librdkafka pyrdk runs on (headers: /usr/include)."""
    from pyrdk._ffi import LIBRARY_PATH
    exe = os.path.join(workdir, "native")
    include = os.environ.get("PYRDK_RDKAFKA_INCLUDE")
    cmd = ["gcc", "-O2", "-o", exe, os.path.join(HERE, "native.c")] + \
        (["-I", include] if include else []) + \
        [LIBRARY_PATH, "-Wl,-rpath," + os.path.dirname(LIBRARY_PATH)]
    subprocess.run(cmd, check=True)
    return exe, LIBRARY_PATH


def _command(name, args, native):
    if name.startswith("native."):
        mode = name.split(".")[1]
        return [native, mode, args["brokers"], args["topic"], str(args["count"]), str(args["size"])] + \
            ["%s=%s" % kv for kv in dict(NATIVE[mode], **args.get("settings", {})).items()]
    return [sys.executable, os.path.join(HERE, "worker.py"), json.dumps(dict(args, case=name))]


def _environment(name):
    """The case's environment: PYRDK_IMPL chooses the pyrdk core it runs on ("python" for the
    "pyrdk-py.*" cases, else "c", whatever the caller's shell says)."""
    return dict(os.environ, PYRDK_IMPL="python" if name.startswith("pyrdk-py.") else "c")


def too_short(seconds):
    """Why a timed section of ``seconds`` is too short to give a rate (MIN_TIMED_S), or None."""
    if seconds >= MIN_TIMED_S:
        return None
    return "timed %.0f ms, under the %.0f ms minimum" % (seconds * 1e3, MIN_TIMED_S * 1e3)


def run_case(name, args, native, on_line=None, on_start=None):
    """Run one case in a child process; its result with ``peak_rss_mb`` (``ru_maxrss``)."""
    proc = subprocess.Popen(_command(name, args, native), stdout=subprocess.PIPE, text=True,
                            cwd=ROOT, env=_environment(name))
    if on_start is not None:
        on_start(proc)
    timer = threading.Timer(CASE_TIMEOUT_S, proc.kill)
    timer.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if on_line is not None:
                on_line(line)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        timer.cancel()
    if proc.returncode != 0:
        raise RuntimeError("%s failed (exit %s)" % (name, proc.returncode))
    text = [ln for ln in lines if ln.startswith("RESULT ") or ln.startswith("{")][-1]
    result = json.loads(text[len("RESULT "):] if text.startswith("RESULT ") else text)
    if result["count"] != args["count"]:
        raise RuntimeError("%s handled %d of %d messages" % (name, result["count"], args["count"]))
    result["peak_rss_mb"] = usage.ru_maxrss / 1024.0
    return result


def _fill(broker, native, size, count):
    """A new topic holding ``count`` messages of ``size`` bytes, spread over its partitions."""
    topic = broker.new_topic("source-%d" % size)
    run_case("native.produce", dict(brokers=broker.hosts, topic=topic, count=count, size=size, settings=FILL),
             native)
    return topic


def throughput(broker, native, sizes, repeat, log, only=None):
    """Every case at every size, median of ``repeat`` runs (each producer on a fresh topic);
    ``only``: the cases whose name contains one of these strings (and the baselines)."""
    results = []
    cases = [c for c in CASES + EXTRA_CASES if not only or c[0] in BASELINE.values() or
             c[0] in NATIVE_CASE.values() or any(o in c[0] for o in only)]
    for size, count in sizes:
        runs, failed = {}, {}
        for kind in ("produce", "consume"):
            sources = {}  # consumers' topics, by message count
            for rep in range(repeat):
                for name, case_kind, settings, fraction in cases:
                    if case_kind != kind or (rep > 0 and (fraction != FULL or name in RUN_ONCE)):
                        continue
                    n = count // fraction
                    if kind == "consume" and n not in sources:
                        sources[n] = _fill(broker, native, size, n)
                    topic = sources[n] if kind == "consume" else broker.new_topic("bench-%d" % size)
                    args = dict(brokers=broker.hosts, topic=topic, count=n, size=size, partitions=PARTITIONS)
                    try:
                        cpu = broker.cpu_seconds()
                        result = run_case(name, args, native)
                        result["broker_cpu_s"] = broker.cpu_seconds() - cpu
                    except RuntimeError as exc:  # shown in the table; the other cases go on
                        log("  %-28s %6d B  run %d: FAILED: %s" % (name, size, rep + 1, exc))
                        failed.setdefault(name, []).append(str(exc))
                        continue
                    finally:
                        if kind == "produce":
                            broker.delete_topic(topic)
                    runs.setdefault(name, []).append(result)
                    log("  %-28s %6d B  run %d: %s  %s µs CPU/msg  %6.0f MB peak" % (
                        name, size, rep + 1, too_short(result["seconds"]) or
                        "%10.0f msgs/s" % (result["count"] / result["seconds"]),
                        _number(_cpu_us(result, n)), result["peak_rss_mb"]))
            for topic in sources.values():
                broker.delete_topic(topic)
        for name, kind, settings, fraction in cases:
            if name in runs or name in failed:
                results.append(_row(name, kind, settings, size, count // fraction, runs.get(name, []),
                                    failed.get(name, [])))
    _ratios(results)
    return results


def _cpu_us(result, count):
    """The client's CPU time per message of one run, in µs (None: not measured)."""
    cpu = result.get("cpu_seconds")
    return None if cpu is None else cpu / count * 1e6


def _row(name, kind, settings, size, count, runs, errors):
    """One case at one size: medians over its runs; a case with any run too short to measure
    gives no rate (MIN_TIMED_S)."""
    row = dict(case=name, kind=kind, settings=settings, size=size, count=count, runs=len(runs),
               errors=errors, msgs_per_s=None, mb_per_s=None, broker_cores=None, cpu_us_per_msg=None,
               too_short=None, implementation=None, cold=False, note=None)
    if not runs:
        return row
    secs = statistics.median(r["seconds"] for r in runs)
    cpus = [_cpu_us(r, count) for r in runs]
    shortest = min(r["seconds"] for r in runs)
    row.update(seconds=secs, all_seconds=[r["seconds"] for r in runs],
               peak_rss_mb=statistics.median(r["peak_rss_mb"] for r in runs),
               cpu_us_per_msg=None if None in cpus else statistics.median(cpus),
               all_cpu_seconds=[r.get("cpu_seconds") for r in runs],
               too_short=too_short(shortest), implementation=runs[0].get("implementation"),
               cold=bool(runs[0].get("cold")), note=runs[0].get("note"))
    if row["too_short"] is None:
        row.update(msgs_per_s=count / secs, mb_per_s=count * size / secs / 1e6,
                   broker_cores=statistics.median(r["broker_cpu_s"] / r["seconds"] for r in runs))
    return row


def _ratios(results):
    """Each row's msgs/s and client CPU per message as multiples of the same size's
    confluent-kafka (tuned) and native rows (None where either figure is missing)."""
    by_key = {(r["case"], r["size"]): r for r in results}
    for r in results:
        for suffix, ref in (("confluent", BASELINE[r["kind"]]), ("native", NATIVE_CASE[r["kind"]])):
            base = by_key.get((ref, r["size"]), {})
            r["vs_" + suffix] = _divide(r["msgs_per_s"], base.get("msgs_per_s"))
            r["cpu_vs_" + suffix] = _divide(r["cpu_us_per_msg"], base.get("cpu_us_per_msg"))


def _divide(a, b):
    return None if a is None or not b else a / b


def cpu_targets(results):
    """CPU_TARGETS at every size: pyrdk's client CPU per message over the reference's, whether
    it is within the target, and the same ratio for the pure-Python core's row."""
    by_key = {(r["case"], r["size"]): r for r in results}
    out = []
    for size in sorted({r["size"] for r in results}):
        for path, case, ref, bound in CPU_TARGETS:
            base = by_key.get((ref, size), {}).get("cpu_us_per_msg")
            row = by_key.get((case, size), {})
            py = by_key.get((case.replace("pyrdk.", "pyrdk-py.", 1), size), {})
            ratio = _divide(row.get("cpu_us_per_msg"), base)
            out.append(dict(path=path, case=case, reference=ref, bound=bound, size=size, ratio=ratio,
                            met=None if ratio is None else ratio <= bound,
                            python_ratio=_divide(py.get("cpu_us_per_msg"), base),
                            python_implementation=py.get("implementation")))
    return out


def connections(broker, native, sizes, repeat, log):
    """The broker's pace per connection: the native loop in one process, then in two side by
    side (each with half the messages, on its own topic, over its own connection), producing
    and then consuming what it produced; msgs/s of both together, from the first one's clock
    start to the last one's stop. Medians of ``repeat`` runs; the ratio is the median of each
    run's two-to-one ratio. A row with any process's timed section too short (MIN_TIMED_S)
    gives no figures."""
    out = []
    for size, count in sizes:
        runs = {(kind, procs): [] for kind in ("produce", "consume") for procs in (1, 2)}
        for _ in range(repeat):
            topics = {procs: [broker.new_topic("bench-%d" % size) for _ in range(procs)] for procs in (1, 2)}
            try:
                for kind in ("produce", "consume"):
                    for procs in (1, 2):
                        runs[kind, procs].append(_side_by_side(broker, native, kind, topics[procs],
                                                               count // procs, size))
            finally:
                for topic in topics[1] + topics[2]:
                    broker.delete_topic(topic)
        for kind in ("produce", "consume"):
            one, two = runs[kind, 1], runs[kind, 2]
            row = dict(kind=kind, size=size, count=count, runs=repeat,
                       too_short=too_short(min(r[2] for r in one + two)))
            if row["too_short"]:
                out.append(row)
                log("  %-8s %6d B  too short: %s" % (kind, size, row["too_short"]))
                continue
            row["ratio"] = statistics.median(b[0] / a[0] for a, b in zip(one, two))
            for procs, results in ((1, one), (2, two)):
                row["msgs_per_s_%d" % procs] = statistics.median(r[0] for r in results)
                row["broker_cores_%d" % procs] = statistics.median(r[1] for r in results)
            out.append(row)
            log("  %-8s %6d B  1 connection %9.0f msgs/s  2 connections %9.0f msgs/s  %.2f x" % (
                kind, size, row["msgs_per_s_1"], row["msgs_per_s_2"], row["ratio"]))
    return out


def _side_by_side(broker, native, kind, topics, count, size):
    """One native process per topic at once, ``count`` messages each: (msgs/s, broker cores,
    the shortest process's timed seconds)."""
    cpu = broker.cpu_seconds()
    with concurrent.futures.ThreadPoolExecutor(len(topics)) as pool:
        spans = list(pool.map(lambda topic: _timed_span("native." + kind, dict(
            brokers=broker.hosts, topic=topic, count=count, size=size), native), topics))
    cpu = broker.cpu_seconds() - cpu
    seconds = max(end for _, end in spans) - min(start for start, _ in spans)
    return count * len(topics) / seconds, cpu / seconds, min(end - start for start, end in spans)


def _timed_span(name, args, native):
    """(start, end) of a case's timed part on this process's monotonic clock."""
    result = run_case(name, args, native)
    end = time.monotonic()  # the case's clock stopped just before its process exited
    return end - result["seconds"], end


def latency(broker, native, seconds, log):
    """Steady LATENCY_RATE msgs/s of 100 B for ``seconds``: p50/p99/max produce -> receive."""
    out = []
    for client in ("pyrdk", "confluent"):
        topic = broker.new_topic("latency")
        args = dict(brokers=broker.hosts, topic=topic, count=LATENCY_RATE * seconds, size=100,
                    partitions=PARTITIONS, rate=LATENCY_RATE)
        result = run_case("latency." + client, dict(args), native)
        broker.delete_topic(topic)
        result.update(client=client, seconds=seconds)
        out.append(result)
        log("  latency %-10s p50 %.1f ms  p99 %.1f ms  max %.1f ms" % (
            client, result["p50_ms"], result["p99_ms"], result["max_ms"]))
    return out


def memory(broker, native, count, log):
    """pyrdk produces then iterates over ``count`` messages of 100 B; RSS sampled every 0.2 s."""
    topic = broker.new_topic("memory")
    samples = []
    phase = ["produce"]
    start = time.monotonic()
    args = dict(brokers=broker.hosts, topic=topic, count=count, size=100, partitions=PARTITIONS)
    proc_holder = {}

    def on_line(line):
        if line.startswith("PHASE "):
            phase[0] = line.split()[1]

    def sample():
        while "done" not in proc_holder:
            pid = proc_holder.get("pid")
            if pid:
                try:
                    with open("/proc/%d/status" % pid) as f:
                        rss = int(f.read().split("VmRSS:")[1].split()[0]) / 1024.0
                    samples.append((round(time.monotonic() - start, 2), round(rss, 1), phase[0]))
                except (OSError, IndexError):
                    pass
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = run_case("memory.pyrdk", args, native, on_line=on_line,
                          on_start=lambda proc: proc_holder.update(pid=proc.pid))
    finally:
        proc_holder["done"] = True
        sampler.join()
        broker.delete_topic(topic)
    peak = {p: max((s[1] for s in samples if s[2] == p), default=None) for p in ("produce", "consume")}
    log("  memory: %d messages, peak RSS %.0f MB producing, %.0f MB consuming" % (
        count, peak["produce"] or 0, peak["consume"] or 0))
    out = dict(count=count, size=100, samples=samples, peak_produce_mb=peak["produce"],
               peak_consume_mb=peak["consume"])
    for phase in ("produce", "consume"):  # side figures: the curve is the point
        seconds = result[phase]["seconds"]
        out[phase + "_too_short"] = too_short(seconds)
        out[phase + "_msgs_per_s"] = None if too_short(seconds) else count / seconds
    return out


# -- output -------------------------------------------------------------------------------------------

def _number(x, fmt="%.2f"):
    return "-" if x is None else fmt % x


def _core(implementation):
    return "%s core" % {"c": "C", "python": "Python"}.get(implementation, implementation)


def _settings(r):
    """The settings cell: pyrdk's rows also name the core that ran, and the Spark rows' notes."""
    notes = [r["settings"]]
    if r.get("implementation"):
        notes.append(_core(r["implementation"]))
    if r.get("cold"):
        notes.append("cold")
    if r.get("note"):
        notes.append(r["note"])
    return ", ".join(notes)


def table(results):
    lines = ["| case | settings | size | messages × runs | msgs/s | MB/s | × confluent (tuned) | × native "
             "| client CPU µs/msg | peak RSS MB | broker cores |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        head = "| %s | %s | %d B | %s × %d |" % (r["case"], _settings(r), r["size"], format(r["count"], ","),
                                               r["runs"])
        if not r["runs"]:
            lines.append(head + " failed | | | | | | |")
            continue
        rate = "too short (%s)" % r["too_short"] if r["too_short"] else format(int(r["msgs_per_s"]), ",")
        lines.append(head + " %s | %s | %s | %s | %s | %.0f | %s |" % (
            rate, _number(r["mb_per_s"], "%.1f"), _number(r["vs_confluent"]), _number(r["vs_native"]),
            _number(r["cpu_us_per_msg"]), r["peak_rss_mb"], _number(r["broker_cores"])))
    if any(r["too_short"] for r in results):
        lines += ["", "too short: a timed section under %.0f ms gives no rate, ratio or broker cores "
                  "(MIN_TIMED_S in bench/run.py); its client CPU per message stands." % (MIN_TIMED_S * 1e3)]
    return "\n".join(lines)


def targets_table(targets):
    lines = ["| client CPU per message | size | target | pyrdk | met? | pyrdk-py (PYRDK_IMPL=python) |",
             "|---|---:|---|---:|---|---:|"]
    for t in targets:
        python = _number(t["python_ratio"])
        if t["python_ratio"] is not None and t["python_implementation"] != "python":
            python += " (the %s ran)" % _core(t["python_implementation"])
        lines.append("| %s | %d B | ≤ %.2f × %s | %s | %s | %s |" % (
            t["path"], t["size"], t["bound"], t["reference"], _number(t["ratio"]),
            "-" if t["met"] is None else "yes" if t["met"] else "no", python))
    return "\n".join(lines)


def chart(results, path, field="msgs_per_s", label="thousand msgs/s", scale=1e-3, log=False):
    """Bars of ``field`` (times ``scale``) per case, produce and consume at each size; a row
    without the figure (too short, not measured) is named, with no bar."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sizes = sorted({r["size"] for r in results})
    fig, axes = plt.subplots(2, len(sizes), figsize=(4.2 * len(sizes), 7), squeeze=False)
    for col, size in enumerate(sizes):
        for row, kind in enumerate(("produce", "consume")):
            ax = axes[row][col]
            rows = [r for r in results if r["size"] == size and r["kind"] == kind and r["runs"]]
            names = [(r["case"].replace(".%s" % kind, "").replace(".tuned", " (t)") or r["case"]) +
                     (" (cold)" if r["cold"] else "") +
                     ("" if r[field] is not None else " (too short)" if r["too_short"] else " (n/a)")
                     for r in rows]
            colors = ["#e59866" if r["case"].startswith("pyrdk-py") else
                      "#c0392b" if r["case"].startswith("pyrdk") else
                      "#7f8c8d" if r["case"].startswith("native") else "#2980b9" for r in rows]
            ax.barh(names[::-1], [(r[field] or 0) * scale for r in rows][::-1], color=colors[::-1])
            if log and any(r[field] for r in rows):
                ax.set_xscale("log")
            ax.set_title("%s, %d B" % (kind, size), fontsize=10)
            ax.set_xlabel(label, fontsize=8)
            ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


def memory_chart(mem, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for phase, color in (("produce", "#c0392b"), ("consume", "#2980b9")):
        pts = [s for s in mem["samples"] if s[2] == phase]
        ax.plot([s[0] for s in pts], [s[1] for s in pts], color=color, label="pyrdk " + phase)
    ax.set_xlabel("seconds")
    ax.set_ylabel("RSS MB")
    ax.set_title("pyrdk RSS over %s messages of 100 B" % format(mem["count"], ","), fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="ten times fewer messages, one run each")
    parser.add_argument("--modes", default="throughput,latency,memory",
                        help="any of throughput, latency, memory, connections (not run by default)")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--only", help="comma-separated parts of case names to run (with the baselines)")
    parser.add_argument("--sizes", help="comma-separated value sizes to run (100,1024,10240)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    opts = parser.parse_args()
    modes = set(opts.modes.split(","))
    scale = 10 if opts.quick else 1
    repeat = opts.repeat or (1 if opts.quick else REPEAT)
    sizes = [(size, count // scale) for size, count in SIZES
             if not opts.sizes or str(size) in opts.sizes.split(",")]
    os.makedirs(opts.out, exist_ok=True)
    began = time.monotonic()

    def log(text):
        print("[%5.0fs] %s" % (time.monotonic() - began, text), flush=True)

    workdir = tempfile.mkdtemp(prefix="pyrdk-bench-")
    native, library = build_native(workdir)
    import pyrdk
    import confluent_kafka
    report = dict(machine=dict(python=platform.python_version(), cpus=os.cpu_count(),
                               platform=platform.platform()),
                  librdkafka=library, pyrdk=pyrdk.librdkafka_version().runtime,
                  confluent_kafka=confluent_kafka.version()[0], repeat=repeat, quick=opts.quick,
                  tuned=TUNED, native=NATIVE, latency_settings=LATENCY, min_timed_s=MIN_TIMED_S)
    broker = Broker()
    try:
        if "throughput" in modes:
            log("throughput (%d partitions, median of %d)" % (PARTITIONS, repeat))
            report["throughput"] = throughput(broker, native, sizes, repeat, log,
                                              opts.only.split(",") if opts.only else None)
            report["cpu_targets"] = cpu_targets(report["throughput"])
        if "connections" in modes:
            log("connections (the native loop, one process and two side by side, median of %d)" % repeat)
            try:
                report["connections"] = connections(broker, native, sizes, repeat, log)
            except RuntimeError as exc:
                log("  connections FAILED: %s" % exc)
        if "latency" in modes:
            log("latency (%d msgs/s)" % LATENCY_RATE)
            try:
                report["latency"] = latency(broker, native, max(2, LATENCY_SECONDS // scale), log)
            except RuntimeError as exc:
                log("  latency FAILED: %s" % exc)
        if "memory" in modes:
            log("memory")
            try:
                report["memory"] = memory(broker, native, MEMORY_COUNT // scale, log)
            except RuntimeError as exc:
                log("  memory FAILED: %s" % exc)
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    report["elapsed_s"] = round(time.monotonic() - began, 1)
    with open(os.path.join(opts.out, "latest.json"), "w") as f:
        json.dump(report, f, indent=1)
    if "throughput" in report:
        print()
        print(table(report["throughput"]))
        print()
        print(targets_table(report["cpu_targets"]))
        chart(report["throughput"], os.path.join(opts.out, "latest.png"))
        chart(report["throughput"], os.path.join(opts.out, "cpu.png"), field="cpu_us_per_msg",
              label="client CPU µs per message (log)", scale=1, log=True)
    if "connections" in report:
        print()
        print("| native loop | size | 1 connection msgs/s | 2 connections msgs/s | × | broker cores (1 / 2) |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in report["connections"]:
            if r["too_short"]:
                print("| %s | %d B | too short (%s) | | | |" % (r["kind"], r["size"], r["too_short"]))
                continue
            print("| %s | %d B | %s | %s | %.2f | %.2f / %.2f |" % (
                r["kind"], r["size"], format(int(r["msgs_per_s_1"]), ","), format(int(r["msgs_per_s_2"]), ","),
                r["ratio"], r["broker_cores_1"], r["broker_cores_2"]))
    if "latency" in report:
        print()
        print("| latency at %d msgs/s | p50 ms | p99 ms | max ms |" % LATENCY_RATE)
        print("|---|---:|---:|---:|")
        for r in report["latency"]:
            print("| %s | %.1f | %.1f | %.1f |" % (r["client"], r["p50_ms"], r["p99_ms"], r["max_ms"]))
    if "memory" in report:
        mem = report["memory"]
        memory_chart(mem, os.path.join(opts.out, "memory.png"))
        print()
        print("memory: %s messages, peak RSS %.0f MB producing, %.0f MB consuming"
              % (format(mem["count"], ","), mem["peak_produce_mb"], mem["peak_consume_mb"]))
    log("done; results in %s" % opts.out)


if __name__ == "__main__":
    main()
