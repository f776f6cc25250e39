"""Spark's SQL errors in at most four lines (jupyter_spark_sessions/sql/short_errors.py),
read from real exceptions of a real local SparkSession: the error class and message,
the query line and a caret under the spot, never a JVM stack or a plan.

The same text comes from Spark Connect: its exception classes
(``pyspark.errors.exceptions.connect``) derive from the same ``pyspark.errors`` bases
and answer the same accessors; this module checks classic mode only (no Connect server
started here)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_spark_sessions.backends import driver
from jupyter_spark_sessions.backends.temp_views import has_temp_view, sessions_with_temp_view
from jupyter_spark_sessions.sql.short_errors import (
    ErrorPosition,
    missing_view,
    name_parts,
    short_sql_error,
)

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .getOrCreate()
    )
    yield session
    session.stop()
    # Its JVM ends with it: a later module in this worker launches its own (with its
    # own options), as a kernel would, rather than finding this one.
    driver.end_jvm(timeout=30)


def error_of(spark: Any, query: str) -> BaseException:
    """The exception ``query`` raises when its rows are fetched, as the magic's would."""
    with pytest.raises(Exception) as raised:
        spark.sql(query).collect()
    return raised.value


def short(spark: Any, query: str) -> list[str]:
    text = short_sql_error(error_of(spark, query))
    assert text is not None
    lines = text.splitlines()
    assert 1 <= len(lines) <= 4
    for noise in ("SQLSTATE", "JVM stacktrace", "\tat ", "org.apache", "py4j", "Project ["):
        assert noise not in text, noise
    return lines


def assert_caret_under(lines: list[str], query_line: str, word: str) -> None:
    """The second line is ``query_line``; the third's first caret is under ``word``."""
    assert lines[1] == query_line
    assert lines[2].strip(" ").startswith("^")
    assert lines[2].index("^") == query_line.index(word)


def test_a_syntax_error_names_its_class_and_marks_the_spot(spark: Any) -> None:
    lines = short(spark, "SELECT * FORM t")
    assert lines[0] == "[PARSE_SYNTAX_ERROR] Syntax error at or near 't': extra input 't'."
    assert_caret_under(lines, "SELECT * FORM t", "t")


def test_a_missing_table_is_its_first_message_line_and_the_spot(spark: Any) -> None:
    lines = short(spark, "SELECT * FROM no_such_table")
    assert lines[0].startswith("[TABLE_OR_VIEW_NOT_FOUND] The table or view `no_such_table`")
    assert "Search path" not in lines[0]  # the message's later lines are left out
    assert_caret_under(lines, "SELECT * FROM no_such_table", "no_such_table")
    assert lines[2].strip() == "^" * len("no_such_table")


def test_a_missing_column_names_it_and_marks_it(spark: Any) -> None:
    lines = short(spark, "SELECT nope FROM range(3)")
    assert lines[0].startswith("[UNRESOLVED_COLUMN.WITH_SUGGESTION] ")
    assert "`nope`" in lines[0] and "[`id`]" in lines[0]
    assert_caret_under(lines, "SELECT nope FROM range(3)", "nope")


def test_a_type_error_marks_the_expression(spark: Any) -> None:
    lines = short(spark, "SELECT 1 + array(1) AS x")
    assert lines[0].startswith("[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES] Cannot resolve")
    assert_caret_under(lines, "SELECT 1 + array(1) AS x", "1 + array")
    assert lines[2].strip() == "^" * len("1 + array(1)")


def test_a_runtime_error_in_a_task_is_short_too(spark: Any) -> None:
    spark.conf.set("spark.sql.ansi.enabled", "true")
    lines = short(spark, "SELECT id / (id - id) FROM range(3)")
    assert lines[0].startswith("[DIVIDE_BY_ZERO] Division by zero.")


def test_an_error_on_line_three_shows_line_three_with_the_caret_under_it(spark: Any) -> None:
    query = "SELECT id,\n       id * 2 AS doubled\nFROM range(3) WHERE nope > 1"
    lines = short(spark, query)
    assert_caret_under(lines, "FROM range(3) WHERE nope > 1", "nope")
    parse = short(spark, "SELECT id,\n       id * 2 AS doubled\nFROM range(3) WHER id > 1")
    assert parse[0].startswith("[PARSE_SYNTAX_ERROR] ")
    assert_caret_under(parse, "FROM range(3) WHER id > 1", "id >")


