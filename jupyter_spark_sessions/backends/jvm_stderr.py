"""The stderr of the JVM this project launches: every line reaches the kernel's stderr
(so a notebook cell, and the server's log) as before, except the lines every start
prints that a notebook user reads as errors though nothing is wrong, the ERROR of
an expected event Spark recovers from (a lost executor), told in one line on stdout,
and Spark's log of a task that failed with a Python exception (``PYTHON_TASK_FAILURE``),
which the cell's own error already tells.

Why a filter on the JVM's stderr rather than log4j or JVM options: the loudest line,
``WARNING: Using incubator modules: jdk.incubator.vector``, is not log4j's; the JVM
prints it at start because Spark adds ``--add-modules=jdk.incubator.vector`` (which
Spark uses), and no JVM option silences that one warning alone. Nor can log4j's own
filters tell a task's Python exception from any other: they match a record's message,
and the executor's (``Exception in task 1.0 in stage 9.0 (TID 201)``) is the same for
every exception. The filter drops only whole lines that match ``HARMLESS`` exactly and
the whole records of Python task failures; any other line, a real ERROR included,
goes through unchanged, whatever log4j configuration (the project's or the user's)
wrote it. The JVM used to inherit the kernel's stderr (file descriptor 2): now it writes
into a pipe that a thread of the kernel reads and forwards to file descriptor 2, which
ipykernel forwards into the running cell just as before.

PySpark's ``launch_gateway`` (``pyspark.java_gateway``, not public API) takes the
``popen_kwargs`` that carry the pipe: one wrapper here, checked by
``tests/test_private_apis.py``.
"""

from __future__ import annotations

import collections
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
    # Each streaming query's start, without a checkpoint location (as in a notebook):
    # Spark keeps its state in a temporary folder, deleted when the query stops.
    re.compile(rb".*\bWARN\b.*ResolveWriteToStream: Temporary checkpoint location created .*"),
    # ... and adaptive execution, which does not apply to streaming, is off for it.
    re.compile(
        rb".*\bWARN\b.*ResolveWriteToStream: spark\.sql\.adaptive\.enabled is not supported "
        rb"in streaming .*"
    ),
    # A query's stop cancels its current batch's job group, which usually has no job.
    re.compile(
        rb".*\bWARN\b.*DAGScheduler: Failed to cancel job group \S+\. Cannot find active jobs "
        rb"for it\."
    ),
    # A batch slower than its trigger: the board shows each batch's duration instead.
    re.compile(rb".*\bWARN\b.*ProcessingTimeExecutor: Current batch is falling behind\..*"),
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

