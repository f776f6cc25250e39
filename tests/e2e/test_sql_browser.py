"""A ``%%spark_sql`` cell's table in a real JupyterLab, in a real Chromium: its header
names and types, its rows and values, NULLs styled apart, numbers right-aligned, the
caption of a cut result, readable in the light and the dark theme; a temp view of
session a is missing in session b, in one line. Saves the screenshots docs/sql.md shows."""

from __future__ import annotations

import re
import time
from decimal import Decimal
from typing import Any

import pytest

from .lab import LabServer, save_screenshot, set_theme
from .notebook import (
    SETUP_CELL,
    SHOWN,
    cell_output,
    colours,
    cut_elements,
    open_notebook,
    run_all,
)

pytestmark = [pytest.mark.browser, pytest.mark.spark]

ROWS = 1000
VIEW_CELL = (
    "%%spark_sql a\n"
    "CREATE OR REPLACE TEMP VIEW sales AS SELECT id, id % 3 AS region,\n"
    "  CAST(id * 1.25 AS DECIMAL(10,2)) AS amount,\n"
    "  IF(id % 4 = 0, NULL, concat('item-', id)) AS item\n"
    f"FROM range({ROWS})"
)
SUMMARY_CELL = (
    "%%spark_sql a -n 10\n"
    "SELECT region, count(*) AS n, sum(amount) AS total FROM sales GROUP BY region ORDER BY region"
)
CUT_CELL = "%%spark_sql a -n 5\nSELECT * FROM sales"
OTHER_SESSION_CELL = "%%spark_sql b\nSELECT * FROM sales"
# Not run (Run All stops at the error before them): typed in by the second test.
TYPED_CELL = "%%spark_sql a -n 5\n-- a's view\nSELECT 'x' AS label, * FROM sa"
PYTHON_CELL = "select = 'x'  # a Python name that is a SQL keyword"
CELLS = [SETUP_CELL, VIEW_CELL, SUMMARY_CELL, CUT_CELL, OTHER_SESSION_CELL, TYPED_CELL, PYTHON_CELL]

TABLE = ".jss-sql-result .jss-sql-scroll table"


def expected_summary() -> list[list[str]]:
    """The rows cell 3 must show, worked out here from the view's definition."""
    rows = []
    for region in range(3):
        ids = [i for i in range(ROWS) if i % 3 == region]
        total = sum((Decimal(i) * Decimal("1.25") for i in ids), Decimal(0))
        rows.append([str(region), str(len(ids)), format(total.quantize(Decimal("0.01")), "f")])
    return rows


def headers(output: Any) -> list[tuple[str, str]]:
    """(name, type) of each header cell of the table in ``output``."""
    cells = output.locator(f"{TABLE} thead th")
    return [
        (th.locator(".jss-sql-name").inner_text(), th.locator(".jss-sql-type").inner_text())
        for th in cells.all()
    ]


def body(output: Any) -> list[list[str]]:
    rows = output.locator(f"{TABLE} tbody tr").all()
    return [[td.inner_text() for td in row.locator("td").all()] for row in rows]


def style_of(locator: Any, prop: str) -> str:
    value: str = locator.evaluate("(e, p) => getComputedStyle(e).getPropertyValue(p)", prop)
    return value


def text_right_edges(output: Any, column: int) -> list[float]:
    """Where the text of each cell of ``column`` ends on screen (its header's name
    first): equal edges are what a right-aligned column looks like."""
    edges: list[float] = output.locator(TABLE).evaluate(
        """(table, column) => {
          const edge = (node) => {
            const range = document.createRange();
            range.selectNodeContents(node);
            return range.getBoundingClientRect().right;
          };
          const header = table.querySelectorAll('thead th')[column];
          const cells = [...table.querySelectorAll('tbody tr')].map((r) => r.cells[column]);
          return [edge(header.querySelector('.jss-sql-name')), ...cells.map(edge)];
        }""",
        column,
    )
    return edges


#: WCAG's contrast ratio of an element's text against what is behind it: the text's
#: colour (its alpha and the element's opacity) over the backgrounds of the element
#: and its ancestors, composed from the page's white canvas up.
CONTRAST = """(e) => {
  const parse = (c) => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, below) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + below[i] * (1 - a)).concat([1]);
  };
  const layers = [];
  for (let n = e; n; n = n.parentElement) layers.push(parse(getComputedStyle(n).backgroundColor));
  let background = [255, 255, 255, 1];
  for (const layer of layers.reverse()) background = over(layer, background);
  const style = getComputedStyle(e);
  const text = parse(style.color);
  text[3] *= Number(style.opacity);
  const color = over(text, background);
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [fg, bg] = [luminance(color), luminance(background)];
  return {
    ratio: (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05),
    background: luminance(background),
    text: style.color,
  };
}"""


def contrast(locator: Any) -> dict[str, Any]:
    found: dict[str, Any] = locator.evaluate(CONTRAST)
    return found


