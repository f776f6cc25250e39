"""How the board names what runs (pure): a job group by the code of its cell that ran its
first job, a job by the place in the user's code that started it.

- ``job_line``: the group's description, once the group has a job whose call site is a
  line of its own cell (``collect at In [5] line 3``): the statement holding that line,
  its lines joined (a method chain over several lines reads as one), shortened. The
  cell is parsed once (``describe_cell``, ~1 ms, on the board's producer thread, only for
  cells whose groups are shown); a job name is then one regular expression.
- ``first_code_line``: the group's description until then, and for good when no job
  names a line of the cell (Spark Connect's operations; a function another cell
  defined). Blank lines, comments, magics, imports and ``def``/``class`` blocks (with
  their decorators and bodies) only prepare; the first other statement is what the cell
  runs. A cell magic (``%%spark_session a``) is described by its body.
- ``call_site``: a Spark job's call site, the user's frame that called into PySpark
  (``count at In [5] line 3``), found in the Python stack at the moment of the call.
  PySpark's own rule names the frame before the *outermost* PySpark frame, which in a
  ``pyspark.InheritableThread`` is PySpark's thread wrapper
  (``copy_local_properties at .../threading.py:982``); this one names the *innermost*
  call from the user's code, and a notebook cell by its ``In [N]``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

#: Longest description shown; longer lines end with an ellipsis.
MAX_LENGTH = 80

#: Statements that only prepare what the cell runs.
_PREPARING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)

#: What IPython turns ``%magic``, ``!command`` and ``obj?`` into.
_MAGIC_CALLS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}


@dataclass(frozen=True)
class CellCode:
    """A cell's code as the board describes it, parsed once (``describe_cell``)."""

    #: The cell's lines, each cut to what a description can show.
    lines: tuple[str, ...] = ()
    #: ``first_code_line``'s answer.
    first_line: str = ""
    #: (first, last) cell line of each statement, innermost last among those sharing a
    #: line; a compound statement (``for``, ``with``, ``if``) spans its header only.
    statements: tuple[tuple[int, int], ...] = ()


def first_code_line(source: str | None) -> str:
    """The first line of a cell that is code doing something, shortened; the first
    non-comment line when nothing else is left (a cell of only ``def``s or magics)."""
    return describe_cell(source).first_line


def describe_cell(source: str | None) -> CellCode:
    """Parse a cell once: its first line of code and where its statements are."""
    lines = (source or "").splitlines()
    start = _first_meaningful(lines)
    if start is None:
        return CellCode()
    kept = tuple(line[: MAX_LENGTH * 2] for line in lines)
    if lines[start].lstrip().startswith("%%"):
        body = describe_cell("\n".join(lines[start + 1 :]))
        shift = start + 1
        return CellCode(
            kept,
            body.first_line or shorten(lines[start]),
            tuple((first + shift, last + shift) for first, last in body.statements),
        )
    # From the first meaningful line: IPython's transforms drop leading blank lines.
    tree = _parse("\n".join(lines[start:]))
    number = _first_doing_statement(tree) if tree is not None else _first_doing_line(lines[start:])
    first = shorten(lines[start + number - 1] if number is not None else lines[start])
    return CellCode(kept, first, _statement_spans(tree, start) if tree is not None else ())


#: A job named by ``call_site`` in a notebook cell: ``collect at In [5] line 3``.
_CELL_CALL_SITE = re.compile(r" at In \[(\d+)\] line (\d+)$")


def job_line(code: CellCode, job_name: str, execution_count: int) -> str:
    """The code of cell ``In [execution_count]`` that started the job ``job_name``
    (``collect at In [5] line 3``): the statement holding that line, its lines joined,
    shortened. "" when the job names no line of that cell (another cell's function,
    a library's thread, a Spark Connect operation, a blank line)."""
    if " at In [" not in job_name:  # most names that are not ours: no regex
        return ""
    match = _CELL_CALL_SITE.search(job_name)
    if match is None or int(match[1]) != execution_count:
        return ""
    called = job_name[: match.start()]
    if not called.isidentifier():  # named by what it ran (a SQL cell's statement)
        return shorten(called)
    number = int(match[2])
    if not 1 <= number <= len(code.lines):
        return ""
    first, last = _innermost_span(code.statements, number)
    text = ""
    for line in code.lines[first - 1 : last]:
        text = f"{text} {line.strip()}" if text else line.strip()
        if len(text) > MAX_LENGTH:
            break
    return shorten(text)


def _innermost_span(spans: Sequence[tuple[int, int]], number: int) -> tuple[int, int]:
    # The shortest statement span holding line ``number``; the line alone when none does
    # (the cell did not parse, or the line is an ``else:``).
    holding = [s for s in spans if s[0] <= number <= s[1]]
    return min(holding, key=lambda s: s[1] - s[0]) if holding else (number, number)


