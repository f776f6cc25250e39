"""A SQL cell's text read as Spark reads it (jupyter_spark_sessions/sql/statements.py):
statements split where Spark's lexer ends them, ``{name}`` variables bound as
parameters or DataFrames, kinds and outcome lines. Pure, except the last tests, which
send bound statements to a real local SparkSession (marked ``spark``)."""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_spark_sessions.backends import driver
from jupyter_spark_sessions.errors import SparkSessionsError, SqlInputError
from jupyter_spark_sessions.sql.statements import (
    BoundStatement,
    bind_variables,
    is_command,
    outcome_line,
    split_statements,
    statement_kind,
    statement_lines,
)

# ---- split_statements ---------------------------------------------------------------


def test_each_statement_starts_on_the_line_of_its_first_code() -> None:
    # A comment before a statement is not its start, even one quoting its first line.
    text = "-- SELECT 1\nSELECT 1;\n\n  /* two */ SELECT\n 2; -- none\n"
    assert split_statements(text) == ["-- SELECT 1\nSELECT 1", "/* two */ SELECT\n 2"]
    assert statement_lines(text) == [1, 3]
    assert statement_lines("'a;b'") == [0]


def test_statements_are_split_on_semicolons_and_stripped() -> None:
    assert split_statements("SELECT 1;\n  SELECT 2 ;SELECT 3") == [
        "SELECT 1",
        "SELECT 2",
        "SELECT 3",
    ]


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 'a;b'",
        'SELECT "a;b"',
        r"SELECT 'it\'s; still the string'",
        r'SELECT "say \"x;y\""',
        "SELECT `odd;name`",
        "SELECT `a``;b`",
        "SELECT 1 -- a comment; not an end\n, 2",
        "SELECT 1 -- continued \\\n; still the comment\n, 2",
        "SELECT 1 /* a; b */ AS x",
        "SELECT 1 /* outer /* nested; */ still; comment */ AS x",
        "SELECT /*+ REPARTITION(2) */ 1",
    ],
)
def test_a_semicolon_spark_does_not_see_does_not_split(statement: str) -> None:
    assert split_statements(f"{statement}; SELECT 2") == [statement, "SELECT 2"]


def test_a_raw_string_has_no_escapes_so_its_backslash_does_not_hide_the_quote() -> None:
    assert split_statements(r"SELECT r'a\'; SELECT 2") == [r"SELECT r'a\'", "SELECT 2"]
    # ... while in a plain string it does: the quote is escaped and the ';' is inside.
    assert split_statements(r"SELECT 'a\'; SELECT 2") == [r"SELECT 'a\'; SELECT 2"]
    # A word ending in r before a quote is a name, then a plain string.
    assert split_statements(r"SELECT bar'a\'; x'") == [r"SELECT bar'a\'; x'"]


def test_empty_and_comment_only_statements_are_dropped() -> None:
    cell = "\n;;  -- only a comment\n; /* a block */ ;SELECT 1;\n-- trailing note\n"
    assert split_statements(cell) == ["SELECT 1"]
    assert split_statements("") == []
    assert split_statements("  -- nothing\n/* at /* all */ */") == []


def test_comments_inside_a_kept_statement_stay_so_positions_match() -> None:
    cell = "-- the ids\nSELECT id -- the key\nFROM range(3);"
    assert split_statements(cell) == ["-- the ids\nSELECT id -- the key\nFROM range(3)"]


def test_an_unclosed_string_keeps_the_rest_in_one_statement_for_spark_to_report() -> None:
    assert split_statements("SELECT 'oops; SELECT 2") == ["SELECT 'oops; SELECT 2"]


def test_a_sql_script_is_one_statement_with_its_inner_semicolons() -> None:
    script = (
        "BEGIN\n"
        "  DECLARE x INT DEFAULT 1;\n"
        "  IF x = 1 THEN\n"
        "    SELECT CASE WHEN x = 1 THEN 'one' END AS y;\n"
        "  END IF;\n"
        "  BEGIN SELECT x; END;\n"
        "END"
    )
    assert split_statements(f"{script};\nSELECT 2;") == [script, "SELECT 2"]


def test_a_column_named_begin_does_not_start_a_script() -> None:
    assert split_statements("SELECT begin FROM t; SELECT 2") == [
        "SELECT begin FROM t",
        "SELECT 2",
    ]


# ---- bind_variables -----------------------------------------------------------------


class FakeFrame:
    """Stands in for a DataFrame where only ``is_dataframe`` looks at it."""


