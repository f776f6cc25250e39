"""The filter on the JVM's stderr (``backends/jvm_stderr.py``), fed through a real pipe:
it drops the known-harmless lines only, whole, tells a lost executor in one line on
stdout, and forwards everything else unchanged to stderr, without waiting for more (a
partial line, a progress bar's carriage returns)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from jupyter_spark_sessions.backends import jvm_stderr

INCUBATOR = b"WARNING: Using incubator modules: jdk.incubator.vector\n"
#: As Spark logged it when a test killed a local-cluster executor (kill -9).
LOST_EXECUTOR = (
    b"26/12/03 02:33:24 ERROR TaskSchedulerImpl: Lost executor 1 on 127.0.0.1: "
    b"Command exited with code 137\n"
)
LOST_EXECUTOR_TOLD = (
    b"Spark lost executor 1 on 127.0.0.1 (Command exited with code 137); it runs the "
    b"executor's tasks again on other executors.\n"
)
UI_PORT = (
    b"26/12/03 02:22:05 WARN Utils: Service 'SparkUI' could not bind on port 4040. "
    b"Attempting port 4041.\n"
)


#: What a streaming query's start, slow batches and stop printed (issue 36), as logged.
STREAMING = [
    b"26/12/03 21:32:20 WARN ResolveWriteToStream: Temporary checkpoint location created "
    b"which is deleted normally when the query didn't fail: /tmp/jss/.spark-java-tmp/"
    b"temporary-48d8a237. If it's required to delete it under any circumstances, please "
    b"set spark.sql.streaming.forceDeleteTempCheckpointLocation to true. Important to know "
    b"deleting temp checkpoint folder is best effort.\n",
    b"26/12/03 21:32:20 WARN ResolveWriteToStream: spark.sql.adaptive.enabled is not "
    b"supported in streaming DataFrames/Datasets and will be disabled.\n",
    b"26/12/03 21:32:26 WARN DAGScheduler: Failed to cancel job group "
    b"5fa1b857-8bd0-447d-9a29-66fecab96757. Cannot find active jobs for it.\n",
    b"26/12/03 21:36:17 WARN ProcessingTimeExecutor: Current batch is falling behind. The "
    b"trigger interval is 100 milliseconds, but spent 1983 milliseconds\n",
]


@pytest.mark.parametrize(
    "line", [INCUBATOR, UI_PORT, UI_PORT.rstrip(b"\n"), INCUBATOR + b"\r", *STREAMING]
)
def test_the_known_harmless_lines_are_harmless(line: bytes) -> None:
    assert jvm_stderr.is_harmless(line)


@pytest.mark.parametrize(
    "line",
    [
        b"26/12/03 02:22:05 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1)\n",
        b"26/12/03 02:22:05 WARN Utils: Service 'sparkDriver' could not bind on port 7077. "
        b"Attempting port 7078.\n",
        b"java.io.IOException: Failed to delete: /tmp/x\n",
        b"Error: WARNING: Using incubator modules: jdk.incubator.vector\n",
        b"26/12/03 21:32:20 ERROR MicroBatchExecution: Query r [id = 1, runId = 2] "
        b"terminated with error\n",
        INCUBATOR.rstrip(b"\n") + b" and more\n",
        b"\n",
    ],
)
def test_anything_else_is_kept(line: bytes) -> None:
    assert not jvm_stderr.is_harmless(line)
    assert jvm_stderr.route([line]) == [(2, line)]


def test_a_lost_executor_is_told_in_one_line_on_stdout() -> None:
    assert jvm_stderr.route([LOST_EXECUTOR]) == [(1, LOST_EXECUTOR_TOLD)]
    rpc = (
        b"26/12/03 ERROR TaskSchedulerImpl: Lost executor 0 on 10.0.0.7: Remote RPC client "
        b"disassociated. Likely due to containers exceeding thresholds, or network issues.\n"
    )
    assert jvm_stderr.route([rpc]) == [
        (
            1,
            b"Spark lost executor 0 on 10.0.0.7 (Remote RPC client disassociated. Likely due "
            b"to containers exceeding thresholds, or network issues.); it runs the executor's "
            b"tasks again on other executors.\n",
        )
    ]
    # Anything else of the scheduler stays as Spark wrote it.
    other = b"26/12/03 ERROR TaskSchedulerImpl: Exception in statusUpdate\n"
    assert jvm_stderr.route([other]) == [(2, other)]


def test_routes_keep_the_order_of_the_lines() -> None:
    a, b = b"first\n", b"second\n"
    assert jvm_stderr.route([a, INCUBATOR, b, LOST_EXECUTOR, UI_PORT, a]) == [
        (2, a + b),
        (1, LOST_EXECUTOR_TOLD),
        (2, a),
    ]


class Collected:
    """What the filter forwards to stderr (``data``) and to stdout (``out``)."""

    def __init__(self) -> None:
        self.data = b""
        self.out = b""
        self.lock = threading.Lock()

    def __call__(self, fd: int, data: bytes) -> None:
        with self.lock:
            if fd == 2:
                self.data += data
            else:
                self.out += data

    def wait_for(self, expected: bytes, timeout: float = 5.0) -> bytes:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.data == expected:
                    return self.data
            time.sleep(0.01)
        return self.data


def test_the_filter_forwards_every_other_line_in_order_and_ends_with_its_writers() -> None:
    out = Collected()
    stderr = jvm_stderr.StderrFilter(out)
    writer = os.dup(stderr.write_fd)  # the child's copy
    stderr.close_write_end()
    real = (
        b"26/12/03 ERROR TaskSetManager: Task 0 in stage 3.0 failed 1 times\n\tat x.y(Z.java:1)\n"
    )
    # Written in pieces that split lines, as a pipe may deliver them.
    data = INCUBATOR + real + UI_PORT + LOST_EXECUTOR + b"last line\n"
    for start in range(0, len(data), 7):
        os.write(writer, data[start : start + 7])
    os.close(writer)
    stderr.thread.join(5)
    assert not stderr.thread.is_alive(), "the thread ends when every writer closed the pipe"
    assert out.data == real + b"last line\n"
    assert out.out == LOST_EXECUTOR_TOLD


def test_a_partial_line_and_a_progress_bar_are_forwarded_without_waiting_for_more() -> None:
    out = Collected()
    stderr = jvm_stderr.StderrFilter(out)
    writer = os.dup(stderr.write_fd)
    stderr.close_write_end()
    try:
        os.write(writer, b"[Stage 0:>        (0 + 2) / 2]\r")
        assert (
            out.wait_for(b"[Stage 0:>        (0 + 2) / 2]\r") == b"[Stage 0:>        (0 + 2) / 2]\r"
        )
        os.write(writer, b"Password: ")  # nothing ends it
        started = time.monotonic()
        expected = b"[Stage 0:>        (0 + 2) / 2]\rPassword: "
        assert out.wait_for(expected) == expected
        assert time.monotonic() - started < jvm_stderr.PARTIAL_LINE_SECONDS + 1.0
    finally:
        os.close(writer)
        stderr.thread.join(5)


def test_a_forward_that_fails_does_not_stop_the_reading() -> None:
    # A JVM whose stderr nobody reads blocks once the pipe is full.
    calls: list[bytes] = []

    def broken(fd: int, data: bytes) -> None:
        calls.append(data)
        raise OSError("stderr closed")

    stderr = jvm_stderr.StderrFilter(broken)
    writer = os.dup(stderr.write_fd)
    stderr.close_write_end()
    line = b"x" * 1023 + b"\n"
    for _ in range(256):  # 256 KiB: four times a pipe's buffer
        os.write(writer, line)
    os.close(writer)
    stderr.thread.join(5)
    assert not stderr.thread.is_alive()
    assert sum(len(c) for c in calls) == 256 * 1024


# -- a task that failed with a Python exception (issue 39) ----------------------------

#: As Spark 4.3 logged a UDF's ZeroDivisionError on local[2] (stacks shortened).
PYTHON_TASK_FAILED = (
    b"26/12/03 18:53:25 ERROR Executor: Exception in task 1.0 in stage 9.0 (TID 201)\n"
    b"org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was "
    b"thrown from the Python worker: Traceback (most recent call last):\n"
    b'  File "/tmp/ipykernel_14634/3087684853.py", line 2, in <lambda>\n'
    b"ZeroDivisionError: division by zero\n"
    b" SQLSTATE: 38000\n"
    b"\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException"
    b"(PythonRunner.scala:1097)\n"
    b"\tat org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:906)\n"
    b"\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
)
OTHER_TASK_FAILED = PYTHON_TASK_FAILED.replace(b"task 1.0", b"task 0.0").replace(
    b"TID 201", b"TID 200"
)
JOB_ABORTED = (
    b"26/12/03 18:53:25 ERROR TaskSetManager: Task 1 in stage 9.0 failed 1 times; aborting job\n"
)
#: A task that failed in the JVM: the cell's error says it too, but it is no Python error.
JVM_TASK_FAILED = (
    b"26/12/03 18:54:00 ERROR Executor: Exception in task 0.0 in stage 12.0 (TID 300)\n"
    b"org.apache.spark.SparkArithmeticException: [DIVIDE_BY_ZERO] Division by zero. "
    b"SQLSTATE: 22012\n"
    b"\tat org.apache.spark.sql.errors.QueryExecutionErrors$.divideByZeroError"
    b"(QueryExecutionErrors.scala:190)\n"
    b"\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
    b"26/12/03 18:54:00 ERROR TaskSetManager: Task 0 in stage 12.0 failed 1 times; aborting job\n"
)
REAL_ERROR = b"26/12/03 18:53:26 ERROR Probe: a real error\n"


def test_a_python_task_failure_and_its_jobs_abort_are_dropped_whole() -> None:
    lines = b"before\n" + PYTHON_TASK_FAILED + OTHER_TASK_FAILED + JOB_ABORTED + REAL_ERROR
    assert jvm_stderr.route(lines.splitlines(keepends=True)) == [(2, b"before\n" + REAL_ERROR)]


def test_a_task_failure_in_the_jvm_and_any_other_abort_are_kept() -> None:
    lines = JVM_TASK_FAILED + JOB_ABORTED  # stage 9.0: no Python failure seen for it here
    assert jvm_stderr.route(lines.splitlines(keepends=True)) == [(2, lines)]
    # An executor's ERROR line last in the stream goes out too.
    header = PYTHON_TASK_FAILED.splitlines(keepends=True)[0]
    assert jvm_stderr.route([header]) == [(2, header)]


def test_a_python_failure_with_a_cause_and_the_schedulers_warn_are_dropped() -> None:
    caused = PYTHON_TASK_FAILED + (
        b"Caused by: java.io.EOFException: the worker\nwent away\n"
        b"\tat java.io.DataInputStream.readInt(DataInputStream.java:398)\n\t... 12 more\n"
    )
    # As a log4j configuration that shows TaskSetManager's WARNs writes them.
    lost = (
        b"26/12/03 18:53:25 WARN TaskSetManager: Lost task 1.0 in stage 9.0 (TID 201) "
        b"(127.0.0.1 executor driver): org.apache.spark.api.python.PythonException: "
        b"Traceback (most recent call last):\n"
        b'  File "<stdin>", line 1, in <lambda>\nZeroDivisionError: division by zero\n'
        b"\n\tat org.apache.spark.api.python.BasePythonRunner.x(PythonRunner.scala:1)\n"
    )
    lines = caused + lost + JOB_ABORTED + b"after\n"
    assert jvm_stderr.route(lines.splitlines(keepends=True)) == [(2, b"after\n")]


def test_the_filter_drops_a_python_task_failure_written_in_pieces() -> None:
    out = Collected()
    stderr = jvm_stderr.StderrFilter(out)
    writer = os.dup(stderr.write_fd)
    stderr.close_write_end()
    try:
        data = PYTHON_TASK_FAILED + OTHER_TASK_FAILED + JOB_ABORTED + REAL_ERROR
        for start in range(0, len(data), 50):
            os.write(writer, data[start : start + 50])
        assert out.wait_for(REAL_ERROR) == REAL_ERROR
        # A record ends with a pause in the stream: what comes after it is kept, though
        # it does not look like a log record (a UDF's print, another program's line).
        os.write(writer, PYTHON_TASK_FAILED)
        time.sleep(jvm_stderr.PARTIAL_LINE_SECONDS * 3)
        os.write(writer, b"a line of a UDF\n")
        assert out.wait_for(REAL_ERROR + b"a line of a UDF\n") == REAL_ERROR + b"a line of a UDF\n"
        # An executor's ERROR line that no PythonException follows goes out after a pause.
        header = JVM_TASK_FAILED.splitlines(keepends=True)[0]
        os.write(writer, header)
        expected = REAL_ERROR + b"a line of a UDF\n" + header
        assert out.wait_for(expected) == expected
    finally:
        os.close(writer)
        stderr.thread.join(5)
    assert out.out == b""