def _statement_spans(tree: ast.Module, start: int) -> tuple[tuple[int, int], ...]:
    # Cell line numbers: the tree was parsed from the cell's line ``start`` (0-based) on.
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        last = node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(node.lineno, body[0].lineno - 1)  # the header: `for x in y:`
        spans.append((node.lineno + start, last + start))
    return tuple(spans)


def _first_meaningful(lines: Sequence[str]) -> int | None:
    # The first line that is not blank and not a comment; else the first non-blank.
    stripped = [line.strip() for line in lines]
    for index, line in enumerate(stripped):
        if line and not line.startswith("#"):
            return index
    return next((i for i, line in enumerate(stripped) if line), None)


def _parse(source: str) -> ast.Module | None:
    # IPython's default transforms turn magics into get_ipython() calls one line each,
    # so line numbers stay the cell's. (The shell's own transform_cell may carry user
    # transformers that do not.) None when the cell does not parse.
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return ast.parse(TransformerManager().transform_cell(source))  # type: ignore[no-untyped-call]
    except (SyntaxError, ValueError):
        return None


def _first_doing_statement(tree: ast.Module) -> int | None:
    # The line number of the first top-level statement that does something; None when
    # there is none.
    for statement in tree.body:
        if isinstance(statement, _PREPARING) or _is_magic(statement) or _is_inert(statement):
            continue
        return statement.lineno
    return None


def _is_magic(statement: ast.stmt) -> bool:
    value = getattr(statement, "value", None)  # Expr, Assign, AnnAssign
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    receiver = value.func.value
    return (
        value.func.attr in _MAGIC_CALLS
        and isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Name)
        and receiver.func.id == "get_ipython"
    )


def _is_inert(statement: ast.stmt) -> bool:
    # `pass`, a bare string (a notebook's docstring), `global x`
    if isinstance(statement, ast.Pass | ast.Global | ast.Nonlocal):
        return True
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _first_doing_line(lines: Sequence[str]) -> int | None:
    # For a cell Python cannot parse: the same rule, line by line, without blocks.
    in_block = False
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith(("#", "%", "!", "@")):
            continue
        if line[:1].isspace() and in_block:
            continue
        in_block = text.startswith(("def ", "async def ", "class "))
        if in_block or text.startswith(("import ", "from ")):
            continue
        return number
    return None


def shorten(line: str) -> str:
    """``line`` stripped, cut at ``MAX_LENGTH`` characters (an ellipsis says so)."""
    line = line.strip()
    return line if len(line) <= MAX_LENGTH else line[: MAX_LENGTH - 1] + "…"


# -- a job's call site ---------------------------------------------------------------


class Frame(NamedTuple):
    """One frame of a Python stack, outermost first (what ``traceback`` calls a
    ``FrameSummary``, without the source line)."""

    file: str
    line: int
    function: str


#: ``cell_label(file)``: ``"In [N]"`` for a notebook cell's file, else None.
CellLabel = Callable[[str], "str | None"]


def call_site(
    stack: Sequence[Frame],
    is_spark: Callable[[str], bool],
    is_library: Callable[[str], bool],
    cell_label: CellLabel,
) -> str | None:
    """The call site of a Spark call made with ``stack`` (outermost frame first, the
    innermost being PySpark's own): ``<PySpark function> at <where the user called it>``.

    The user's frame is the innermost notebook cell that calls out of itself, else the
    innermost frame that is neither Spark (``is_spark``) nor a library such as the
    standard library's ``threading`` (``is_library``). None when the stack holds no
    such frame (PySpark then keeps its own rule)."""
    caller = _innermost(stack, lambda f: cell_label(f.file) is not None)
    if caller is None:
        caller = _innermost(stack, lambda f: not is_spark(f.file) and not is_library(f.file))
    if caller is None or caller + 1 >= len(stack):
        return None
    frame, called = stack[caller], stack[caller + 1]
    label = cell_label(frame.file)
    where = f"{label} line {frame.line}" if label else f"{frame.file}:{frame.line}"
    return f"{called.function} at {where}"


def _innermost(stack: Sequence[Frame], mine: Callable[[Frame], bool]) -> int | None:
    # The innermost frame of ``mine`` whose callee is not ``mine`` too (it calls out).
    for index in range(len(stack) - 2, -1, -1):
        if mine(stack[index]) and not mine(stack[index + 1]):
            return index
    return None


def cell_label(compiler_label: tuple[str, str] | None) -> str | None:
    """``"In [5]"`` from IPython's ``CachingCompiler.format_code_name`` answer
    (``("Cell", "In[5]")``) for a cell's file; None for any other file. Code cached
    without a number (``In[0]``: a ``%%spark_session`` body) is ``In [?]``."""
    if not compiler_label or compiler_label[0] != "Cell":
        return None
    name = compiler_label[1]
    if name == "In[0]":
        return "In [?]"
    return name.replace("In[", "In [", 1) if name.startswith("In[") else name