def is_frame(value: object) -> bool:
    return isinstance(value, FakeFrame)


def never_a_frame(value: object) -> bool:
    return False


def test_a_value_becomes_a_named_parameter_never_pasted_text() -> None:
    evil = "x' OR '1'='1"
    bound = bind_variables("SELECT * FROM t WHERE name = {who}", {"who": evil}, is_frame)
    assert bound == BoundStatement("SELECT * FROM t WHERE name = :who", {"who": evil}, {})
    assert evil not in bound.sql


def test_a_variable_used_twice_is_one_parameter() -> None:
    bound = bind_variables("SELECT {n}, {n} + 1, {m}", {"n": 1, "m": None}, is_frame)
    assert bound.sql == "SELECT :n, :n + 1, :m"
    assert bound.args == {"n": 1, "m": None}


def test_a_dataframe_is_left_for_pysparks_formatter_and_goes_to_frames() -> None:
    frame = FakeFrame()
    bound = bind_variables("SELECT * FROM {df} WHERE id > {low}", {"df": frame, "low": 3}, is_frame)
    assert bound.sql == "SELECT * FROM {df} WHERE id > :low"
    assert bound.frames == {"df": frame}
    assert bound.args == {"low": 3}


def test_names_in_strings_and_comments_are_text() -> None:
    statement = "SELECT '{a}' AS s, \"{a}\" AS d, `{a}` AS q -- {a}\n/* {a} */ , {a}"
    bound = bind_variables(statement, {"a": 5}, is_frame)
    assert bound.sql == "SELECT '{a}' AS s, \"{a}\" AS d, `{a}` AS q -- {a}\n/* {a} */ , :a"
    assert bound.args == {"a": 5}


def test_double_braces_are_single_braces_when_no_formatter_reads_the_text() -> None:
    bound = bind_variables("SELECT ${{v}}, '{{in a string}}', {x}", {"x": 1}, is_frame)
    assert bound.sql == "SELECT ${v}, '{{in a string}}', :x"
    assert bound.frames == {}


def test_every_literal_brace_is_doubled_when_pysparks_formatter_reads_the_text() -> None:
    statement = "SELECT ${{v}}, '{{s}}', '{t}' /* {c} */, {x} FROM {df}"
    bound = bind_variables(statement, {"x": 1, "df": FakeFrame()}, is_frame)
    assert bound.sql == "SELECT ${{v}}, '{{{{s}}}}', '{{t}}' /* {{c}} */, :x FROM {df}"
    # PySpark's SQLStringFormatter is a string.Formatter: what Spark then receives.
    formatted = string.Formatter().format(bound.sql, df="_pyspark_view")
    assert formatted == "SELECT ${v}, '{{s}}', '{t}' /* {c} */, :x FROM _pyspark_view"


def test_a_frame_named_like_spark_sqls_own_arguments_is_passed_under_another_key() -> None:
    frames = {"args": FakeFrame(), "self": FakeFrame(), "sqlQuery": FakeFrame()}
    bound = bind_variables("SELECT * FROM {args}, {self}, {sqlQuery}", frames, is_frame)

    def sql(self: object, sqlQuery: str, args: object = None, **kwargs: object) -> str:
        return string.Formatter().format(sqlQuery, **{k: f"<{k}>" for k in kwargs})

    # The magic's call: no "multiple values for argument" TypeError.
    text = sql(object(), bound.sql, args=bound.args or None, **bound.frames)
    assert text == "SELECT * FROM <args_frame>, <self_frame>, <sqlQuery_frame>"
    assert {id(v) for v in bound.frames.values()} == {id(v) for v in frames.values()}


def test_a_marker_is_kept_apart_from_the_characters_around_it() -> None:
    bound = bind_variables("SELECT {n}L, x:{n}, {n}", {"n": 2}, is_frame)
    # ":nL" would be a parameter named nL, "x::n" a cast.
    assert bound.sql == "SELECT :n L, x: :n, :n"


def test_an_unknown_variable_is_one_line_naming_it_with_a_suggestion() -> None:
    with pytest.raises(SqlInputError) as raised:
        bind_variables("SELECT {nme}", {"name": 1, "_hidden": 2}, is_frame)
    message = str(raised.value)
    assert message == "SQL variable {nme} is not defined in the notebook (did you mean {name}?)."
    assert isinstance(raised.value, SparkSessionsError)
    with pytest.raises(SqlInputError, match=r"^SQL variable \{zz\} is not defined in the notebook"):
        bind_variables("SELECT {zz}", {"name": 1}, is_frame)


