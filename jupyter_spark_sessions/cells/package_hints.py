"""What a cell that cannot import a session's package is told: one line naming the
sessions whose UDFs have it, since nothing else can import it.

Spark runs a session's own interpreter (``sessions/python_envs``) for its UDFs only: the
kernel's own code, RDD API lambdas (``sc.parallelize(...).map(f)``, ``df.rdd``) and
other sessions' UDFs run without its packages. The first time that matters is an
import that fails, in the kernel or in Spark's Python workers."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..backends.spark_error_reading import error_chain

if TYPE_CHECKING:
    from ..sessions.registry import SessionRegistry

_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def missing_module(error: BaseException) -> tuple[str, bool] | None:
    """(the module a failed import named, whether it failed in the kernel itself rather
    than in Spark's Python workers), or None for another error."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        return error.name, True
    for current in error_chain(error):
        found = _NO_MODULE.search(str(current))
        if found:
            return found.group(1), False
    return None


def package_hint(error: BaseException, registry: SessionRegistry | None) -> str | None:
    """The one line for ``error`` when it is a failed import of a module that only some
    sessions' own packages have; None otherwise (the error keeps its traceback)."""
    missing = missing_module(error)
    if missing is None or registry is None:
        return None
    module, in_kernel = missing
    owners = []
    for name in registry.names():
        env = registry.get(name).env
        if env is not None and env.provides(module):
            owners.append(f"'{name}'")
    if not owners:
        return None
    whose = f"session {owners[0]}" if len(owners) == 1 else "sessions " + ", ".join(owners)
    its = "its" if len(owners) == 1 else "their"
    where = "the kernel's own Python" if in_kernel else "Spark's Python workers for this job"
    return (
        f"No module named '{module}' in {where}: only the UDFs of {whose} have it ({its} "
        "own packages: Python and pandas UDFs, mapInPandas, applyInPandas); the kernel's "
        "code, RDD API lambdas and other sessions run without it."
    )
