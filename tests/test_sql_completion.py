"""What Tab offers in a SQL cell, on catalogs made by hand (sql/completion.py,
magics/sql_completer.sql_at_cursor); the kernel test reads real sessions' catalogs
(test_sql_completion_kernel.py)."""

from __future__ import annotations

from jupyter_spark_sessions.magics.sql_completer import sql_at_cursor
from jupyter_spark_sessions.sql import inspection
from jupyter_spark_sessions.sql.completion import SqlCatalog, complete, tables_named

CATALOG = SqlCatalog(
    tables={"sales": "default", "items": "default", "recent": ""},
    databases=("default", "staging"),
    functions=("upper", "sum", "plus_one"),
    columns={"sales": ("order_id", "amount", "item"), "items": ("item", "price")},
)


def texts(before: str, variables: tuple[str, ...] = (), after: str = "") -> list[str]:
    return [text for text, _ in complete(before, CATALOG, variables, after).matches]


def test_tables_and_databases_after_from_and_join() -> None:
    assert texts("SELECT * FROM ") == ["items", "recent", "sales", "default", "staging"]
    assert texts("SELECT * FROM sales JOIN it") == ["items"]
    assert texts("select * from s") == ["sales", "staging"]
    assert texts("USE st") == ["staging"]


def test_columns_of_the_tables_the_statement_names_then_keywords() -> None:
    found = texts("SELECT * FROM sales WHERE a")
    assert found[0] == "amount" and "and" in found and "all" in found  # as typed
    assert texts("SELECT pr", after=" FROM items")[0] == "price"  # the cursor in the list
    assert texts("SELECT i.", after="pr FROM items i; SELECT 1") == ["item", "price"]
    # A column of another table is not offered.
    assert "price" not in texts("SELECT * FROM sales WHERE p")


def test_after_an_alias_or_a_table_its_columns_only() -> None:
    assert texts("SELECT s.") == []  # no FROM yet: s is nothing
    before = "SELECT * FROM sales s JOIN items AS i ON s.item = i."
    assert texts(before) == ["item", "price"]
    assert texts("SELECT * FROM sales s WHERE s.am") == ["amount"]
    assert texts("SELECT sales.") == ["order_id", "amount", "item"]
    assert texts("SELECT * FROM default.") == ["items", "sales"]


def test_keywords_in_the_case_typed_and_functions() -> None:
    assert texts("SEL") == ["SELECT"]
    assert texts("sel") == ["select"]
    assert texts("SELECT UP") == ["UPDATE", "upper"]
    assert "plus_one" in texts("SELECT pl")


def test_variables_after_a_brace_and_nothing_in_strings_or_comments() -> None:
    assert texts("SELECT * FROM sales LIMIT {lo", ("low", "limit", "lot")) == ["lot}", "low}"]
    assert texts("SELECT 'FROM sa") == []
    assert texts("SELECT 1 -- FROM sa") == []
    assert texts("SELECT 1 /* FROM sa */ FROM sa") == ["sales"]


def test_only_the_statement_at_the_cursor_counts() -> None:
    assert texts("SELECT * FROM items; SELECT * FROM sales WHERE pr") == ["preceding"]


def test_aliases_are_read_without_keywords() -> None:
    named = tables_named("SELECT * FROM db.sales s JOIN `my items` WHERE x")
    assert named == {"sales": "db.sales", "s": "db.sales", "my items": "`my items`"}


def test_the_sql_at_the_cursor_of_a_cell_and_of_a_line() -> None:
    cell = "%%spark_sql a -n 5\nSELECT 1\nFROM t"
    assert sql_at_cursor(cell, 2, 3) == ("a", "SELECT 1\nFRO", "M t")
    assert sql_at_cursor("%%spark_sql -n 5 -q\nSELECT", 1, 6) == (None, "SELECT", "")
    assert sql_at_cursor("%%spark_sql a\nSELECT", 0, 5) is None  # on the magic's line
    line = "x = 1\n%spark_sql b SELECT * FROM t"
    assert sql_at_cursor(line, 1, 30, {"b"}) == ("b", "SELECT * FROM t", "")
    assert sql_at_cursor(line, 1, 30, {"a"}) == (None, "b SELECT * FROM t", "")
    assert sql_at_cursor("%spark_sql -n 3 SELECT 1", 0, 24, {"SELECT"}) == ("SELECT", "1", "")
    assert sql_at_cursor("spark.sql('SELECT')", 0, 17) is None


def test_the_name_shift_tab_describes() -> None:
    target = inspection.target_at_cursor("SELECT * FROM db.sal", "es WHERE x")
    assert target is not None and (target.name, target.called) == ("db.sales", False)
    assert target.parts == ["db", "sales"]
    called = inspection.target_at_cursor("SELECT upper", "(item) FROM items")
    assert called is not None and (called.name, called.called) == ("upper", True)
    # In a call's arguments: the call; in a string or a comment: nothing.
    in_call = inspection.target_at_cursor("SELECT upper(item, ", ") FROM t")
    assert in_call is not None and (in_call.name, in_call.called) == ("upper", True)
    assert inspection.target_at_cursor("SELECT 'sales", "'") is None
    assert inspection.target_at_cursor("SELECT 1 -- sales", "") is None
    quoted = inspection.target_at_cursor("SELECT * FROM `my table`", "")
    assert quoted is not None and quoted.parts == ["my table"]


def test_a_column_through_the_alias_or_the_tables_named() -> None:
    columns = {"sales": [("amount", "bigint", True)], "items": [("price", "double", False)]}
    target = inspection.target_at_cursor("SELECT s.amo", "unt FROM sales s JOIN items")
    assert target is not None
    assert inspection.column_of(target, columns) == ("sales", ("amount", "bigint", True))
    bare = inspection.target_at_cursor("SELECT price", " FROM sales s JOIN items")
    assert bare is not None
    assert inspection.column_of(bare, columns) == ("items", ("price", "double", False))
    other = inspection.target_at_cursor("SELECT i.amount", " FROM sales s JOIN items i")
    assert other is not None and inspection.column_of(other, columns) is None


def test_a_schema_as_text_names_a_temp_views_session() -> None:
    text = inspection.table_text(
        "recent", [("id", "bigint", False), ("label", "string", True)], "a"
    )
    assert text.splitlines() == [
        "recent: temporary view of session 'a', 2 columns",
        "  id     bigint  not null",
        "  label  string  nullable",
    ]
    assert inspection.table_text("db.t", [], None) == "db.t: table or view, 0 columns"
