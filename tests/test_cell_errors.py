"""The one line a cancelled cell ends with, picked out of Spark's errors (no Spark)."""

from __future__ import annotations

from jupyter_spark_sessions.backends.spark_errors import cancellation_line

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


def test_pysparks_errors_for_the_other_flavour_are_recognised_in_its_own_code() -> None:
    from jupyter_spark_sessions.backends.spark_errors import mixes_flavours

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
    # A cancel that found no job yet still names its group.
    assert cancel_story([("a:4", None, [])]) == "The Spark jobs of a:4 were cancelled."
