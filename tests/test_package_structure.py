"""The package's shape (docs/architecture.md): small modules, imports that run one way,
and no code outside backends/ that asks which backend it holds."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jupyter_spark_sessions"
MAX_LINES = 650


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.with_suffix("").relative_to(PACKAGE.parent).parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports (at any level: a lazy import counts too)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in known and m != name}


def test_no_module_is_over_the_line_budget() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_no_two_modules_import_each_other() -> None:
    known = modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    assert graph["jupyter_spark_sessions.registry"], "the import reader found nothing"
    mutual = [
        (a, b) for a, b in itertools.combinations(graph, 2) if b in graph[a] and a in graph[b]
    ]
    assert mutual == []


def test_only_backends_branch_on_a_backends_kind_or_type() -> None:
    branch = re.compile(r"backend\.kind\s*[!=]=|isinstance\([^)]*(Classic|Connect)Backend")
    found = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in PACKAGE.glob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if branch.search(line)
    ]
    assert found == []
