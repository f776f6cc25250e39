"""The table of process-wide changes (``backends/process_wide.py``) stays true: each
entry's module still makes its change, each names a guard test that exists, and no
module makes such a change without an entry (pure: no Spark)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from jupyter_spark_sessions.backends.process_wide import PROCESS_WIDE_CHANGES

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jupyter_spark_sessions"

#: How a module changes process-wide state: the environment, a signal handler, a
#: logging or warnings filter, a PySpark class attribute, a replaced method.
_CHANGE = re.compile(
    r"os\.environ(\[[^\]]+\]\s*=[^=]|\.(setdefault|update|pop|clear)\()"
    r"|\bsignal\.signal\("
    r"|\.addFilter\("
    r"|\bwarnings\.filterwarnings\("  # not simplefilter in catch_warnings: scoped
    r"|\b(SparkSession|SparkContext)\.\w+(\s*,\s*\w+\.\w+)*\s*=[^=]"
    r"|\bsetattr\("
)


def where_path(where: str) -> Path:
    return ROOT / where if where.startswith("java/") else PACKAGE / where


def functions_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def test_every_process_wide_change_is_listed_with_a_guard_that_exists() -> None:
    assert len(PROCESS_WIDE_CHANGES) >= 10
    problems = []
    for change in PROCESS_WIDE_CHANGES:
        for field in ("what", "where", "mark", "why", "breaks_without", "guard"):
            if not getattr(change, field).strip():
                problems.append(f"{change.what!r}: empty {field}")
        path = where_path(change.where)
        if not path.is_file():
            problems.append(f"{change.where}: no such file")
        elif change.mark not in path.read_text():
            problems.append(f"{change.where} no longer holds {change.mark!r}")
        file, _, name = change.guard.partition("::")
        name = name.split("[", 1)[0]  # a parametrized id names its function
        guard_file = ROOT / file
        if not (file.startswith("tests/") and file.endswith(".py") and name):
            problems.append(f"{change.guard}: not tests/<file>.py::<test>")
        elif not guard_file.is_file():
            problems.append(f"{change.guard}: no such test file")
        elif not name.startswith("test_") or name not in functions_in(guard_file):
            problems.append(f"{change.guard}: no such test function")
    assert problems == []


#: Modules run as processes of their own (never imported into a kernel): their signal
#: handlers are that process's.
OWN_PROCESSES = {"shared_driver/keeper.py"}


def test_no_module_changes_process_wide_state_without_an_entry() -> None:
    listed = {change.where for change in PROCESS_WIDE_CHANGES} | OWN_PROCESSES
    unlisted = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in {*listed, "backends/process_wide.py"}
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _CHANGE.search(line)
    ]
    assert unlisted == [], "add these to backends/process_wide.py, with a guard test"


#: Java classes that reach into Spark by reflection without changing anything beyond
#: one thread: why each is not in the table.
_JAVA_NOT_PROCESS_WIDE = {
    "java/jss/CellScope.java": "sets the calling JVM thread's state only (its test: "
    "tests/test_private_apis.py::test_cell_scope_sets_a_cells_state_in_one_round_trip_and_restores_it)",
}


def test_no_java_class_reaches_into_spark_without_an_entry() -> None:
    listed = {change.where for change in PROCESS_WIDE_CHANGES}
    reaching = {
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "java").rglob("*.java"))
        if re.search(r"setAccessible\(true\)|\.(detach|attach)Handler\(", path.read_text())
    }
    assert reaching, "the scan found nothing: KilledTaskWorkers.java reaches by reflection"
    assert reaching - listed - set(_JAVA_NOT_PROCESS_WIDE) == set()


def test_the_scan_finds_the_listed_changes() -> None:
    # The pattern above still recognises the changes it is meant to catch.
    for where in (
        "__init__.py",
        "backends/api_flavour.py",
        "backends/builder_binding.py",
        "backends/call_site.py",
        "backends/classic.py",
        "backends/context_start.py",
        "backends/driver.py",
        "cells/interrupt.py",
    ):
        assert _CHANGE.search((PACKAGE / where).read_text()), where
