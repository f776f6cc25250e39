"""The one line a cancelled cell ends with, picked out of Spark's errors (no Spark)."""

from __future__ import annotations

import threading
from typing import Any

from jupyter_spark_sessions.backends.spark_error_reading import cancellation_line
from jupyter_spark_sessions.cells.error_lines import CancelledCellErrors

JAVA = (
    "An error occurred while calling o71.collectToPython.\n"
    ": org.apache.spark.SparkException: [SPARK_JOB_CANCELLED] Job 3 cancelled part of "
    "cancelled job tags jss:a:10 SQLSTATE: XXKDA\n"
    "\tat org.apache.spark.errors.SparkCoreErrors$.jobCancelled(SparkCoreErrors.scala:1)\n"
)


def test_a_cancelled_job_is_spark_s_own_line_without_the_stack() -> None:
    line = cancellation_line(RuntimeError(JAVA))
    assert line == "[SPARK_JOB_CANCELLED] Job 3 cancelled part of cancelled job tags jss:a:10"


def test_a_cancelled_connect_operation_and_a_cause_chain_are_found() -> None:
    grpc = RuntimeError("(org.apache.spark.SparkException) [OPERATION_CANCELED] Operation x")
    try:
        raise ValueError("wrapper") from grpc
    except ValueError as wrapped:
        assert cancellation_line(wrapped) == "[OPERATION_CANCELED] Operation x"


def test_a_real_failure_is_not_a_cancellation() -> None:
    assert cancellation_line(ValueError("[DIVIDE_BY_ZERO] Division by zero")) is None


def test_the_jobs_of_a_stopped_sparkcontext_were_not_cancelled() -> None:
    # Spark words them as cancelled (SPARK_JOB_CANCELLED); nobody asked for a cancel.
    from jupyter_spark_sessions.backends import connect_errors
    from jupyter_spark_sessions.backends.spark_error_reading import driver_stopped

    shut_down = RuntimeError(
        "(org.apache.spark.SparkException) [SPARK_JOB_CANCELLED] Job 3 cancelled because "
        "SparkContext was shut down SQLSTATE: XXKDA"
    )
    stopped = RuntimeError(
        "(java.lang.IllegalStateException) Cannot call methods on a stopped SparkContext."
    )
    for error in (shut_down, stopped):
        assert driver_stopped(error) and cancellation_line(error) is None, error
        assert not connect_errors.is_cancellation(error)
        assert connect_errors.problem_after(error, "") == connect_errors.STOPPED
    cancelled = RuntimeError(JAVA)
    assert not driver_stopped(cancelled) and connect_errors.is_cancellation(cancelled)


def test_a_tasks_out_of_memory_error_reads_as_the_servers_one_line_reason() -> None:
    # A job failed by a task's OutOfMemoryError, as the client gets it when the failure
    # reaches it before the server's SparkContext stops (ConnectBackend._out_of_memory
    # uses it only for a server whose tasks run in its own JVM).
    from jupyter_spark_sessions.backends import connect_errors

    failed = RuntimeError(
        "(org.apache.spark.SparkException) Job aborted due to stage failure: Task 63 in "
        "stage 7.0 failed 1 times, most recent failure: Lost task 63.0 in stage 7.0 (TID "
        "290) (localhost executor driver): java.lang.OutOfMemoryError: Java heap space\n"
        "\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)"
    )
    caused = RuntimeError("the call failed")
    caused.__cause__ = failed
    for error in (failed, caused):
        assert connect_errors.out_of_memory_reason(error) == (
            "ran out of memory (java.lang.OutOfMemoryError: Java heap space)"
        )
        assert not connect_errors.is_cancellation(error)
    assert connect_errors.out_of_memory_reason(RuntimeError(JAVA)) == ""
    assert connect_errors.out_of_memory_reason(None) == ""


