"""Storm's ShellSpout, in Python: runs a multi-lang spout as a real process and speaks Storm's
multi-lang protocol to it, as Storm's ``ShellSpout`` and ``ShellProcess`` do -- to test a
spout (such as :class:`pyrdk.spout.storm.StormKafkaSpout`) without Storm.

Each message is JSON followed by a line ``end``. At launch Storm writes the handshake
(``conf``, ``context``, ``pidDir``) and reads ``{"pid": N}`` (the process also creates a file
named after its pid in ``pidDir``). Then each of ``activate``, ``next``, ``ack``, ``fail`` and
``deactivate`` is written as ``{"command": ..., "id": ...}`` (``id`` is ``""`` for the ones
without a tuple), and Storm reads messages until ``{"command": "sync"}``: ``emit`` (a tuple,
with the spout's ``id`` for a reliable emit; unless ``need_task_ids`` is false Storm answers
with the list of task ids it went to), ``log``, ``error`` and ``metrics``.
"""
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading

PATIENCE_S = 60  # a bound on one answer of the spout; reaching it means it hung


class SpoutDied(AssertionError):
    """The spout process exited, or stopped answering."""


class ShellSpout:
    """A multi-lang spout process driven as Storm drives it.

    :param command: the process to run (for instance ``[python, "src/spouts/events.py"]``)
    :param conf: the topology configuration sent in the handshake
    """

    def __init__(self, command, conf, component="events", task_id=3, env=None, cwd=None, log_path=None):
        self.component = component
        self.task_id = task_id
        self.logs = []
        self.errors = []
        self._lines = queue.Queue()
        self._log = open(log_path or os.devnull, "ab")
        self.piddir = tempfile.mkdtemp(prefix="pyrdk-piddir-")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._log, env=env, cwd=cwd)
        self._reader = threading.Thread(target=self._read_lines, daemon=True)
        self._reader.start()
        context = {"taskid": task_id, "componentid": component, "task->component": {str(task_id): component},
                   "stream->target->grouping": {}, "stream->outputfields": {"default": ["key", "value"]}}
        try:
            self._write({"conf": conf, "context": context, "pidDir": self.piddir})
            self.pid = self._read()["pid"]
            assert os.path.exists(os.path.join(self.piddir, str(self.pid))), "no pid file in pidDir"
        except BaseException:  # nobody has the spout to close: it would be left running
            self.kill()
            self._log.close()
            shutil.rmtree(self.piddir, ignore_errors=True)
            raise

    def _read_lines(self):
        for line in iter(self.process.stdout.readline, b""):
            self._lines.put(line.decode("utf-8"))
        self._lines.put(None)

    def _write(self, message):
        try:
            self.process.stdin.write((json.dumps(message) + "\nend\n").encode("utf-8"))
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise SpoutDied("the spout process is gone (exit status %s)" % self.process.poll()) from None

    def _read(self):
        text = ""
        while True:
            try:
                line = self._lines.get(timeout=PATIENCE_S)
            except queue.Empty:
                raise SpoutDied("the spout did not answer within %ds" % PATIENCE_S) from None
            if line is None:
                raise SpoutDied("the spout process exited (status %s)" % self.process.wait())
            if line == "end\n":
                return json.loads(text)
            text += line

    def command(self, command, tuple_id=""):
        """Send one command; returns the ``(tuple, id)`` pairs emitted before ``sync``."""
        self._write({"command": command, "id": tuple_id})
        emitted = []
        while True:
            message = self._read()
            kind = message.get("command")
            if kind == "sync":
                return emitted
            if kind == "emit":
                emitted.append((message["tuple"], message.get("id")))
                if message.get("need_task_ids", True):
                    self._write([self.task_id + 1])
            elif kind == "log":
                self.logs.append(message.get("msg"))
            elif kind == "error":
                self.errors.append(message.get("msg"))
            elif kind != "metrics":
                raise AssertionError("unknown command from the spout: %r" % (message,))

    def activate(self):
        return self.command("activate")

    def next(self):
        return self.command("next")

    def ack(self, tuple_id):
        return self.command("ack", tuple_id)

    def fail(self, tuple_id):
        return self.command("fail", tuple_id)

    def deactivate(self):
        return self.command("deactivate")

    @property
    def alive(self):
        return self.process.poll() is None

    def close(self):
        """Close its stdin (pystorm exits: Storm went away) and wait; SIGKILL if it lingers."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(PATIENCE_S)
        except subprocess.TimeoutExpired:
            self.kill()
        self._log.close()

    def kill(self):
        """SIGKILL, by pid, and reap."""
        if self.alive:
            self.process.kill()
        self.process.wait(PATIENCE_S)
