"""pyrdk side by side with confluent-kafka, kafka-python, aiokafka and a native C loop.

``python bench/run.py`` (what ``make bench`` runs) starts one Tansu broker, measures every
case in CASES at every size in SIZES (each run in its own process: ``bench/worker.py``, or
the compiled ``bench/native.c``), then the latency and memory modes, and writes
``bench/results/latest.json``, ``latest.png`` and ``memory.png``. ``--quick`` is a
ten-times smaller run for development. ``--modes connections --sizes 1024,10240`` measures the
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

from settings import LATENCY, NATIVE, TUNED  # noqa: E402

PARTITIONS = 4
SIZES = [(100, 1000000), (1024, 300000), (10240, 50000)]  # (value bytes, messages)
REPEAT = 3
CASE_TIMEOUT_S = 300
LATENCY_RATE = 10000
LATENCY_SECONDS = 10
MEMORY_COUNT = 5000000

# (name, "produce" or "consume", settings shown in the table, fraction of the messages).
# A case is a function registered under its name in worker.py, or "native.*" (native.c).
# The pure-Python clients run once, on a tenth of the messages: at their speed (kafka-python
# writes under 1,000 msgs/s of 10 KB against Tansu) the full counts, three times, would not
# fit in the time budget; they are far from the rows the targets compare.
FULL, SLOW = 1, 10
CASES = [
    ("native.produce", "produce", "tuned", FULL),
    ("pyrdk.produce", "produce", "defaults", FULL),
    ("pyrdk.produce_batch", "produce", "defaults", FULL),
    ("confluent.produce", "produce", "defaults", FULL),
    ("confluent.produce.tuned", "produce", "tuned", FULL),
    ("kafka-python.produce.tuned", "produce", "tuned", SLOW),
    ("aiokafka.produce.tuned", "produce", "tuned", SLOW),
    ("native.consume", "consume", "tuned", FULL),
    ("pyrdk.consume", "consume", "defaults", FULL),
    ("pyrdk.consume_batch", "consume", "defaults", FULL),
    ("confluent.consume", "consume", "defaults", FULL),
    ("confluent.consume.tuned", "consume", "tuned", FULL),
    ("kafka-python.consume.tuned", "consume", "tuned", SLOW),
    ("aiokafka.consume.tuned", "consume", "tuned", SLOW),
]
# More cases go here, as rows like those above, with their function registered in worker.py
# under the same name. The Spark batch read counts rows/s through the pyrdk source (PySpark's
# Python workers on local[2], so its RSS column is the driver's alone).
EXTRA_CASES = [
    ("pyrdk.spark.read", "consume", "defaults", FULL),
]
# Cases that run once at full count: the Spark read starts a JVM each run (about 25 s), and
# is not one of the rows the targets compare.
RUN_ONCE = {"pyrdk.spark.read"}

BASELINE = {"produce": "confluent.produce.tuned", "consume": "confluent.consume.tuned"}
NATIVE_CASE = {"produce": "native.produce", "consume": "native.consume"}


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
            ["%s=%s" % kv for kv in NATIVE[mode].items()]
    return [sys.executable, os.path.join(HERE, "worker.py"), json.dumps(dict(args, case=name))]


def run_case(name, args, native, on_line=None, on_start=None):
    """Run one case in a child process; its result with ``peak_rss_mb`` (``ru_maxrss``)."""
    proc = subprocess.Popen(_command(name, args, native), stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
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
    topic = broker.new_topic("source-%d" % size)
    run_case("native.produce", dict(brokers=broker.hosts, topic=topic, count=count, size=size), native)
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
            source = _fill(broker, native, size, count) if kind == "consume" else None
            for rep in range(repeat):
                for name, case_kind, settings, fraction in cases:
                    if case_kind != kind or (rep > 0 and (fraction != FULL or name in RUN_ONCE)):
                        continue
                    topic = source or broker.new_topic("bench-%d" % size)
                    args = dict(brokers=broker.hosts, topic=topic, count=count // fraction, size=size,
                                partitions=PARTITIONS)
                    try:
                        cpu = broker.cpu_seconds()
                        result = run_case(name, args, native)
                        result["broker_cpu_s"] = broker.cpu_seconds() - cpu
                    except RuntimeError as exc:  # shown in the table; the other cases go on
                        log("  %-28s %6d B  run %d: FAILED: %s" % (name, size, rep + 1, exc))
                        failed.setdefault(name, []).append(str(exc))
                        continue
                    finally:
                        if source is None:
                            broker.delete_topic(topic)
                    runs.setdefault(name, []).append(result)
                    log("  %-28s %6d B  run %d: %10.0f msgs/s  %6.0f MB peak" % (
                        name, size, rep + 1, result["count"] / result["seconds"], result["peak_rss_mb"]))
            if source is not None:
                broker.delete_topic(source)
        for name, kind, settings, fraction in cases:
            if name in failed and name not in runs:
                results.append(dict(case=name, kind=kind, settings=settings, size=size,
                                    count=count // fraction, runs=0, errors=failed[name]))
            if name not in runs:
                continue
            secs = statistics.median(r["seconds"] for r in runs[name])
            n = count // fraction
            results.append(dict(case=name, kind=kind, settings=settings, size=size, count=n,
                                runs=len(runs[name]), seconds=secs, msgs_per_s=n / secs,
                                mb_per_s=n * size / secs / 1e6,
                                peak_rss_mb=statistics.median(r["peak_rss_mb"] for r in runs[name]),
                                broker_cores=statistics.median(r["broker_cpu_s"] / r["seconds"] for r in runs[name]),
                                all_seconds=[r["seconds"] for r in runs[name]],
                                errors=failed.get(name, [])))
    by_key = {(r["case"], r["size"]): r for r in results if r["runs"]}
    for r in results:
        if not r["runs"]:
            r["vs_confluent"] = r["vs_native"] = None
            continue
        for field, ref in (("vs_confluent", BASELINE[r["kind"]]), ("vs_native", NATIVE_CASE[r["kind"]])):
            base = by_key.get((ref, r["size"]))
            r[field] = r["msgs_per_s"] / base["msgs_per_s"] if base else None
    return results


def connections(broker, native, sizes, repeat, log):
    """The broker's pace per connection: the native loop in one process, then in two side by
    side (each with half the messages, on its own topic, over its own connection), producing
    and then consuming what it produced; msgs/s of both together, from the first one's clock
    start to the last one's stop. Medians of ``repeat`` runs; the ratio is the median of each
    run's two-to-one ratio."""
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
                       ratio=statistics.median(b[0] / a[0] for a, b in zip(one, two)))
            for procs, results in ((1, one), (2, two)):
                row["msgs_per_s_%d" % procs] = statistics.median(r[0] for r in results)
                row["broker_cores_%d" % procs] = statistics.median(r[1] for r in results)
            out.append(row)
            log("  %-8s %6d B  1 connection %9.0f msgs/s  2 connections %9.0f msgs/s  %.2f x" % (
                kind, size, row["msgs_per_s_1"], row["msgs_per_s_2"], row["ratio"]))
    return out


