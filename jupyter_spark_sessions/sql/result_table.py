"""A SQL result as a table a person can read: HTML for JupyterLab, plain text for
consoles and a notebook's stored ``text/plain``.

The magic fetches the rows (``n + 1`` of them, to know whether there are more) and
hands them here with the columns' Spark types (``DataType.simpleString()``). The HTML
has a header cell per column (its name, and its type below in smaller print), numbers
right-aligned, ``NULL`` styled apart from the string ``"NULL"``, long values cut with
"…" and shown whole on hover (``title``), a sticky header in a box that scrolls, and a
caption line (the row count, or what was left out). Its styles live in one ``<style>``
scoped by the wrapper's class and use JupyterLab's theme variables (with fallbacks), so
the dark theme reads as well as the light one.

Values are written as PySpark's ``Row`` gives them: ``None`` as NULL, booleans as
``true``/``false`` (as Spark writes them), floats as ``repr``, decimals in plain
notation, dates and times in ISO 8601 (a space between date and time), durations as
Python writes them, binary as hex (``0x6162``: bytes are rarely text, and hex shows
each byte), arrays as ``[1, 2]``, maps as ``{k: v}``, structs (nested ``Row``) as
``{field: value}``; nested NULLs as ``NULL``. numpy values (rows read back from a pandas
DataFrame) are written as the Python values they stand for.
"""

from __future__ import annotations

import datetime
import html
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

#: The CSS class of the wrapper, which scopes the styles.
CSS_CLASS = "jss-sql-result"
#: A value's whole text in the hover title is capped: a huge value would make the
#: output as huge, row by row.
TITLE_MAX_CHARS = 10_000

_NUMERIC_TYPES = frozenset(
    {"byte", "short", "int", "integer", "long", "tinyint", "smallint", "bigint"}
    | {"float", "double", "real"}
)


@dataclass(frozen=True)
class ResultTable:
    """The rows a SQL cell shows, and what it knows of the rows it does not."""

    #: (name, Spark type's simpleString: "bigint", "decimal(10,2)", "array<int>").
    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[object, ...], ...]
    #: More rows exist than ``rows`` holds (the magic fetched one more than it shows).
    more: bool = False
    #: The exact number of rows, when known without another Spark job (``-o`` fetched
    #: them all) or when the user asked for a count.
    total: int | None = None
    #: With ``more`` and no ``total``: how many rows the result is known to have more
    #: than (``-o`` cut at --max-rows); the rows shown when None.
    more_than: int | None = None


def is_numeric_type(type_name: str) -> bool:
    """True for Spark's numeric types (``bigint``, ``double``, ``decimal(10,2)``, ...)."""
    name = type_name.strip().lower()
    return name in _NUMERIC_TYPES or name.startswith(("decimal", "numeric"))


def _plural(count: int) -> str:
    return f"{count:,} row" if count == 1 else f"{count:,} rows"


def caption(table: ResultTable) -> str:
    """``"3 rows"``, or what the table leaves out: ``"showing 20 of 1,000,000 rows"``
    when the count is known, else ``"showing the first 20 rows of more than 20 (-n N
    shows more, --count counts them)"``: counting would run the query once more."""
    shown = len(table.rows)
    if table.total is not None and table.total > shown:
        return f"showing {shown:,} of {_plural(table.total)}"
    if table.total is None and table.more:
        floor = max(shown, table.more_than or 0)
        how = "-n N shows more, --count counts them"
        return f"showing the first {_plural(shown)} of more than {floor:,} ({how})"
    return _plural(shown if table.total is None else table.total)


def variable_line(name: str, rows: int, columns: int, max_rows: int | None = None) -> str:
    """What ``-o NAME`` put in the notebook: ``"`top`: pandas DataFrame, 1,000 rows x 3
    columns"``; ``max_rows`` when the result had more rows than that and was cut."""
    line = f"`{name}`: pandas DataFrame, {_plural(rows)} x {columns:,} column" + (
        "" if columns == 1 else "s"
    )
    if max_rows is not None:
        line += f" (the result's first {max_rows:,}: --max-rows {max_rows})"
    return line


