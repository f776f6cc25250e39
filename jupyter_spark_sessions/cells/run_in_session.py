"""Running a cell's code in a named session (what ``%%spark_session NAME`` does).

For the cell only, ``spark`` in the user namespace is the session and the cell's jobs
form one job group of it (``SessionRegistry.running_in``); afterwards ``spark`` is what
it was. The code runs as IPython runs a cell: transformed (magics inside it work),
compiled under the cell's name (tracebacks show its lines), its last expression's value
returned for display.

An error of the code is shown as the same code's error in a cell bound with
``%spark_session use NAME``: its traceback starts at the frame of the cell's code, with
none of the frames that ran it (``UserTraceback``). A ``%%spark_sql`` statement's error
that keeps its traceback starts at PySpark's first frame (``show_from_spark``). An
error of the extension itself keeps every frame.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..sessions.registry import SessionRegistry
    from .tagging import CellJobTagging

_UNSET = object()


def run_cell_in(
    shell: InteractiveShell,
    registry: SessionRegistry,
    tagging: CellJobTagging,
    name: str,
    cell: str,
) -> Any:
    """Run ``cell`` with ``spark`` bound to session ``name``; return its last value."""
    from .tagging import first_line

    session = registry.session(name)
    count = tagging.current_count()
    # The body's lines are the notebook cell's from line 2 (line 1 is the magic's).
    scope = registry.running_in(name, count, first_line(cell), source="\n" + cell)
    try:
        with _spark_bound_to(shell, session), scope:
            return _execute(shell, cell, count)
    except BaseException as error:
        __tracebackhide__ = raised_by_cell(error)  # for %debug: only the cell's own error
        raise


def raised_by_cell(error: BaseException) -> bool:
    """``error`` came out of the code that a magic of the extension ran for the user (a
    ``%%spark_session`` cell's, a SQL statement's): it is shown without the frames that
    ran that code."""
    return isinstance(vars(error).get("_render_traceback_"), UserTraceback)


class UserTraceback:
    """An error's traceback from the first frame of the user's code (``first``), as
    IPython shows the same code's error in a cell of its own: IPython shows what an
    error's ``_render_traceback_()`` returns (``%tb`` too).

    The frames above ``first`` only ran it: the cell's line
    ``get_ipython().run_cell_magic(...)``, IPython's and the extension's. (Those of
    ``%%spark_session`` also say ``__tracebackhide__``, which ``%debug`` honours; with
    that alone IPython's traceback would still show the cell's line and a line
    ``[... skipping hidden 4 frame]``.) An error that went through other frames as well
    (a magic run by a function of the user's, the same error raised again in a later
    cell) gets IPython's whole traceback."""

    def __init__(self, shell: InteractiveShell, error: BaseException, first: TracebackType):
        self._shell = shell
        self._error = error
        self._first = first

    def __call__(self) -> list[str]:
        error = self._error
        start, tb_offset = error.__traceback__, None
        tb, callers = start, 0
        while tb is not None and tb is not self._first:
            if _package(tb.tb_frame) not in ("IPython", _PACKAGE):
                callers += 1
            tb = tb.tb_next
        if tb is not None and callers <= 1:  # the one caller: the cell's magic line
            start, tb_offset = tb, 0  # (IPython's offset skips the frame of run_code)
        shown: list[str] = self._shell.InteractiveTB.structured_traceback(
            type(error), error, start, tb_offset=tb_offset
        )
        return shown


def show_from(shell: InteractiveShell, error: BaseException, first: TracebackType) -> bool:
    """Have IPython show ``error``'s traceback from its entry ``first`` on (unless the
    error's class shows its own); whether it will."""
    if hasattr(type(error), "_render_traceback_"):
        return False
    # The error's own attribute, not its class's: for this error only.
    vars(error)["_render_traceback_"] = UserTraceback(shell, error, first)
    return True


def show_from_spark(shell: InteractiveShell, error: BaseException) -> bool:
    """``show_from`` PySpark's first frame, if the frames above it in ``error``'s
    traceback so far are all the extension's (a statement of a ``%%spark_sql`` cell
    that Spark failed to run; not an error of the extension, whose frames stay)."""
    tb = error.__traceback__
    while tb is not None and _package(tb.tb_frame) == _PACKAGE:
        tb = tb.tb_next
    if tb is None or _package(tb.tb_frame) not in ("pyspark", "py4j"):
        return False
    return show_from(shell, error, tb)


def _package(frame: FrameType) -> str:
    module = frame.f_globals.get("__name__")
    return module.partition(".")[0] if isinstance(module, str) else ""


_PACKAGE = __name__.partition(".")[0]


@contextmanager
def _spark_bound_to(shell: InteractiveShell, session: Any) -> Iterator[None]:
    user_ns = shell.user_ns
    previous = user_ns.get("spark", _UNSET)
    user_ns["spark"] = session
    try:
        yield
    finally:
        if previous is _UNSET:
            user_ns.pop("spark", None)
        else:
            user_ns["spark"] = previous


def _execute(shell: InteractiveShell, cell: str, count: int) -> Any:
    source = shell.transform_cell(cell)  # type: ignore[no-untyped-call]
    tree = ast.parse(source)
    ast.increment_lineno(tree, 1)  # the body starts below the %%spark_session line
    last_expr = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last_expr = ast.Expression(tree.body.pop().value)
    # Cached as cell `count` (tracebacks and job names say "In [count]"), with its
    # lines where the notebook shows them.
    filename = shell.compile.cache("\n" + cell, count)
    namespace = shell.user_ns
    try:
        exec(compile(tree, filename, "exec"), namespace)
        if last_expr is not None:
            return eval(compile(last_expr, filename, "eval"), namespace)
        return None
    except BaseException as error:
        __tracebackhide__ = _show_from_cell(shell, error, filename)
        raise


def _show_from_cell(shell: InteractiveShell, error: BaseException, filename: str) -> bool:
    """``show_from`` the frame of the cell's code, if ``error`` came out of it (the frame
    below ``_execute``'s is of the cell's ``filename``); whether it will."""
    cell_tb = error.__traceback__.tb_next if error.__traceback__ else None
    if cell_tb is None or cell_tb.tb_frame.f_code.co_filename != filename:
        return False  # compiling failed (IPython shows a SyntaxError its own way)
    return show_from(shell, error, cell_tb)
