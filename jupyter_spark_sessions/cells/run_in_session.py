"""Running a cell's code in a named session (what ``%%spark_session NAME`` does).

For the cell only, ``spark`` in the user namespace is the session and the cell's jobs
form one job group of it (``SessionRegistry.running_in``); afterwards ``spark`` is what
it was. The code runs as IPython runs a cell: transformed (magics inside it work),
compiled under the cell's name (tracebacks show its lines), its last expression's value
returned for display.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
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
    with _spark_bound_to(shell, session), scope:
        return _execute(shell, cell, count)


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
    exec(compile(tree, filename, "exec"), namespace)
    if last_expr is not None:
        return eval(compile(last_expr, filename, "eval"), namespace)
    return None