def check_readable(output: Any, dark: bool) -> None:
    """Every kind of text of the table reads against its background: header names
    and types, values, NULLs, the caption (WCAG AA: 4.5 for text, 3 for the smaller,
    dimmed ones); the background is the theme's (dark or light)."""
    parts = {
        "name": (output.locator(f"{TABLE} .jss-sql-name").first, 4.5),
        "value": (output.locator(f"{TABLE} tbody td:not(.jss-sql-null)").first, 4.5),
        "even row": (output.locator(f"{TABLE} tbody tr:nth-child(2) td").first, 4.5),
        "type": (output.locator(f"{TABLE} .jss-sql-type").first, 4.5),
        "null": (output.locator(f"{TABLE} .jss-sql-null").first, 4.5),
        "caption": (output.locator(".jss-sql-caption"), 3.0),
    }
    for part, (locator, least) in parts.items():
        found = contrast(locator)
        assert found["ratio"] >= least, (part, dark, found)
        assert (found["background"] < 0.2) == dark, (part, dark, found)


class Region:
    """The part of ``page`` from the top of one element to the bottom of another, for
    ``save_screenshot``."""

    def __init__(self, page: Any, first: Any, last: Any) -> None:
        self.page, self.first, self.last = page, first, last

    def screenshot(self, path: str) -> None:
        self.first.scroll_into_view_if_needed()
        top, bottom = self.first.bounding_box(), self.last.bounding_box()
        assert top is not None and bottom is not None
        clip = {
            "x": top["x"],
            "y": top["y"],
            "width": top["width"],
            "height": bottom["y"] + bottom["height"] - top["y"],
        }
        screen = self.page.viewport_size
        assert clip["y"] >= 0 and clip["y"] + clip["height"] <= screen["height"], clip
        self.page.screenshot(path=path, clip=clip)


class Around:
    """The part of ``page`` around two elements (a cell and its completer's popup), for
    ``save_screenshot``."""

    def __init__(self, page: Any, *parts: Any) -> None:
        self.page, self.parts = page, parts

    def screenshot(self, path: str) -> None:
        boxes = [part.bounding_box() for part in self.parts]
        assert all(boxes), boxes
        left, top = min(b["x"] for b in boxes), min(b["y"] for b in boxes)
        right = max(b["x"] + b["width"] for b in boxes)
        bottom = max(b["y"] + b["height"] for b in boxes)
        clip = {"x": left, "y": top, "width": right - left, "height": bottom - top}
        self.page.screenshot(path=path, clip=clip)