@pytest.mark.parametrize("field", ["a.b", "0", "x[1]", "", "x:>3", "x!r", " x ", "class"])
def test_a_field_that_is_no_python_name_is_refused(field: str) -> None:
    with pytest.raises(SqlInputError) as raised:
        bind_variables(f"SELECT {{{field}}}", {"a": 1, "x": 2}, is_frame)
    assert str(raised.value).startswith(f"SQL variable {{{field}}} is not a Python name")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("statement", ["SELECT {x", "SELECT x}", "SELECT {x}}", "SELECT {'a'}"])
def test_an_unbalanced_brace_is_refused(statement: str) -> None:
    with pytest.raises(SqlInputError, match="without its") as raised:
        bind_variables(statement, {"x": 1}, is_frame)
    assert "\n" not in str(raised.value)


def test_a_brace_error_is_raised_even_without_variables() -> None:
    with pytest.raises(SqlInputError):
        bind_variables("SELECT 1 }", {}, is_frame)


@pytest.mark.parametrize(
    "statement",
    ["SET spark.sql.shuffle.partitions = {n}", "SET {n}", "ADD JAR {n}", "RESET {n}"],
)
def test_a_variable_where_spark_reads_plain_text_is_refused(statement: str) -> None:
    with pytest.raises(SqlInputError, match=r"cannot be bound in a \w+ statement"):
        bind_variables(statement, {"n": "4"}, is_frame)


def test_a_session_variable_takes_a_parameter() -> None:
    bound = bind_variables("SET VAR total = {n}", {"n": 4}, is_frame)
    assert bound == BoundStatement("SET VAR total = :n", {"n": 4}, {})


def test_a_statement_without_variables_is_unchanged() -> None:
    statement = "SELECT '{not a variable}' -- {nor this}"
    assert bind_variables(statement, {}, is_frame) == BoundStatement(statement, {}, {})


# ---- kinds --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "kind"),
    [
        ("select 1", "SELECT"),
        ("  -- why\n /* note */ ((VALUES 1))", "VALUES"),
        ("/*+ hint */ create table t(a int)", "CREATE"),
        ("'a string'", ""),
        ("", ""),
        ("desc t", "DESC"),
    ],
)
def test_statement_kind_is_the_first_keyword(statement: str, kind: str) -> None:
    assert statement_kind(statement) == kind


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TEMP VIEW v AS SELECT 1",
        "drop view v",
        "ALTER TABLE t ADD COLUMNS (c INT)",
        "INSERT INTO t VALUES (1)",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
        "UPDATE t SET a = 1",
        "DELETE FROM t WHERE a = 1",
        "TRUNCATE TABLE t",
        "USE db",
        "CACHE TABLE t",
        "UNCACHE TABLE t",
        "REFRESH TABLE t",
        "ADD JAR /tmp/x.jar",
        "LOAD DATA INPATH '/x' INTO TABLE t",
        "MSCK REPAIR TABLE t",
        "REPAIR TABLE t",
        "ANALYZE TABLE t COMPUTE STATISTICS",
        "COMMENT ON TABLE t IS 'x'",
        "RESET",
        "SET spark.sql.shuffle.partitions = 4",
        "SET VAR v = 1",
        "WITH c AS (SELECT 1 AS a) INSERT INTO t SELECT * FROM c",
        "FROM src INSERT INTO t SELECT a",
    ],
)
def test_commands_end_in_an_outcome(statement: str) -> None:
    assert is_command(statement)


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 1",
        "WITH c AS (SELECT 1 AS a) SELECT * FROM c",
        "WITH c AS (SELECT 1 AS a) FROM c SELECT a",
        "VALUES (1), (2)",
        "TABLE t",
        "FROM t SELECT a",
        "SHOW TABLES",
        "DESCRIBE TABLE t",
        "DESC t",
        "EXPLAIN INSERT INTO t VALUES (1)",
        "LIST JARS",
        "SET",
        "SET -v",
        "SET spark.sql.shuffle.partitions",
        "SELECT 'INSERT'",
    ],
)
def test_queries_show_a_table(statement: str) -> None:
    assert not is_command(statement)