#: The log of a task that failed with a Python exception: the failing cell raises that
#: very exception (PySpark's ``PythonException``, with the Python traceback: ``%tb`` shows
#: it whole), so the executor's ERROR (the exception's message, its Python traceback and
#: a Scala stack: 30 to 60 lines per failed task) and the driver's abort of the job add
#: nothing but red lines above it. A record starts with a line that names the task's
#: stage and, on that line or the next, the exception's class; every line up to the next
#: record of the log (or a pause in the stream) belongs to it.
PYTHON_EXCEPTION = b"org.apache.spark.api.python.PythonException"
PYTHON_TASK_FAILURE = (
    # The executor running the task (a local master's executor is the driver's JVM); its
    # next line says which exception: only a PythonException's record is dropped.
    re.compile(
        rb".*\bERROR\b.*\bExecutor: Exception in task \S+ in stage (?P<stage>\S+) "
        rb"\(TID \d+\)"
    ),
    # The driver's scheduler, where a log4j configuration shows its WARNs (the project's
    # hides them: spark-log4j2.properties).
    re.compile(
        rb".*\bWARN\b.*\bTaskSetManager: Lost task \S+ in stage (?P<stage>\S+) .*?: "
        + re.escape(PYTHON_EXCEPTION)
        + rb"\b.*"
    ),
)
#: What the driver logs when that failure ends the job; dropped for a stage whose task
#: failure was dropped (a cluster's executors log to their own files: there it stays).
JOB_ABORTED = re.compile(
    rb".*\bERROR\b.*\bTaskSetManager: Task \S+ in stage (?P<stage>\S+) failed \d+ times?; "
    rb"aborting job"
)
#: A line of a Java exception's stack ("at ...", "... 12 more"), and the lines that begin
#: another exception's message in it.
_STACK_FRAME = re.compile(rb"\s+(at \S.*|\.\.\. \d+ (more|common frames omitted))")
_NESTED_EXCEPTION = re.compile(rb"\s*(Caused by|Suppressed): .*")
#: The first line of a log record in Spark's layout (the project's and Spark's own
#: log4j2 defaults: ``%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m``).
_LOG_RECORD = re.compile(rb"\d\d/\d\d/\d\d \d\d:\d\d:\d\d [A-Z]+ .*")
#: How many failed stages are remembered for the abort that follows their failure.
_FAILED_STAGES_KEPT = 64

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
    event's one line to stdout (1), a Python task failure's record nowhere, any other
    line unchanged to stderr (2). The lines are taken as the whole stream."""
    router = LineRouter()
    return _joined(router.feed(lines) + router.pause())


class LineRouter:
    """``route`` for a stream that arrives in pieces: it remembers the record it is in
    (a task failure's, dropped up to its end) and the stages whose failure it dropped."""

    def __init__(self) -> None:
        #: An executor's ERROR line whose exception (on the next line) is not known yet,
        #: with its stage.
        self._held: tuple[bytes, bytes] | None = None
        #: Inside a dropped record: "message" (its exception's text, any line) or
        #: "stack" (only stack lines continue it); "" outside.
        self._dropping = ""
        self._failed_stages: collections.deque[bytes] = collections.deque(
            maxlen=_FAILED_STAGES_KEPT
        )

    @property
    def waiting(self) -> bool:
        """Whether a pause in the stream would change what it does (``pause``)."""
        return self._held is not None or bool(self._dropping)

    def feed(self, lines: Iterable[bytes]) -> list[tuple[int, bytes]]:
        """Where the next ``lines`` go (see ``route``), not joined."""
        routed: list[tuple[int, bytes]] = []
        for line in lines:
            routed += self._line(line)
        return routed

    def pause(self) -> list[tuple[int, bytes]]:
        """Nothing came for a while (or the stream ended): a log record is written at
        once, so the one in progress has ended. An executor's ERROR line that no
        PythonException followed goes out."""
        held, self._held, self._dropping = self._held, None, ""
        return [(2, held[0])] if held is not None else []

    def _line(self, line: bytes) -> list[tuple[int, bytes]]:
        text = line.rstrip(b"\r\n")
        routed: list[tuple[int, bytes]] = []
        if self._held is not None:
            held, stage = self._held
            self._held = None
            if text.startswith(PYTHON_EXCEPTION):
                self._drop_record(stage)
                return []
            routed.append((2, held))
        if self._dropping:
            if _STACK_FRAME.fullmatch(text):
                self._dropping = "stack"
                return routed
            if _NESTED_EXCEPTION.fullmatch(text) or (
                self._dropping == "message" and not _LOG_RECORD.fullmatch(text)
            ):
                self._dropping = "message"
                return routed
            self._dropping = ""
        if is_harmless(line):
            return routed
        executor, scheduler = (p.fullmatch(text) for p in PYTHON_TASK_FAILURE)
        if executor:
            self._held = (line, executor["stage"])
        elif scheduler:
            self._drop_record(scheduler["stage"])
        elif not (
            (aborted := JOB_ABORTED.fullmatch(text)) and aborted["stage"] in self._failed_stages
        ):
            routed.append(_retold(line) or (2, line))
        return routed

    def _drop_record(self, stage: bytes) -> None:
        self._dropping = "message"
        if stage not in self._failed_stages:
            self._failed_stages.append(stage)


def _joined(routed: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    # Neighbours to the same descriptor in one write.
    joined: list[tuple[int, bytes]] = []
    for fd, data in routed:
        if joined and joined[-1][0] == fd:
            joined[-1] = (fd, joined[-1][1] + data)
        else:
            joined.append((fd, data))
    return joined


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
        self._router = LineRouter()
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
                if pending or self._router.waiting:
                    ready, _, _ = select.select([self._read], [], [], PARTIAL_LINE_SECONDS)
                    if not ready:  # a partial line nothing completes soon: show it
                        routed = self._router.feed([pending] if pending else [])
                        self._send(routed + self._router.pause())
                        pending = b""
                        continue
                chunk = os.read(self._read, _READ_SIZE)
                if not chunk:
                    break
                lines = (pending + chunk).splitlines(keepends=True)
                pending = b"" if lines[-1].endswith((b"\n", b"\r")) else lines.pop()
                self._send(self._router.feed(lines))
            self._send(self._router.feed([pending] if pending else []) + self._router.pause())
        finally:
            os.close(self._read)

    def _send(self, routed: list[tuple[int, bytes]]) -> None:
        for fd, data in _joined(routed):
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
