"""The package's shape (docs/architecture.md): sub-packages by concept whose imports run
one way, small modules, every module on the architecture page, and no code outside
backends/ that asks which backend it holds."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jupyter_spark_sessions"
#: A module this long holds more than one concept: split it (docs/architecture.md says
#: where each concept lives), do not compress it.
MAX_LINES = 650
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


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
    too_long = {n: s for n, s in sizes.items() if s > MAX_LINES}
    assert too_long == {}, f"split these modules by concept: {too_long}"


def test_no_two_modules_import_each_other() -> None:
    known = modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    assert graph["jupyter_spark_sessions.sessions.registry"], "the import reader found nothing"
    mutual = [
        (a, b) for a, b in itertools.combinations(graph, 2) if b in graph[a] and a in graph[b]
    ]
    assert mutual == []


def test_only_backends_branch_on_a_backends_kind_or_type() -> None:
    branch = re.compile(r"backend\.kind\s*[!=]=|isinstance\([^)]*(Classic|Connect)Backend")
    found = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in PACKAGE.rglob("*.py")
        if "backends" not in path.relative_to(PACKAGE).parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if branch.search(line)
    ]
    assert found == []


def room(module: str) -> str:
    """The sub-package a module lives in, or the module itself at the top."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_sub_packages_import_one_way() -> None:
    """No cycle between rooms (sub-packages and top-level modules), lazy and
    TYPE_CHECKING imports included: the folder list reads as layers."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        edges.setdefault(room(name), set()).update(
            room(m) for m in imports_of(name, path, known) if room(m) != room(name)
        )
    assert len(edges) > 10 and edges["jupyter_spark_sessions.sessions"], "no rooms found"
    cycles = []

    def visit(node: str, trail: list[str]) -> None:
        for nxt in sorted(edges.get(node, ())):
            if nxt in trail:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in done:
                visit(nxt, [*trail, nxt])
        done.add(node)

    done: set[str] = set()
    for start in sorted(edges):
        visit(start, [start])
    assert cycles == []


def test_every_module_is_on_the_architecture_page() -> None:
    """docs/architecture.md names every module of the package by its path, and every
    sub-package by its folder (``board/``)."""
    page = ARCHITECTURE.read_text()

    def name_on_page(path: Path) -> str:
        relative = path.relative_to(PACKAGE)
        if relative.name == "__init__.py" and relative.parent.parts:
            return f"{relative.parent}/"
        return str(relative)

    missing = [name_on_page(p) for p in PACKAGE.rglob("*.py") if name_on_page(p) not in page]
    assert missing == []


def test_every_java_class_is_on_the_architecture_page() -> None:
    page = ARCHITECTURE.read_text()
    java = sorted((PACKAGE.parent / "java").rglob("*.java"))
    assert java, "no Java sources found"
    assert [p.stem for p in java if f"{p.stem}.java" not in page] == []
