"""A SQL result as a table a person can read (jupyter_spark_sessions/sql/result_table.py):
the caption, the HTML (types, alignment, NULL, cut values, escaping, theme-aware
styles) and the plain text. Pure: values are built as PySpark's Row gives them."""

from __future__ import annotations

import datetime
import re
import time
from decimal import Decimal
from html.parser import HTMLParser

import pytest
from pyspark.sql import Row

from jupyter_spark_sessions.sql.result_table import (
    CSS_CLASS,
    TITLE_MAX_CHARS,
    ResultTable,
    caption,
    is_numeric_type,
    mime_bundle,
    to_html,
    to_text,
    value_text,
    variable_line,
)

MORE = "-n N shows more, --count counts them"


class Cell:
    def __init__(self, tag: str, attrs: dict[str, str]) -> None:
        self.tag = tag
        self.attrs = attrs
        self.text = ""
        self.spans: dict[str, str] = {}  # class -> text, for header cells

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class TableReader(HTMLParser):
    """The HTML read back as a browser would: header cells, rows of cells, the
    caption, the style, and every tag met."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.headers: list[Cell] = []
        self.rows: list[list[Cell]] = []
        self.caption = ""
        self.style = ""
        self.tags: list[str] = []
        self.outer_class = ""
        self._cell: Cell | None = None
        self._span = ""
        self._in: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.append(tag)
        if not self.outer_class and tag == "div":
            self.outer_class = values.get("class", "")
        if tag == "div" and values.get("class") == "jss-sql-caption":
            self._in.append("caption")
        elif tag in ("style", "thead"):
            self._in.append(tag)
        elif tag == "tr" and self._in[-1:] != ["thead"]:
            self.rows.append([])
        elif tag in ("th", "td"):
            self._cell = Cell(tag, values)
            (self.headers if tag == "th" else self.rows[-1]).append(self._cell)
        elif tag == "span":
            self._span = values.get("class", "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td"):
            self._cell = None
        elif tag == "span":
            self._span = ""
        elif self._in and self._in[-1] == {"div": "caption"}.get(tag, tag):
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.text += data
            if self._span:
                self._cell.spans[self._span] = self._cell.spans.get(self._span, "") + data
        elif self._in[-1:] == ["caption"]:
            self.caption += data
        elif self._in[-1:] == ["style"]:
            self.style += data


def table(
    columns: list[tuple[str, str]],
    rows: list[tuple[object, ...]],
    more: bool = False,
    total: int | None = None,
) -> ResultTable:
    return ResultTable(tuple(columns), tuple(rows), more, total)


# ---- caption ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "more", "total", "expected"),
    [
        (3, False, None, "3 rows"),
        (1, False, None, "1 row"),
        (0, False, None, "0 rows"),
        (1234, False, None, "1,234 rows"),
        (20, True, None, f"showing the first 20 rows of more than 20 ({MORE})"),
        (20, True, 1_000_000, "showing 20 of 1,000,000 rows"),
        (20, False, 20, "20 rows"),
    ],
)
def test_the_caption_counts_rows_with_thousands_separators(
    rows: int, more: bool, total: int | None, expected: str
) -> None:
    result = table([("id", "bigint")], [(i,) for i in range(rows)], more, total)
    assert caption(result) == expected


def test_the_caption_says_what_the_result_is_known_to_exceed() -> None:
    # -o cut at --max-rows 10,000: the table shows 20 of them.
    cut = ResultTable((("id", "bigint"),), tuple((i,) for i in range(20)), True, None, 10_000)
    assert caption(cut) == f"showing the first 20 rows of more than 10,000 ({MORE})"


def test_the_variable_line_names_the_variable_its_rows_and_columns() -> None:
    assert variable_line("pdf", 1_000, 3) == "`pdf`: pandas DataFrame, 1,000 rows x 3 columns"
    assert variable_line("one", 1, 1) == "`one`: pandas DataFrame, 1 row x 1 column"
    assert variable_line("few", 10, 2, 10) == (
        "`few`: pandas DataFrame, 10 rows x 2 columns (the result's first 10: --max-rows 10)"
    )


# ---- values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "NULL"),
        (True, "true"),
        (0.1, "0.1"),
        (1e20, "1e+20"),
        (float("nan"), "nan"),
        (12345678901234567890, "12345678901234567890"),
        (Decimal("1E+2"), "100"),
        (Decimal("10.50"), "10.50"),
        (b"\x00ab", "0x006162"),
        (bytearray(b"\xff"), "0xff"),
        (datetime.datetime(2024, 1, 2, 3, 4, 5, 600), "2024-01-02 03:04:05.000600"),
        (datetime.date(2024, 1, 2), "2024-01-02"),
        (datetime.timedelta(days=1, seconds=5), "1 day, 0:00:05"),
        ([1, None, 3], "[1, NULL, 3]"),
        ({"a": 1, "b": [2.5]}, "{a: 1, b: [2.5]}"),
        (
            Row(id=1, tags=["x", "y"], inner=Row(ok=True)),
            "{id: 1, tags: [x, y], inner: {ok: true}}",
        ),
        ("text stays text", "text stays text"),
    ],
)
def test_values_are_written_compactly(value: object, text: str) -> None:
    assert value_text(value) == text


def test_numpy_values_from_pandas_rows_are_written_as_python_ones() -> None:
    import numpy as np

    assert value_text(np.float64(1.5)) == "1.5"
    assert value_text(np.int64(7)) == "7"
    assert value_text(np.bool_(False)) == "false"
    assert value_text(np.array([1, 2])) == "[1, 2]"


def test_a_huge_value_is_written_only_as_far_as_it_is_shown() -> None:
    huge = list(range(2_000_000))
    started = time.perf_counter()
    text = value_text(huge, 50)
    assert time.perf_counter() - started < 0.5  # not two million items written out
    assert len(text) == 50 and text.endswith("…") and text.startswith("[0, 1, 2, ")


@pytest.mark.parametrize(
    ("type_name", "numeric"),
    [
        ("bigint", True),
        ("int", True),
        ("tinyint", True),
        ("smallint", True),
        ("double", True),
        ("float", True),
        ("decimal(10,2)", True),
        ("long", True),
        ("string", False),
        ("array<int>", False),
        ("boolean", False),
        ("timestamp", False),
        ("struct<a:int>", False),
    ],
)
def test_numeric_types_are_known_by_their_simple_string(type_name: str, numeric: bool) -> None:
    assert is_numeric_type(type_name) is numeric


# ---- HTML ---------------------------------------------------------------------------

COLUMNS = [("id", "bigint"), ("name", "string"), ("price", "decimal(10,2)"), ("tags", "array<int>")]


def test_the_header_names_each_column_with_its_type_below() -> None:
    read = TableReader(to_html(table(COLUMNS, [(1, "a", Decimal("2.50"), [1, 2])])))
    assert [(h.spans["jss-sql-name"], h.spans["jss-sql-type"]) for h in read.headers] == COLUMNS
    assert [c.text for c in read.rows[0]] == ["1", "a", "2.50", "[1, 2]"]
    assert read.caption == "1 row"
    assert read.outer_class == CSS_CLASS


def test_numeric_columns_are_right_aligned_and_others_are_not() -> None:
    read = TableReader(to_html(table(COLUMNS, [(1, "a", Decimal("2.50"), [1])])))
    aligned = ["jss-sql-num" in cell.classes for cell in read.rows[0]]
    assert aligned == [True, False, True, False]
    assert ["jss-sql-num" in h.classes for h in read.headers] == aligned
    assert re.search(r"\.jss-sql-num\s*\{[^}]*text-align:\s*right", read.style)


def test_null_is_styled_apart_from_the_string_null() -> None:
    read = TableReader(to_html(table([("a", "string"), ("b", "string")], [(None, "NULL")])))
    null, text = read.rows[0]
    assert null.text == text.text == "NULL"
    assert "jss-sql-null" in null.classes and "jss-sql-null" not in text.classes
    rule = re.search(r"\.jss-sql-null\s*\{([^}]*)\}", read.style)
    assert rule and "italic" in rule.group(1) and "font-color2" in rule.group(1)


def test_a_long_value_is_cut_and_whole_on_hover() -> None:
    long = "x" * 50 + ' "quoted" <b>' + "y" * 50
    read = TableReader(to_html(table([("s", "string")], [(long,), ("short",)]), max_chars=40))
    cut, short = read.rows[0][0], read.rows[1][0]
    assert cut.text == "x" * 39 + "…"
    assert cut.attrs["title"] == long  # unescaped by the parser: the whole value
    assert short.text == "short" and "title" not in short.attrs


def test_a_huge_value_has_a_capped_title() -> None:
    read = TableReader(to_html(table([("s", "string")], [("z" * 100_000,)])))
    title = read.rows[0][0].attrs["title"]
    assert len(title) == TITLE_MAX_CHARS and title.endswith("…")


def test_everything_is_escaped() -> None:
    evil = "<script>alert('x')</script>"
    result = table([(evil, f"string{evil}")], [(evil,), ("a" * 100 + evil,)], total=5)
    markup = to_html(result)
    assert "<script" not in markup
    read = TableReader(markup)
    assert "script" not in read.tags
    assert read.headers[0].spans["jss-sql-name"] == evil
    assert read.rows[0][0].text == evil
    assert read.rows[1][0].attrs["title"].endswith(evil)


def test_the_styles_are_scoped_themed_and_scroll_with_a_sticky_header() -> None:
    read = TableReader(to_html(table(COLUMNS, [])))
    assert read.tags.count("style") == 1
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", read.style)
    assert rules
    for selectors, _ in rules:
        for selector in selectors.split(","):
            assert selector.strip().startswith(f".{CSS_CLASS}"), selector
    for variable in ("--jp-ui-font-color1", "--jp-layout-color1", "--jp-border-color2"):
        assert re.search(rf"var\({variable}, [^)]+\)", read.style), variable
    assert "var(--jp-content-font-family," in read.style
    # No light background written in: every background is a theme variable.
    backgrounds = re.findall(r"background(?:-color)?:\s*([^;]+);", read.style)
    assert len(backgrounds) == 4 and all(b.startswith("var(--jp-") for b in backgrounds)
    assert not re.search(r"#fff\b|#ffffff|(?<![-\w])white(?![-\w])", read.style, re.I)
    head = re.search(r"thead th\s*\{([^}]*)\}", read.style)
    assert head and "position: sticky" in head.group(1) and "top: 0" in head.group(1)
    assert re.search(r"max-height:\s*\d+em;[^}]*overflow:\s*auto", read.style)


def test_an_empty_result_still_has_its_header_and_caption() -> None:
    read = TableReader(to_html(table([("id", "bigint")], [])))
    assert [h.spans["jss-sql-name"] for h in read.headers] == ["id"]
    assert read.rows == [] and read.caption == "0 rows"


# ---- plain text ---------------------------------------------------------------------


def test_the_text_form_aligns_columns_and_ends_with_the_caption() -> None:
    result = table(
        [("id", "bigint"), ("name", "string"), ("score", "double")],
        [(1, "alpha", 1.5), (22, None, None), (333, "NULL", -0.25)],
        more=True,
    )
    assert to_text(result).splitlines() == [
        " id  name   score",
        "---  -----  -----",
        "  1  alpha    1.5",
        " 22  NULL    NULL",
        "333  NULL   -0.25",
        f"showing the first 3 rows of more than 3 ({MORE})",
    ]


def test_the_text_form_keeps_each_row_on_one_line_and_cuts_long_values() -> None:
    result = table([("s", "string"), ("n", "int")], [("two\nlines\tand a tab", 1), ("x" * 50, 2)])
    lines = to_text(result, max_chars=20).splitlines()
    assert len(lines) == 2 + 2 + 1
    assert lines[2] == "two\\nlines\\tand a t…  1"
    assert lines[3] == "x" * 19 + "…  2"


def test_the_text_form_counts_wide_characters_as_two_columns() -> None:
    lines = to_text(table([("city", "string"), ("n", "int")], [("東京", 1), ("Oslo", 2)]))
    assert lines.splitlines()[2:4] == ["東京  1", "Oslo  2"]


def test_a_result_without_columns_is_its_caption() -> None:
    assert to_text(table([], [])) == "0 rows"


def test_the_mime_bundle_holds_both_forms() -> None:
    result = table([("id", "bigint")], [(7,)])
    assert mime_bundle(result) == {"text/html": to_html(result), "text/plain": to_text(result)}
