"""Classic PySpark jobs named by where the user's code started them (the job's name in
the board and in Spark's UI): ``count at In [5] line 3``.

PySpark sets a job's call site (the JVM's ``callSite.short`` local property) in
``pyspark.traceback_utils.SCCallSiteSync``, around ``collect``, ``toPandas`` and RDD
actions only, with a rule that names PySpark's own thread wrapper for jobs of a
``pyspark.InheritableThread`` (``copy_local_properties at .../threading.py:982``).
``DataFrame.count``, ``show`` and the writers set none, so Spark names them after a JVM
frame (``$anonfun$withThreadLocalCaptured$1 at CompletableFuture.java:1768``).
``install`` makes ``SCCallSiteSync`` use ``job_descriptions.call_site`` and puts those
actions inside it. Private PySpark API: ``SCCallSiteSync``'s ``_context``/``_call_site``
fields; ``tests/test_job_descriptions.py`` checks them against the installed PySpark.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import re
import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import job_descriptions
from .driver import set_call_site

#: The classic actions that start jobs without setting a call site: (module, class,
#: methods). Nested ones (``parquet`` inside ``save``) keep the outer call site.
_UNNAMED_ACTIONS = (
    (
        "pyspark.sql.classic.dataframe",
        "DataFrame",
        ("count", "show", "isEmpty", "checkpoint", "localCheckpoint", "toArrow"),
    ),
    (
        "pyspark.sql.readwriter",
        "DataFrameWriter",
        ("save", "saveAsTable", "insertInto", "json", "parquet", "text", "csv", "orc", "jdbc"),
    ),
)

log = logging.getLogger(__name__)

_MARK = "__jss_call_site__"
_lock = threading.Lock()
_installed = False
#: The wrapped action this thread is entering (its frame is not on the stack yet).
_calling = threading.local()
#: How deep this thread is in SCCallSiteSync blocks (the outermost sets the call site).
_depth = threading.local()
_HERE = os.path.abspath(__file__)
#: PySpark's and py4j's folders, known once PySpark is imported (``install``).
_spark_dirs: tuple[str, ...] = ()
#: Where the standard library and installed packages live: not the user's code.
_LIBRARIES = tuple(
    {
        os.path.abspath(sysconfig.get_paths()[k]) + os.sep
        for k in ("stdlib", "platstdlib", "purelib", "platlib")
    }
)


def install() -> bool:
    """Name this process's classic jobs after the user's frame (idempotent); False
    while classic PySpark is not imported yet (nothing to change, nothing imported)."""
    global _installed, _spark_dirs
    if _installed:
        return True
    if "pyspark.traceback_utils" not in sys.modules:
        return False
    with _lock:
        if _installed:
            return True
        _spark_dirs = (_package_dir("pyspark"), _package_dir("py4j"))
        traceback_utils = sys.modules["pyspark.traceback_utils"]
        _patch_call_site_sync(traceback_utils.SCCallSiteSync)
        for module_name, class_name, methods in _UNNAMED_ACTIONS:
            try:  # PySpark imports them at the first DataFrame
                owner = getattr(importlib.import_module(module_name), class_name)
            except (ImportError, AttributeError):  # moved by an upgrade: named as before
                log.warning(
                    "cannot name the jobs of %s.%s after the user's code", module_name, class_name
                )
                continue
            for name in methods:
                method = getattr(owner, name, None)
                if callable(method) and not getattr(method, _MARK, False):
                    setattr(owner, name, _with_call_site(method, traceback_utils))
        _installed = True
    return True


#: What this thread's Spark calls are named instead of their call site (``named``).
_named = threading.local()
_AT_LINE = re.compile(r" at (.*) line (\d+)$")


@contextmanager
def named(what: str, line_offset: int = 0) -> Iterator[None]:
    """Name the jobs this thread starts inside ``what`` (a SQL statement) at the cell
    line their call site names, ``line_offset`` lines further (a cell magic's body is
    one call on the cell's first line): ``SELECT * FROM t at In [5] line 3``. On a
    classic context the name is set for the whole block, as an outermost
    ``SCCallSiteSync`` does (a command such as ``CREATE TABLE AS`` runs inside
    ``session.sql``, which sets none)."""
    from .driver import active_context

    site = _call_site_here()
    match = _AT_LINE.search(site or "")
    if match is not None:
        what = f"{what} at {match[1]} line {int(match[2]) + line_offset}"
    previous, _named.site = getattr(_named, "site", None), what
    sc = active_context() if _installed else None
    depth = getattr(_depth, "value", 0)
    if sc is not None and depth == 0:
        set_call_site(sc, what)
    _depth.value = depth + 1
    try:
        yield
    finally:
        _depth.value = depth
        _named.site = previous
        if sc is not None and depth == 0:
            set_call_site(sc, None)


def current_call_site(calling: str | None = None) -> str | None:
    """The call site of a Spark call made from this thread now (None: no user frame);
    ``calling``: the PySpark method about to be called, when it is not on the stack yet."""
    site = getattr(_named, "site", None)
    return site if site is not None else _call_site_here(calling)


def _call_site_here(calling: str | None = None) -> str | None:
    frames: list[job_descriptions.Frame] = []
    frame = sys._getframe(1)  # cheaper than traceback.extract_stack: no source lines
    while frame is not None:
        code = frame.f_code
        if code.co_filename != _HERE:  # this module's wrappers are not the user's
            frames.append(job_descriptions.Frame(code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back  # type: ignore[assignment]
    frames.reverse()
    if calling:
        frames.append(job_descriptions.Frame(_spark_dirs[0] + calling, 0, calling))
    return job_descriptions.call_site(frames, _is_pyspark, _is_library, _cell_label)


def _patch_call_site_sync(call_site_sync: Any) -> None:
    original_init = call_site_sync.__init__
    if getattr(original_init, _MARK, False):
        return

    def __init__(self: Any, sc: Any) -> None:
        ours = current_call_site(getattr(_calling, "name", None))
        if ours is None:
            original_init(self, sc)
            return
        self._call_site = ours
        self._context = sc

    # PySpark counts nested calls in one class-wide counter: while a thread's job runs
    # inside `collect`, every other thread's jobs got no call site. Per thread here.
    def __enter__(self: Any) -> None:
        depth = getattr(_depth, "value", 0)
        if depth == 0:
            set_call_site(self._context, self._call_site)
        _depth.value = depth + 1

    def __exit__(self: Any, *exc_info: object) -> None:
        _depth.value = getattr(_depth, "value", 1) - 1
        if _depth.value == 0:
            set_call_site(self._context, None)

    for method in (__init__, __enter__, __exit__):
        setattr(method, _MARK, True)
        setattr(call_site_sync, method.__name__, method)


def _with_call_site(method: Any, traceback_utils: Any) -> Any:
    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        from .driver import active_context

        sc = active_context()
        if sc is None:
            return method(*args, **kwargs)
        _calling.name = method.__name__
        try:
            sync = traceback_utils.SCCallSiteSync(sc)
        finally:
            _calling.name = None
        with sync:
            return method(*args, **kwargs)

    setattr(run, _MARK, True)
    return run


def _is_pyspark(file: str) -> bool:
    return file.startswith(_spark_dirs)


def _is_library(file: str) -> bool:
    return file.startswith(_LIBRARIES)


def _cell_label(file: str) -> str | None:
    # IPython's compiler names each cell's file and remembers its execution count.
    from IPython import get_ipython

    shell = get_ipython()
    compiler = getattr(shell, "compile", None)
    format_code_name = getattr(compiler, "format_code_name", None)
    return job_descriptions.cell_label(format_code_name(file)) if format_code_name else None


def _package_dir(name: str) -> str:
    path = getattr(sys.modules.get(name), "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else "\0"