def _side_by_side(broker, native, kind, topics, count, size):
    """One native process per topic at once, ``count`` messages each: (msgs/s, broker cores)."""
    cpu = broker.cpu_seconds()
    with concurrent.futures.ThreadPoolExecutor(len(topics)) as pool:
        spans = list(pool.map(lambda topic: _timed_span("native." + kind, dict(
            brokers=broker.hosts, topic=topic, count=count, size=size), native), topics))
    cpu = broker.cpu_seconds() - cpu
    seconds = max(end for _, end in spans) - min(start for start, _ in spans)
    return count * len(topics) / seconds, cpu / seconds


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
    return dict(count=count, size=100, samples=samples, peak_produce_mb=peak["produce"],
                peak_consume_mb=peak["consume"], produce_msgs_per_s=count / result["produce"]["seconds"],
                consume_msgs_per_s=count / result["consume"]["seconds"])


# -- output -------------------------------------------------------------------------------------------

def _ratio(x):
    return "  -  " if x is None else "%.2f" % x


def table(results):
    lines = ["| case | settings | size | messages × runs | msgs/s | MB/s | × confluent (tuned) | × native "
             "| peak RSS MB | broker cores |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if not r["runs"]:
            lines.append("| %s | %s | %d B | %s × 0 | failed | | | | | |" % (
                r["case"], r["settings"], r["size"], format(r["count"], ",")))
            continue
        lines.append("| %s | %s | %d B | %s × %d | %s | %.1f | %s | %s | %.0f | %.2f |" % (
            r["case"], r["settings"], r["size"], format(r["count"], ","), r["runs"],
            format(int(r["msgs_per_s"]), ","), r["mb_per_s"],
            _ratio(r["vs_confluent"]), _ratio(r["vs_native"]), r["peak_rss_mb"], r["broker_cores"]))
    return "\n".join(lines)


def chart(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sizes = sorted({r["size"] for r in results})
    fig, axes = plt.subplots(2, len(sizes), figsize=(4.2 * len(sizes), 7), squeeze=False)
    for col, size in enumerate(sizes):
        for row, kind in enumerate(("produce", "consume")):
            ax = axes[row][col]
            rows = [r for r in results if r["size"] == size and r["kind"] == kind and r["runs"]]
            names = [r["case"].replace(".%s" % kind, "").replace(".tuned", " (t)") or r["case"] for r in rows]
            colors = ["#c0392b" if r["case"].startswith("pyrdk") else
                      "#7f8c8d" if r["case"].startswith("native") else "#2980b9" for r in rows]
            ax.barh(names[::-1], [r["msgs_per_s"] / 1e3 for r in rows][::-1], color=colors[::-1])
            ax.set_title("%s, %d B" % (kind, size), fontsize=10)
            ax.set_xlabel("thousand msgs/s", fontsize=8)
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
                  tuned=TUNED, native=NATIVE, latency_settings=LATENCY)
    broker = Broker()
    try:
        if "throughput" in modes:
            log("throughput (%d partitions, median of %d)" % (PARTITIONS, repeat))
            report["throughput"] = throughput(broker, native, sizes, repeat, log,
                                              opts.only.split(",") if opts.only else None)
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
        chart(report["throughput"], os.path.join(opts.out, "latest.png"))
    if "connections" in report:
        print()
        print("| native loop | size | 1 connection msgs/s | 2 connections msgs/s | × | broker cores (1 / 2) |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in report["connections"]:
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
