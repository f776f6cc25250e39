"""The one line a failed import of a session's own package gets (package_hints)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from jupyter_spark_sessions.cells.package_hints import missing_module, package_hint
from jupyter_spark_sessions.sessions.python_envs import Requirements, SessionEnv


def _env(root: Path, *modules: str) -> SessionEnv:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = root / "lib" / version / "site-packages"
    site.mkdir(parents=True)
    for module in modules:
        (site / module).mkdir()
    return SessionEnv(str(root / "bin" / "python"), "k", Requirements(), True, 0.1)


class _Registry:
    def __init__(self, **envs: SessionEnv | None) -> None:
        self.envs = envs

    def names(self) -> list[str]:
        return list(self.envs)

    def get(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(env=self.envs[name])


def test_the_missing_module_is_read_from_the_kernel_or_from_a_workers_error() -> None:
    assert missing_module(ModuleNotFoundError("x", name="jsstiny.sub")) == ("jsstiny.sub", True)
    worker = RuntimeError(
        "An error occurred while calling o52.collectAndServe.\n"
        "  File \"/x/pyspark/worker.py\", line 1\nModuleNotFoundError: No module named 'jsstiny'"
    )
    assert missing_module(worker) == ("jsstiny", False)
    assert missing_module(ValueError("no")) is None


def test_a_failed_import_of_a_sessions_package_names_the_sessions_that_have_it(
    tmp_path: Path,
) -> None:
    registry = _Registry(
        a=_env(tmp_path / "a", "jsstiny"), b=_env(tmp_path / "b", "jsstiny"), c=None
    )
    line = package_hint(ModuleNotFoundError("x", name="jsstiny"), registry)  # type: ignore[arg-type]
    assert line == (
        "No module named 'jsstiny' in the kernel's own Python: only the UDFs of sessions "
        "'a', 'b' have it (their own packages: Python and pandas UDFs, mapInPandas, "
        "applyInPandas); the kernel's code, RDD API lambdas and other sessions run "
        "without it."
    )
    worker = RuntimeError("ModuleNotFoundError: No module named 'jsstiny.core'")
    only_a = _Registry(a=_env(tmp_path / "a2", "jsstiny"))
    hint = package_hint(worker, only_a)  # type: ignore[arg-type]
    assert hint is not None
    assert hint.startswith("No module named 'jsstiny.core' in Spark's Python workers for this")
    assert "only the UDFs of session 'a' have it (its own packages" in hint
    # A module no session has keeps its traceback.
    assert package_hint(ModuleNotFoundError("x", name="numpyy"), registry) is None  # type: ignore[arg-type]
    assert package_hint(ModuleNotFoundError("x", name="jsstiny"), None) is None
