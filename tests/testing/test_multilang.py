"""pyrdk.testing.multilang.ShellSpout: a spout process that fails its handshake is not left
running."""
import os
import signal
import sys

import pytest

from pyrdk.testing.multilang import ShellSpout

# Reads the handshake, answers with a pid for which it wrote no pid file, and stays.
WRONG_HANDSHAKE = """\
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
sys.stdin.readline(); sys.stdin.readline()
print('{"pid": 1}'); print("end"); sys.stdout.flush()
time.sleep(600)
"""


def test_a_spout_that_fails_its_handshake_is_stopped(tmp_path):
    pid_path = tmp_path / "pid"
    pid = None
    try:
        with pytest.raises(AssertionError, match="no pid file in pidDir"):
            ShellSpout([sys.executable, "-c", WRONG_HANDSHAKE, str(pid_path)], {})
        pid = int(pid_path.read_text())
        with pytest.raises(ProcessLookupError):  # killed and reaped: nobody had it to close
            os.kill(pid, 0)
        pid = None
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