def test_sql_cells_show_readable_tables_and_a_one_line_error(lab: LabServer, page: Any) -> None:
    open_notebook(page, lab, "sql.ipynb", CELLS)
    run_all(page)
    # The last cell fails: its error is the end of the run.
    error = cell_output(page, 4).locator("[data-mime-type='application/vnd.jupyter.stderr']")
    error.wait_for(timeout=120_000)

    # Cell 2: a command ends in one line.
    created = cell_output(page, 1).inner_text().strip()
    assert created.startswith("CREATE") and ": done in " in created, created
    assert len(created.splitlines()) == 1, created

    # Cell 3: names and types, the rows in order, the caption.
    summary = cell_output(page, 2)
    assert headers(summary) == [("region", "bigint"), ("n", "bigint"), ("total", "decimal(20,2)")]
    assert body(summary) == expected_summary()
    assert summary.locator(".jss-sql-caption").inner_text() == "3 rows"
    for column in range(3):  # every column numeric: text ends at one edge, header too
        edges = text_right_edges(summary, column)
        assert max(edges) - min(edges) < 1.5, (column, edges)

    # Cell 4: cut at 5 rows, said so; NULL styled apart; numbers right, text left.
    cut = cell_output(page, 3)
    assert headers(cut) == [
        ("id", "bigint"),
        ("region", "bigint"),
        ("amount", "decimal(10,2)"),
        ("item", "string"),
    ]
    rows = body(cut)
    assert len(rows) == 5, rows
    for id_, region, amount, item in rows:
        i = int(id_)
        assert region == str(i % 3) and amount == format(Decimal(i) * Decimal("1.25"), ".2f")
        assert item == ("NULL" if i % 4 == 0 else f"item-{i}"), rows
    caption = cut.locator(".jss-sql-caption").inner_text()
    assert caption == (
        "showing the first 5 rows of more than 5 (-n N shows more, --count counts them)"
    ), caption
    nulls = cut.locator(f"{TABLE} td.jss-sql-null")
    assert nulls.count() == sum(1 for row in rows if int(row[0]) % 4 == 0) >= 1
    items = cut.locator(f"{TABLE} tbody td:nth-child(4)")  # the string column
    null, plain = nulls.first, items.and_(page.locator("td:not(.jss-sql-null)")).first
    assert plain.inner_text().startswith("item-")
    assert style_of(null, "font-style") == "italic"
    assert style_of(plain, "font-style") == "normal"
    assert style_of(null, "color") != style_of(plain, "color")
    numeric = cut.locator(f"{TABLE} td.jss-sql-num")
    assert numeric.count() == 3 * len(rows)
    assert {style_of(td, "text-align") for td in numeric.all()} == {"right"}
    assert style_of(cut.locator(f"{TABLE} thead th").first, "text-align") == "right"
    assert style_of(plain, "text-align") == "left"
    for output in (summary, cut):  # no scroll bar, no value cut, nothing past the output
        assert cut_elements(output, ".jss-sql-scroll, .jss-sql-scroll th, .jss-sql-scroll td") == []

    # Cell 5: b does not see a's temp view, in one line that names b.
    lines = [line for line in error.inner_text().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "[TABLE_OR_VIEW_NOT_FOUND]" in lines[0] and "`sales`" in lines[0], lines
    assert "in session 'b'" in lines[0], lines

    check_readable(cut, dark=False)
    shown = Region(page, page.locator(".jp-Notebook .jp-Cell").nth(1), cell_output(page, 3))
    save_screenshot(shown, "sql-result.png")
    set_theme(page, "JupyterLab Dark")
    try:
        check_readable(cut, dark=True)  # cell 4 has every kind of text, NULLs too
        save_screenshot(shown, "sql-result-dark.png")
    finally:
        set_theme(page, "JupyterLab Light")


def check_highlighting(page: Any) -> None:
    theme, sql = colours(page, 5)
    assert len(set(theme.values())) == 3, theme  # three colours to tell apart
    assert sql["SELECT"] == sql["FROM"] == theme["keyword"], (sql, theme)
    assert sql["AS"] == theme["keyword"], sql
    assert sql["'x'"] == theme["string"], (sql, theme)
    assert sql["-- a's view"] == theme["comment"], (sql, theme)
    # The magic line as it is: no SQL keyword colour on `-n` or on the session's name.
    magic = [colour for text, colour in sql.items() if "spark_sql" in text or text == "a"]
    assert magic and theme["keyword"] not in magic, sql
    # A Python cell is not read as SQL: `select` is a name there.
    _, python = colours(page, 6)
    assert python["select"] != theme["keyword"], (python, theme)


def completer_items(page: Any) -> list[str]:
    """The completer's items once its list stopped growing: JupyterLab renders a long
    list in batches (a loaded machine showed the first six only)."""
    items = page.locator(".jp-Completer:visible .jp-Completer-item .jp-Completer-match")
    items.first.wait_for(timeout=30_000)
    shown: list[str] = []
    deadline = time.monotonic() + 10
    while True:
        page.wait_for_timeout(300)
        now = [item.inner_text() for item in items.all()]
        if now == shown or time.monotonic() > deadline:
            return now
        shown = now


def test_a_sql_cell_completes_from_its_session_and_is_highlighted_as_sql(
    lab: LabServer, page: Any
) -> None:
    # The notebook of the test above, its kernel idle: session a has the view `sales`.
    cell = page.locator(f"{SHOWN} .jp-Notebook .jp-Cell").nth(5)
    assert "SELECT 'x' AS label" in cell.locator(".cm-content").inner_text()
    check_highlighting(page)
    shown = cell.locator(".jp-InputArea-editor")
    save_screenshot(shown, "sql-highlighting.png")

    # Tab after `FROM sa`: a's table first (JupyterLab adds the words of the cell that
    # match, after the kernel's); Enter puts it in.
    shown.click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Tab")
    assert completer_items(page)[0] == "sales"
    page.keyboard.press("Enter")
    content = cell.locator(".cm-content")
    deadline = time.monotonic() + 30
    while not content.inner_text().rstrip().endswith("FROM sales"):
        assert time.monotonic() < deadline, content.inner_text()
        page.wait_for_timeout(200)
    # After WHERE: the view's columns, keywords in the case typed, functions; no
    # Python name (JupyterLab orders them its own way).
    page.keyboard.type(" WHERE i")
    page.keyboard.press("Tab")
    items = completer_items(page)
    assert {"id", "item", "in", "ifnull"} <= set(items), items
    assert "isinstance" not in items and "IN" not in items, items
    save_screenshot(Around(page, cell, page.locator(".jp-Completer:visible")), "sql-completion.png")
    page.keyboard.press("Escape")

    # Shift+Tab on `sales`: its columns and types, and whose temp view it is.
    page.keyboard.press("End")
    for _ in " WHERE i":
        page.keyboard.press("ArrowLeft")
    page.keyboard.press("Shift+Tab")
    tooltip = page.locator(".jp-Tooltip:visible")
    tooltip.wait_for(timeout=30_000)
    # The tooltip's box shows before its markdown is rendered into it (CI saw it empty).
    deadline = time.monotonic() + 30
    while not (shown_text := tooltip.inner_text()).strip() and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert re.search(r"^sales: temporary view of session\W+a\b", shown_text), shown_text
    for part in ("region", "bigint", "amount", "decimal(10,2)", "item", "string"):
        assert part in shown_text, shown_text
    save_screenshot(Around(page, cell, tooltip), "sql-inspect.png")
    page.keyboard.press("Escape")

    light = colours(page, 5)[0]
    set_theme(page, "JupyterLab Dark")
    try:
        check_highlighting(page)  # in the dark theme's own colours
        assert colours(page, 5)[0]["keyword"] != light["keyword"], light
        save_screenshot(shown, "sql-highlighting-dark.png")
    finally:
        set_theme(page, "JupyterLab Light")
