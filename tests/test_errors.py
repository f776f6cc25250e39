"""One error hierarchy: every exception the package defines lives in errors.py, is
drawn in its docstring and is exported by the package."""

from __future__ import annotations

import ast
from pathlib import Path

import jupyter_spark_sessions
from jupyter_spark_sessions import errors

PACKAGE = Path(jupyter_spark_sessions.__file__).parent


def exception_classes_defined_in(path: Path) -> set[str]:
    """Classes in ``path`` that derive from an exception (by their bases' names)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
            if any(b.endswith(("Error", "Exception", "Cancelled")) for b in bases):
                found.add(node.name)
    return found


def test_every_exception_class_is_defined_in_errors_py() -> None:
    elsewhere = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "errors.py"
        for name in exception_classes_defined_in(path)
    }
    assert elsewhere == set()


def test_every_error_is_in_the_docstring_hierarchy_and_exported() -> None:
    defined = exception_classes_defined_in(PACKAGE / "errors.py")
    assert "ProtocolError" in defined and len(defined) > 10
    drawn = {
        line.split("+-- ")[1].split()[0] for line in errors.__doc__.splitlines() if "+-- " in line
    }
    assert defined - {"SparkSessionsError"} == drawn
    assert defined <= set(jupyter_spark_sessions.__all__)
    for name in defined:
        assert issubclass(getattr(errors, name), errors.SparkSessionsError)
        assert getattr(jupyter_spark_sessions, name) is getattr(errors, name)