def test_pysparks_errors_for_the_other_flavour_are_recognised_in_its_own_code() -> None:
    from jupyter_spark_sessions.backends.spark_error_reading import mixes_flavours

    pyspark = ["/x/site-packages/pyspark/sql/connect/plan.py"]
    assert mixes_flavours(TypeError("'Column' object is not callable"), pyspark)
    got_column = TypeError(
        "[NOT_EXPECTED_TYPE] Argument `col` should be Column or str, got Column."
    )
    assert mixes_flavours(got_column, pyspark)
    assert not mixes_flavours(TypeError("'Column' object is not callable"), ["/home/me/x.py"])
    assert not mixes_flavours(TypeError("unsupported operand"), pyspark)


def test_a_cancel_story_names_groups_jobs_and_where_the_cancel_came_from() -> None:
    from jupyter_spark_sessions.cells.error_lines import cancel_story

    assert cancel_story([("a:4", "sidebar", [3])]) == (
        "The Spark jobs of a:4 (job 3) were cancelled from the sidebar."
    )
    # A group whose jobs Spark cancelled by tag (none by id): named all the same.
    assert cancel_story([("a:4", "interrupt", [6]), ("b:4", "interrupt", [])]) == (
        "The Spark jobs of a:4 (job 6) and b:4 were cancelled by the kernel's Interrupt."
    )
    assert cancel_story(
        [("a:4", "interrupt", [6]), ("b:4", "interrupt", [3]), ("c:4", "sidebar", [7])]
    ) == (
        "The Spark jobs of a:4 (job 6) and b:4 (job 3) were cancelled by the kernel's "
        "Interrupt; c:4 (job 7) were cancelled from the sidebar."
    )
    # The server's REST route: the sidebar's Shared driver section, or someone's script
    # (issue 47, 8: "through the REST relay" named the plumbing, not who).
    assert cancel_story([("a:4", "relay", [2])]) == (
        "The Spark jobs of a:4 (job 2) were cancelled from the sidebar's Shared driver "
        "section or by a script."
    )
    # A cancel that found no job yet still names its group.
    assert cancel_story([("a:4", None, [])]) == "The Spark jobs of a:4 were cancelled."


# -- CancelledCellErrors: which cell a cancel belongs to, and the kernel's reply ---------

Cancels = dict[int, list[tuple[str, str | None, list[int]]]]
INTERRUPTED = "Interrupted: the Spark jobs of a:7 were cancelled"


class _Board:
    def __init__(self, cancels: Cancels) -> None:
        self.cancels = cancels

    def cancels_of_cell(self, count: int) -> list[tuple[str, str | None, list[int]]]:
        return self.cancels.get(count, [])


class _Tagger:
    def current_cell(self) -> tuple[str, int] | None:
        return None  # a %%spark_session body's tags are gone when its error is shown


class _App:
    def __init__(self, board: _Board) -> None:
        self.board = board
        self.tagger = _Tagger()
        self.registry = None


class _Shell:
    """What CancelledCellErrors uses of IPython's shell. IPython >= 9.8 has already
    counted the running cell: ``execution_count`` is the next one's."""

    def __init__(self) -> None:
        self.execution_count = 8
        self.user_ns: dict[str, object] = {}
        self.shown: list[tuple[str, str]] = []
        self.tracebacks = 0

    def showtraceback(self, exc_tuple: object = None, *args: object, **kwargs: object) -> None:
        self.tracebacks += 1  # IPython's whole traceback

    def _showtraceback(self, etype: type, text: str, lines: list[str]) -> None:
        self.shown.append((etype.__name__, text))


class _Result:
    def __init__(self, error: BaseException) -> None:
        self.error_in_exec: BaseException | None = error


def _errors(cancels: Cancels) -> tuple[CancelledCellErrors, _Shell]:
    """Errors of a shell whose cell 7 runs (its session scope already left)."""
    shell = _Shell()
    errors = CancelledCellErrors(shell, _App(_Board(cancels)))  # type: ignore[arg-type]
    errors.install()
    errors.cell_started(7)
    return errors, shell


