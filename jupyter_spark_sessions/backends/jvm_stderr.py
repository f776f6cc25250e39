"""The stderr of the JVM this project launches: every line reaches the kernel's stderr
(so a notebook cell, and the server's log) as before, except the lines every start
prints that a notebook user reads as errors though nothing is wrong, and the ERROR of
an expected event Spark recovers from (a lost executor), told in one line on stdout.

Why a filter on the JVM's stderr rather than log4j or JVM options: the loudest line,
``WARNING: Using incubator modules: jdk.incubator.vector``, is not log4j's; the JVM
prints it at start because Spark adds ``--add-modules=jdk.incubator.vector`` (which
Spark uses), and no JVM option silences that one warning alone. The filter drops only
whole lines that match ``HARMLESS`` exactly; any other line, a real ERROR included,
goes through unchanged, whatever log4j configuration (the project's or the user's)
wrote it. The JVM used to inherit the kernel's stderr (file descriptor 2): now it writes
into a pipe that a thread of the kernel reads and forwards to file descriptor 2, which
ipykernel forwards into the running cell just as before.

PySpark's ``launch_gateway`` (``pyspark.java_gateway``, not public API) takes the
``popen_kwargs`` that carry the pipe: one wrapper here, checked by
``tests/test_private_apis.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: Whole lines (without their line end) that the JVM prints when nothing is wrong.
HARMLESS = (
    # Printed by the JVM itself at every start: Spark asks for the incubator module.
    re.compile(rb"WARNING: Using incubator modules: [\w.,]+"),
    # Another driver on the machine (another kernel) holds the UI's port: Spark takes the
    # next one, which is the address the sidebar and the panel link to.
    re.compile(
        rb".*\bWARN\b.*Service 'SparkUI' could not bind on port \d+\. Attempting port \d+\."
    ),
)

#: Expected events that Spark logs as ERRORs and recovers from by itself: each is told in
#: one line on stdout instead (a notebook shows stderr in red), saying what Spark does.
RETOLD = (
    # An executor died (killed, out of memory, its machine lost): Spark runs the tasks it
    # had on the other executors (a cluster manager starts a new one); the job fails
    # only when a task keeps failing, and then the cell says so with the job's error.
    (
        re.compile(
            rb".*\bERROR\b.*TaskSchedulerImpl: Lost executor (?P<executor>\S+) on "
            rb"(?P<host>\S+?):? (?P<reason>.*)"
        ),
        "Spark lost executor {executor} on {host} ({reason}); it runs the executor's tasks "
        "again on other executors.\n",
    ),
)

#: A partial line (no line end yet) is forwarded when nothing follows for this long: a
#: progress bar's updates end with a carriage return, a prompt with nothing at all.
PARTIAL_LINE_SECONDS = 0.2

_READ_SIZE = 65536


def is_harmless(line: bytes) -> bool:
    """Whether ``line`` (with or without its line end) is one of ``HARMLESS``."""
    text = line.rstrip(b"\r\n")
    return any(pattern.fullmatch(text) for pattern in HARMLESS)


def route(lines: Iterable[bytes]) -> list[tuple[int, bytes]]:
    """Where ``lines`` (each with its line end) go, in order, as (file descriptor, bytes)
    with neighbours to the same descriptor joined: a harmless line nowhere, a RETOLD
    event's one line to stdout (1), any other line unchanged to stderr (2)."""
    routed: list[tuple[int, bytes]] = []
    for line in lines:
        if is_harmless(line):
            continue
        fd, data = _retold(line) or (2, line)
        if routed and routed[-1][0] == fd:
            routed[-1] = (fd, routed[-1][1] + data)
        else:
            routed.append((fd, data))
    return routed


def _retold(line: bytes) -> tuple[int, bytes] | None:
    text = line.rstrip(b"\r\n")
    for pattern, story in RETOLD:
        found = pattern.fullmatch(text)
        if found:
            parts = {k: v.decode("utf-8", "replace") for k, v in found.groupdict().items()}
            return 1, story.format(**parts).encode("utf-8")
    return None


class StderrFilter:
    """A pipe for a child process's stderr, read on a daemon thread that passes what
    ``route`` makes of each line to ``forward(fd, data)`` (default: written to this
    process's file descriptor ``fd``, wherever it points when the line arrives). The
    thread ends when every writer of the pipe (the JVM and the processes it starts) has
    closed it."""

    def __init__(self, forward: Callable[[int, bytes], None] | None = None) -> None:
        self._forward = forward or _write
        self._read, self.write_fd = os.pipe()
        self.thread = threading.Thread(target=self._pump, name="jss-jvm-stderr", daemon=True)
        self.thread.start()

    def close_write_end(self) -> None:
        """Close this process's copy of the pipe's write end (once the child has its own),
        so that the thread sees the end of the stream when the child exits."""
        fd, self.write_fd = self.write_fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _pump(self) -> None:
        pending = b""
        try:
            while True:
                if pending:
                    ready, _, _ = select.select([self._read], [], [], PARTIAL_LINE_SECONDS)
                    if not ready:  # a partial line nothing completes soon: show it
                        self._send([pending])
                        pending = b""
                        continue
                chunk = os.read(self._read, _READ_SIZE)
                if not chunk:
                    break
                lines = (pending + chunk).splitlines(keepends=True)
                pending = b"" if lines[-1].endswith((b"\n", b"\r")) else lines.pop()
                self._send(lines)
            self._send([pending] if pending else [])
        finally:
            os.close(self._read)

    def _send(self, lines: list[bytes]) -> None:
        for fd, data in route(lines):
            # Never stop reading: a JVM whose stderr nobody reads blocks once it is full.
            with contextlib.suppress(Exception):
                self._forward(fd, data)


def _write(fd: int, data: bytes) -> None:
    while data:
        written = os.write(fd, data)
        data = data[written:]


def launch_gateway(settings: Mapping[str, str]) -> Any:
    """PySpark's py4j gateway to a new JVM started with ``settings`` (as
    ``SparkSession.builder.getOrCreate()`` would start it), whose stderr goes through a
    ``StderrFilter``. Private PySpark API (``launch_gateway``'s ``popen_kwargs``)."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway as pyspark_launch_gateway

    conf = SparkConf()
    for key, value in settings.items():
        conf.set(key, value)
    stderr = StderrFilter()
    try:
        return pyspark_launch_gateway(conf, popen_kwargs={"stderr": stderr.write_fd})  # type: ignore[no-untyped-call]
    finally:
        stderr.close_write_end()


def can_filter() -> bool:
    """Whether this project can launch the JVM itself (PySpark would launch one: none
    given through PYSPARK_GATEWAY_PORT) with its stderr filtered (POSIX pipes)."""
    return os.name == "posix" and "PYSPARK_GATEWAY_PORT" not in os.environ