def test_a_long_query_line_is_cut_around_the_caret(spark: Any) -> None:
    columns = ", ".join(f"id AS column_{i}" for i in range(30))
    for query in (f"SELECT {columns}, nope FROM range(1)", f"SELECT {columns} FORM range(1)"):
        lines = short(spark, query)
        assert len(lines[1]) <= 102, lines[1]  # 100 and an ellipsis on each side at most
        word = "nope" if "nope" in query else "FORM"
        assert lines[2].index("^") == lines[1].index(word)


def test_an_error_inside_a_view_says_whose_line_it_shows(spark: Any) -> None:
    spark.conf.set("spark.sql.ansi.enabled", "true")
    spark.sql("CREATE OR REPLACE TEMP VIEW halves AS SELECT 1 / 0 AS x")
    lines = short(spark, "SELECT x FROM halves")
    assert lines[0].startswith("[DIVIDE_BY_ZERO]")
    assert_caret_under(lines, "VIEW halves: SELECT 1 / 0 AS x", "1 / 0")


def test_a_tab_before_the_spot_stays_a_tab_under_it(spark: Any) -> None:
    lines = short(spark, "SELECT\tnope\tFROM range(1)")
    assert lines[1] == "SELECT\tnope\tFROM range(1)"
    assert lines[2] == "      \t^^^^"


def test_the_jvm_stack_spark_may_append_is_left_out(spark: Any) -> None:
    spark.conf.set("spark.sql.pyspark.jvmStacktrace.enabled", "true")
    try:
        error = error_of(spark, "SELECT * FORM t")
        assert "JVM stacktrace" in str(error)
        text = short_sql_error(error)
        assert text is not None and len(text.splitlines()) == 3
        assert "JVM stacktrace" not in text
    finally:
        spark.conf.unset("spark.sql.pyspark.jvmStacktrace.enabled")


def test_errors_that_are_not_spark_sql_errors_are_left_to_their_traceback(spark: Any) -> None:
    from pyspark.errors import PySparkTypeError

    assert short_sql_error(ValueError("SELECT nope")) is None
    assert short_sql_error(KeyError("[TABLE_OR_VIEW_NOT_FOUND] x")) is None
    with pytest.raises(PySparkTypeError) as raised:  # PySpark's own check, in Python
        spark.sql("SELECT 1", args=42)
    assert short_sql_error(raised.value) is None


def test_a_position_is_cut_to_the_width_asked() -> None:
    line = "x" * 200 + "HERE" + "y" * 200
    shown, caret = ErrorPosition(line, 200, 4).lines(max_chars=50)
    assert shown.startswith("…") and shown.endswith("…") and len(shown) == 52
    assert shown[caret.index("^") :].startswith("HERE") and caret.endswith("^^^^")


def test_a_missing_name_a_temporary_view_could_have_is_read_from_the_error(spark: Any) -> None:
    assert missing_view(error_of(spark, "SELECT * FROM nowhere_v")) == "nowhere_v"
    assert missing_view(error_of(spark, "SELECT * FROM `odd name`")) == "odd name"
    assert missing_view(error_of(spark, "SELECT * FROM session.only_here")) == "only_here"
    # A name in a database is no temporary view's; nor is any other error's.
    assert missing_view(error_of(spark, "SELECT * FROM default.nowhere_t")) is None
    assert missing_view(error_of(spark, "SELECT no_column FROM range(1)")) is None
    assert missing_view(ValueError("[TABLE_OR_VIEW_NOT_FOUND] not Spark's")) is None
    assert name_parts("`a``b`.c") == ["a`b", "c"] and name_parts("`a`x") == []


def test_the_sessions_that_have_a_temporary_view_are_found_without_a_job(spark: Any) -> None:
    other, empty = spark.newSession(), spark.newSession()
    other.sql("CREATE OR REPLACE TEMP VIEW Held_Here AS SELECT 1 AS x")
    other.sql("CREATE OR REPLACE TEMP VIEW `odd name` AS SELECT 1 AS x")
    jobs_before = spark.sparkContext.statusTracker().getJobIdsForGroup()
    sessions = [("root", spark), ("other", other), ("empty", empty), ("broken", None)]
    assert sessions_with_temp_view(sessions, "held_here") == ["other"]
    assert sessions_with_temp_view(sessions, "odd name") == ["other"]
    assert sessions_with_temp_view(sessions, "held*") == []  # no wildcard
    assert has_temp_view(other, "HELD_HERE") and not has_temp_view(empty, "held_here")
    assert spark.sparkContext.statusTracker().getJobIdsForGroup() == jobs_before