class _Writer:
    """Builds a value's text up to ``limit`` characters, and stops there (a million-item
    array is not written out to show 80 characters of it): once ``full``, writes are
    dropped and loops over items end."""

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.limit = limit

    @property
    def full(self) -> bool:
        return self.length > self.limit

    def write(self, text: str) -> None:
        text = text[: max(0, self.limit - self.length + 1)]  # no more than it can keep
        self.parts.append(text)
        self.length += len(text)


def _struct_fields(value: tuple[object, ...]) -> list[str] | None:
    """A struct's field names: PySpark's ``Row`` keeps them in ``__fields__``."""
    fields = getattr(value, "__fields__", None)
    return list(fields) if isinstance(fields, (list, tuple)) else None


def _write_value(value: object, out: _Writer) -> None:
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        value = value.tolist()  # rows read back from pandas: numpy scalars and arrays
    if value is None:
        out.write("NULL")
    elif isinstance(value, bool):
        out.write("true" if value else "false")
    elif isinstance(value, float):
        out.write(repr(float(value)))
    elif isinstance(value, Decimal):
        out.write(format(value, "f"))
    elif isinstance(value, str):
        out.write(value)
    elif isinstance(value, (bytes, bytearray)):
        out.write("0x" + bytes(value[: out.limit]).hex())
    elif isinstance(value, datetime.datetime):
        out.write(value.isoformat(sep=" "))
    elif isinstance(value, (datetime.date, datetime.time)):
        out.write(value.isoformat())
    elif isinstance(value, dict):
        _write_items(((k, v) for k, v in value.items()), "{", "}", out)
    elif isinstance(value, tuple) and _struct_fields(value) is not None:
        fields = _struct_fields(value) or []
        _write_items(zip(fields, value, strict=False), "{", "}", out)
    elif isinstance(value, (list, tuple)):
        _write_items(((None, v) for v in value), "[", "]", out)
    else:  # int, timedelta, Spark's VariantVal, anything newer
        out.write(str(value))


def _write_items(
    items: Iterator[tuple[object, object]], opening: str, closing: str, out: _Writer
) -> None:
    out.write(opening)
    for index, (key, item) in enumerate(items):
        if out.full:
            return
        if index:
            out.write(", ")
        if key is not None:
            _write_value(key, out)
            out.write(": ")
        _write_value(item, out)
    out.write(closing)


def value_text(value: object, limit: int = TITLE_MAX_CHARS) -> str:
    """``value`` written for a person, at most ``limit`` characters (cut with "…")."""
    out = _Writer(limit)
    _write_value(value, out)
    text = "".join(out.parts)
    return text[: limit - 1] + "…" if out.full else text


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max(1, max_chars - 1)] + "…"


# ---- HTML ---------------------------------------------------------------------------

#: The table's rules go through the scroll box as well as the wrapper: JupyterLab's own
#: table rules (``:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon th``: right-aligned,
#: ``white-space: normal``) are as specific, and this <style> comes later, so it wins.
_T = f".{CSS_CLASS} .jss-sql-scroll"
_STYLE = f"""
.{CSS_CLASS} {{
  font-family: var(--jp-content-font-family, system-ui, sans-serif);
  font-size: var(--jp-content-font-size1, 13px);
  color: var(--jp-ui-font-color1, inherit);
}}
{_T} {{
  max-height: 32em; max-width: 100%; overflow: auto; display: inline-block;
  vertical-align: top;
  border: 1px solid var(--jp-border-color2, rgba(128, 128, 128, 0.4));
}}
{_T} table {{
  border-collapse: separate; border-spacing: 0; margin: 0; table-layout: auto;
  color: var(--jp-ui-font-color1, inherit); font-size: inherit;
  font-variant-numeric: tabular-nums;
}}
{_T} th, {_T} td {{
  padding: 0.2em 0.7em; text-align: left; vertical-align: top; line-height: 1.4;
  white-space: pre; max-width: none; border: none;
  border-bottom: 1px solid var(--jp-border-color2, rgba(128, 128, 128, 0.25));
}}
{_T} thead th {{
  position: sticky; top: 0; z-index: 1;
  background: var(--jp-layout-color1, Canvas); color: var(--jp-ui-font-color1, inherit);
  border-bottom: 1px solid var(--jp-border-color1, rgba(128, 128, 128, 0.6));
}}
{_T} tbody tr:nth-child(odd) {{ background: var(--jp-layout-color0, transparent); }}
{_T} tbody tr:nth-child(even) {{
  background: var(--jp-rendermime-table-row-background, rgba(128, 128, 128, 0.08));
}}
{_T} tbody tr:hover {{
  background: var(--jp-rendermime-table-row-hover-background, rgba(128, 128, 128, 0.18));
}}
{_T} .jss-sql-num {{ text-align: right; }}
{_T} .jss-sql-name {{ display: block; font-weight: 600; }}
{_T} .jss-sql-type {{
  display: block; font-weight: normal; font-size: 0.8em;
  color: var(--jp-ui-font-color2, inherit);
}}
{_T} .jss-sql-null {{ font-style: italic; color: var(--jp-ui-font-color2, inherit); }}
.{CSS_CLASS} .jss-sql-caption {{
  margin-top: 0.3em; font-size: 0.9em; color: var(--jp-ui-font-color2, inherit);
}}
"""