def _raised(error: BaseException) -> tuple[type[BaseException], BaseException, Any]:
    try:
        raise error
    except BaseException as caught:
        return type(caught), caught, caught.__traceback__


def test_a_cancel_is_told_for_the_cell_that_ran_after_its_session_scope_ended() -> None:
    errors, shell = _errors({7: [("a:7", "sidebar", [5])]})
    spark_error = RuntimeError(JAVA)
    shell.showtraceback(_raised(spark_error))
    line = "The Spark jobs of a:7 (job 5) were cancelled from the sidebar."
    assert shell.shown == [("JobsCancelled", line)] and shell.tracebacks == 0
    # The kernel's reply (ename, evalue) says the same; %tb keeps Spark's error.
    result = _Result(spark_error)
    errors.ended(result)
    assert type(result.error_in_exec).__name__ == "JobsCancelled"
    assert str(result.error_in_exec) == line
    assert result.error_in_exec.__cause__ is spark_error


def test_an_interrupt_raised_at_once_names_the_spark_jobs_it_cancelled() -> None:
    # The cell waited on a thread it started: KeyboardInterrupt came at once, and the
    # job the cell had running was cancelled.
    errors, shell = _errors({7: [("a:7", "interrupt", [3])]})
    errors.interrupted = INTERRUPTED
    shell.showtraceback(_raised(KeyboardInterrupt()))
    line = "The Spark jobs of a:7 (job 3) were cancelled by the kernel's Interrupt."
    assert shell.shown == [("KeyboardInterrupt", line)]
    result = _Result(KeyboardInterrupt())
    errors.ended(result)
    assert str(result.error_in_exec) == line and errors.interrupted is None


def test_an_interrupt_of_pure_python_keeps_its_traceback() -> None:
    errors, shell = _errors({7: [("a:7", "interrupt", [])]})  # no job was running
    errors.interrupted = INTERRUPTED
    shell.showtraceback(_raised(KeyboardInterrupt()))
    assert shell.shown == [] and shell.tracebacks == 1


def test_a_subshells_cell_is_not_the_interrupted_one() -> None:
    errors, shell = _errors({})
    errors.interrupted = INTERRUPTED  # the main shell's cell was interrupted

    def subshell_cell() -> None:
        errors.cell_started(9)
        shell.showtraceback(_raised(RuntimeError(JAVA)))
        errors.ended(_Result(RuntimeError(JAVA)))

    thread = threading.Thread(target=subshell_cell)
    thread.start()
    thread.join()
    assert shell.shown == [("RuntimeError", cancellation_line(RuntimeError(JAVA)))]
    assert errors.interrupted == INTERRUPTED  # still the main shell's


def test_a_jvm_only_api_asked_of_a_connect_object_is_named_only_when_user_code_asked() -> None:
    from jupyter_spark_sessions.backends.spark_error_reading import connect_lacks

    attribute = Exception(
        "[JVM_ATTRIBUTE_NOT_SUPPORTED] Attribute `sparkContext` is not supported in Spark "
        "Connect as it depends on the JVM."
    )
    user = ("/tmp/ipykernel_1/123.py", "<module>")
    getattr_frame = ("/x/site-packages/pyspark/sql/connect/session.py", "__getattr__")
    assert connect_lacks(attribute, [user, getattr_frame]) == "sparkContext"
    # PySpark's own code asking on the user's behalf (a classic UDF): not this case.
    udf_frame = ("/x/site-packages/pyspark/sql/udf.py", "_create_judf")
    assert connect_lacks(attribute, [user, udf_frame, getattr_frame]) is None
    rdd = Exception("[NOT_IMPLEMENTED] rdd is not implemented.")
    rdd_frame = ("/x/site-packages/pyspark/sql/connect/dataframe.py", "rdd")
    assert connect_lacks(rdd, [user, rdd_frame]) == "rdd"
    assert connect_lacks(Exception("[NOT_IMPLEMENTED] other"), [user, rdd_frame]) is None
