"""Where one bench case's CPU goes: run it once in this process, on a broker and a topic made
as bench/run.py makes them, and print its client CPU per message and, with ``--cprofile``,
the functions it spent its time in.

    .venv/bin/python bench/cpu_profile.py pyrdk-aio.produce.tuned --count 300000 --cprofile
    .venv/bin/python bench/cpu_profile.py pyrdk-aio.consume.tuned --count 1000000

cProfile slows Python code several times over (and C code not at all): read its table for
the shares, the run without it for the figure.
"""
import argparse
import cProfile
import os
import pstats
import resource
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402  (bench/run.py: the broker, the topics, the native filler)
import worker  # noqa: E402  (bench/worker.py: the cases)


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("case", help="a case of bench/worker.py, e.g. pyrdk-aio.produce.tuned")
    parser.add_argument("--count", type=int, default=300000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--cprofile", action="store_true", help="print the 25 costliest functions")
    opts = parser.parse_args()
    if opts.case not in worker.CASES:
        parser.error("no case %r; the cases: %s" % (opts.case, ", ".join(sorted(worker.CASES))))
    workdir = tempfile.mkdtemp(prefix="pyrdk-profile-")
    native, _ = run.build_native(workdir)
    broker = run.Broker()
    try:
        if ".consume" in opts.case:
            topic = run._fill(broker, native, opts.size, opts.count)
        else:
            topic = broker.new_topic("profile-%d" % opts.size)
        args = dict(brokers=broker.hosts, topic=topic, count=opts.count, size=opts.size, partitions=run.PARTITIONS)
        profiler = cProfile.Profile() if opts.cprofile else None
        cpu = _cpu()
        if profiler is not None:
            profiler.enable()
        result = worker.CASES[opts.case](**args)
        if profiler is not None:
            profiler.disable()
        cpu = _cpu() - cpu
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print("%s: %d messages of %d B in %.2f s, %.0f msgs/s, %.2f µs client CPU/msg timed (%.2f with start "
          "and stop)" % (opts.case, result["count"], opts.size, result["seconds"], result["count"] / result["seconds"],
                         result["cpu_seconds"] / result["count"] * 1e6, cpu / result["count"] * 1e6))
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
