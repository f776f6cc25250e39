"""The stderr of the JVM this project launches: every line reaches the kernel's stderr
(so a notebook cell, and the server's log) as before, except the lines every start
prints that a notebook user reads as errors though nothing is wrong.

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

#: A partial line (no line end yet) is forwarded when nothing follows for this long: a
#: progress bar's updates end with a carriage return, a prompt with nothing at all.
PARTIAL_LINE_SECONDS = 0.2

_READ_SIZE = 65536


def is_harmless(line: bytes) -> bool:
    """Whether ``line`` (with or without its line end) is one of ``HARMLESS``."""
    text = line.rstrip(b"\r\n")
    return any(pattern.fullmatch(text) for pattern in HARMLESS)


def keep(lines: Iterable[bytes]) -> bytes:
    """``lines`` (each with its line end) without the harmless ones, joined."""
    return b"".join(line for line in lines if not is_harmless(line))


class StderrFilter:
    """A pipe for a child process's stderr, read on a daemon thread that forwards every
    line but the harmless ones to ``forward`` (default: this process's file descriptor
    2, wherever it points when the line arrives). The thread ends when every writer of
    the pipe (the JVM and the processes it starts) has closed it."""

    def __init__(self, forward: Callable[[bytes], None] | None = None) -> None:
        self._forward = forward or _write_to_stderr
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
                        self._send(keep([pending]))
                        pending = b""
                        continue
                chunk = os.read(self._read, _READ_SIZE)
                if not chunk:
                    break
                lines = (pending + chunk).splitlines(keepends=True)
                pending = b"" if lines[-1].endswith((b"\n", b"\r")) else lines.pop()
                self._send(keep(lines))
            self._send(keep([pending]))
        finally:
            os.close(self._read)

    def _send(self, data: bytes) -> None:
        # Never stop reading: a JVM whose stderr nobody reads blocks once the pipe is full.
        if data:
            with contextlib.suppress(Exception):
                self._forward(data)


def _write_to_stderr(data: bytes) -> None:
    while data:
        written = os.write(2, data)
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