@pytest.mark.parametrize(
    ("statement", "head"),
    [
        ("CREATE TEMPORARY VIEW v AS SELECT 1", "CREATE TEMPORARY VIEW v"),
        (
            "create or replace temp view `my view` as select 1",
            "create or replace temp view `my view`",
        ),
        ("INSERT INTO db.t VALUES (1), (2)", "INSERT INTO db.t"),
        ("INSERT OVERWRITE TABLE t SELECT 1", "INSERT OVERWRITE TABLE t"),
        ("DROP TABLE IF EXISTS db . t", "DROP TABLE IF EXISTS db . t"),
        ("CREATE DATABASE IF NOT EXISTS sales", "CREATE DATABASE IF NOT EXISTS sales"),
        ("CREATE TABLE t (a INT) USING parquet", "CREATE TABLE t"),
        ("CREATE TABLE IDENTIFIER(:t) (a INT)", "CREATE TABLE IDENTIFIER(:t)"),
        ("USE sales", "USE sales"),
        ("DELETE FROM t WHERE a = 1", "DELETE FROM t"),
        ("SET spark.sql.shuffle.partitions = 4", "SET spark.sql.shuffle.partitions = 4"),
        ("-- note\nCACHE LAZY TABLE t /* why */ AS SELECT 1", "CACHE LAZY TABLE t"),
    ],
)
def test_an_outcome_names_the_object(statement: str, head: str) -> None:
    assert outcome_line(statement, 0.31) == f"{head}: done in 0.3 s."


def test_an_outcome_is_one_short_line_however_long_the_statement() -> None:
    statement = "SET spark.some.key =\n" + "x" * 500
    line = outcome_line(statement, 75.4)
    assert "\n" not in line
    assert line.startswith("SET spark.some.key = xxx")
    assert line.endswith("…: done in 1 min 15 s.")
    assert len(line) <= 80 + len(": done in 1 min 15 s.")


# ---- against Spark ------------------------------------------------------------------


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


def run(spark: Any, bound: BoundStatement) -> list[tuple[Any, ...]]:
    """What the magic does with a bound statement."""
    rows = spark.sql(bound.sql, args=bound.args or None, **bound.frames).collect()
    return [tuple(row) for row in rows]


@pytest.mark.spark
def test_spark_receives_values_as_parameters_and_strings_as_written(spark: Any) -> None:
    namespace = {"n": 41, "who": "O'Brien; DROP TABLE x --", "Who": "case matters"}
    statement = "SELECT {n} + 1 AS n, {who} AS who, {Who} AS other, '{n}' AS s /* {n} */"
    bound = bind_variables(statement, namespace, never_a_frame)
    assert bound.frames == {}
    assert run(spark, bound) == [(42, "O'Brien; DROP TABLE x --", "case matters", "{n}")]


@pytest.mark.spark
def test_spark_reads_braces_right_with_and_without_dataframes(spark: Any) -> None:
    from pyspark.sql import DataFrame

    def is_dataframe(value: object) -> bool:
        return isinstance(value, DataFrame)

    namespace = {"df": spark.range(2), "args": spark.range(1), "n": 5}
    statement = (
        "SELECT id, '{s}' AS s, {n} AS n, '{{x}}' AS d FROM {df} "
        "WHERE id >= (SELECT min(id) FROM {args})"
    )
    with_frames = bind_variables(statement, namespace, is_dataframe)
    assert set(with_frames.frames) == {"df", "args_frame"}
    assert run(spark, with_frames) == [(0, "{s}", 5, "{{x}}"), (1, "{s}", 5, "{{x}}")]
    without = bind_variables("SELECT '{s}' AS s, {n} AS n, '{{x}}' AS d", namespace, is_dataframe)
    assert run(spark, without) == [("{s}", 5, "{{x}}")]


@pytest.mark.spark
def test_an_identifier_clause_takes_a_variable_as_a_view_name(spark: Any) -> None:
    spark.range(3).createOrReplaceTempView("three_ids")
    bound = bind_variables(
        "SELECT count(*) FROM IDENTIFIER({view})", {"view": "three_ids"}, never_a_frame
    )
    assert bound.args == {"view": "three_ids"}
    assert run(spark, bound) == [(3,)]


@pytest.mark.spark
def test_spark_runs_each_split_statement_and_the_script_whole(spark: Any) -> None:
    cell = (
        "CREATE OR REPLACE TEMP VIEW semis AS SELECT 'a;b' AS s; -- the view; done\n"
        "/* a /* nested; */ comment */\n"
        "BEGIN DECLARE n INT DEFAULT 1; SET n = n + 1; SELECT n; END;\n"
        "SELECT s FROM semis"
    )
    statements = split_statements(cell)
    assert len(statements) == 3
    results = [run(spark, bind_variables(s, {}, never_a_frame)) for s in statements]
    assert results[1:] == [[(2,)], [("a;b",)]]
