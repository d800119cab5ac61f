"""Running the real commands as subprocesses: ``pyrdk`` (``python -m pyrdk``) and the
``kafka-tools`` console script."""
import json
import os
import subprocess
import sys

BIN = os.path.dirname(sys.executable)
# A bound for a hung command, never a timing assertion.
TIMEOUT_S = 120


class Result:
    def __init__(self, proc):
        self.code = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    @property
    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return "<exit %s, stdout %r, stderr %r>" % (self.code, self.out[-2000:], self.err[-2000:])


def run(args, hosts=None, stdin=None, env=None, timeout_s=TIMEOUT_S, program=None):
    """Run ``pyrdk ARGS`` (or ``program``, a list) with ``PYRDK_HOSTS=hosts``; its Result."""
    environ = dict(os.environ, **(env or {}))
    environ.pop("PYRDK_TRACEBACK", None)
    if hosts is not None:
        environ["PYRDK_HOSTS"] = hosts
    command = (program or [sys.executable, "-m", "pyrdk"]) + [a if isinstance(a, bytes) else str(a) for a in args]
    proc = subprocess.run(command, input=stdin, capture_output=True, env=environ, timeout=timeout_s)
    return Result(_text(proc))


def kafka_tools(args, hosts, **kwargs):
    """Run the ``kafka-tools`` console script with ``-b hosts``."""
    return run(["-b", hosts] + list(args), program=[os.path.join(BIN, "kafka-tools")], **kwargs)


def _text(proc):
    for name in ("stdout", "stderr"):
        value = getattr(proc, name)
        if isinstance(value, bytes):
            setattr(proc, name, value.decode("utf-8", "replace"))
    return proc


def assert_one_line_error(result, *fragments):
    """Exit 1, one line on stderr starting with ``error:`` and holding ``fragments``, no traceback."""
    assert result.code == 1, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], result