def _attribute(text: str) -> str:
    return html.escape(text, quote=True)


def _html_header(name: str, type_name: str, max_chars: int) -> str:
    numeric = ' class="jss-sql-num"' if is_numeric_type(type_name) else ""
    return (
        f'<th{numeric} title="{_attribute(name)}: {_attribute(type_name)}">'
        f'<span class="jss-sql-name">{html.escape(_cut(name, max_chars))}</span>'
        f'<span class="jss-sql-type">{html.escape(type_name)}</span></th>'
    )


def _html_cell(value: object, numeric: bool, max_chars: int) -> str:
    classes = ["jss-sql-num"] if numeric else []
    if value is None:
        classes.append("jss-sql-null")
        return f'<td class="{" ".join(classes)}">NULL</td>'
    whole = value_text(value)
    shown = _cut(whole, max_chars)
    title = f' title="{_attribute(whole)}"' if shown != whole else ""
    css = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{css}{title}>{html.escape(shown)}</td>"


def to_html(table: ResultTable, max_chars: int = 80) -> str:
    """The table as HTML: header with names and types, styled NULLs, long values cut
    (whole in ``title``), the caption under it. Every text is escaped."""
    numeric = [is_numeric_type(type_name) for _, type_name in table.columns]
    header = "".join(_html_header(name, type_, max_chars) for name, type_ in table.columns)
    body = "".join(
        "<tr>"
        + "".join(_html_cell(v, n, max_chars) for v, n in zip(row, numeric, strict=False))
        + "</tr>"
        for row in table.rows
    )
    return (
        f'<div class="{CSS_CLASS}"><style>{_STYLE}</style>'
        f'<div class="jss-sql-scroll"><table><thead><tr>{header}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
        f'<div class="jss-sql-caption">{html.escape(caption(table))}</div></div>'
    )


# ---- plain text ---------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _one_line(text: str) -> str:
    """Control characters written as escapes (``\\n``), so a value stays on its line."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _width(text: str) -> int:
    """Columns a terminal gives ``text``: wide East Asian characters take two,
    combining marks none."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * (width - _width(text))
    return fill + text if right else text + fill


def to_text(table: ResultTable, max_chars: int = 80) -> str:
    """The table as aligned plain text: a header of names, a rule, the rows (numbers
    right-aligned, NULL as NULL), the caption last."""
    if not table.columns:
        return caption(table)
    numeric = [is_numeric_type(type_name) for _, type_name in table.columns]
    cells = [[_cut(_one_line(name), max_chars) for name, _ in table.columns]]
    cells += [
        [_cut(_one_line(value_text(v, max_chars + 1)), max_chars) for v in row]
        for row in table.rows
    ]
    widths = [max(_width(line[i]) for line in cells if i < len(line)) for i in range(len(numeric))]
    rule = ["-" * w for w in widths]
    lines = [
        "  ".join(
            _pad(text, w, right) for text, w, right in zip(line, widths, numeric, strict=False)
        )
        for line in [cells[0], rule, *cells[1:]]
    ]
    return "\n".join([*(line.rstrip() for line in lines), caption(table)])


def mime_bundle(table: ResultTable) -> dict[str, str]:
    """What IPython's display takes: ``{"text/html": ..., "text/plain": ...}``."""
    return {"text/html": to_html(table), "text/plain": to_text(table)}
