"""``SparkSession.builder.getOrCreate()`` returns the session the thread is bound to.

What it changes: in a thread bound to a managed session (a cell after
``%spark_session use NAME``, a ``%%spark_session NAME`` cell, a ``running_in`` block:
whatever the backend's ``tag_thread`` binds), ``getOrCreate()`` of PySpark's builders
(``pyspark.sql.SparkSession.builder``, classic or Connect flavour, and Connect's own
``pyspark.sql.connect.session.SparkSession.builder``) returns that session. The
builder's runtime SQL options are set on it, as Spark's ``applyModifiableSettings``
does for the session it returns; options that cannot change a running context
(``appName``, ``master``, ``remote``, static and core settings such as
``spark.executor.memory``) are ignored with one note naming them, on stdout and once per
session and set of ignored settings (a notebook that asks three times is told once;
Spark's own ``WARN SparkSession: Using an existing Spark session ...`` is not drawn).
Where no managed session is bound, or the bound one is no longer usable, PySpark's own
``getOrCreate`` runs unchanged. ``context_binding`` does the same for
``SparkContext(...)``, ``SparkSession(sc)`` and ``SQLContext.getOrCreate(sc)`` (the
classic backend's ``tag_thread`` installs it).

Why: Spark's Scala builder "first checks whether there is a valid thread-local
SparkSession, and if yes, return that one"; PySpark's classic builder returns the
context's first session (``SparkSession._instantiatedSession``) instead. Nearly every
notebook starts with ``spark = SparkSession.builder.getOrCreate()``, and pandas-on-Spark
falls back to the builder for its default session.

What breaks without it: after ``use nb``, that first line silently rebinds ``spark`` to
the context's root session: the notebook's jobs are on no session's board (no progress,
no Cancel), its settings, temp views and UDFs go to the shared root session, and
isolation is gone without a word while every output looks right.

Private PySpark API: the builders' ``_options`` dict and their ``getOrCreate`` (wrapped
in place); ``tests/test_builder_binding_kernel.py`` checks them against the installed
PySpark.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import weakref
from collections.abc import Iterable
from typing import Any

from .driver import reachable

log = logging.getLogger(__name__)

_MARK = "__jss_builder_binding__"
#: Builder options that name the context or the server, never a session's: (key, the
#: builder call a user wrote).
_CONTEXT_OPTIONS = {
    "spark.master": "master",
    "spark.app.name": "appName",
    "spark.remote": "remote",
    "spark.api.mode": "spark.api.mode",
    "spark.sql.catalogImplementation": "enableHiveSupport",
}
_CLASSIC_MODULE = "pyspark.sql.session"
_CONNECT_MODULE = "pyspark.sql.connect.session"

_lock = threading.Lock()
_patched: set[str] = set()
#: This thread's binding: (session, name, connect) or None.
_bound = threading.local()
#: The sets of ignored settings each session's note named already.
_noted: weakref.WeakKeyDictionary[Any, set[frozenset[str]]] = weakref.WeakKeyDictionary()


def bind(session: Any, name: str, connect: bool) -> None:
    """The current thread is bound to ``session`` (called by the backend's
    ``tag_thread``); installs the builder patch on first use."""
    install()
    _bound.value = (session, name, connect)


def unbind(session: Any) -> None:
    """Undo ``bind`` on the current thread, if ``session`` is still the one bound."""
    current = getattr(_bound, "value", None)
    if current is not None and current[0] is session:
        _bound.value = None


def bound() -> tuple[Any, str, bool] | None:
    """(session, name, connect) bound to the current thread, if it is still usable."""
    current: tuple[Any, str, bool] | None = getattr(_bound, "value", None)
    if current is None:
        return None
    session, _, connect = current
    try:
        usable = not session.is_stopped if connect else reachable(session._sc)
    except Exception:  # a session whose client or context is gone
        usable = False
    return current if usable else None


def install() -> None:
    """Wrap the ``getOrCreate`` of PySpark's classic builder, and of Connect's once
    that is imported (idempotent; a cheap check after the first time)."""
    wanted = [m for m in (_CLASSIC_MODULE, _CONNECT_MODULE) if m not in _patched]
    if not wanted or all(m not in sys.modules for m in wanted):
        return
    with _lock:
        for module_name in wanted:
            module = sys.modules.get(module_name)
            if module is None or module_name in _patched:
                continue
            builder = module.SparkSession.Builder
            original = builder.getOrCreate
            if not getattr(original, _MARK, False):
                builder.getOrCreate = _wrap(original, connect=module_name == _CONNECT_MODULE)
            _patched.add(module_name)


def _wrap(original: Any, connect: bool) -> Any:
    @functools.wraps(original)
    def getOrCreate(self: Any) -> Any:
        binding = bound()
        options = getattr(self, "_options", {})
        if binding is None or not _serves(binding, options, connect):
            return original(self)
        session, name, _ = binding
        apply_options(session, name, dict(options))
        return session

    setattr(getOrCreate, _MARK, True)
    return getOrCreate


def _serves(binding: tuple[Any, str, bool], options: dict[str, Any], connect_builder: bool) -> bool:
    # A classic binding does not answer a builder asked for Spark Connect (its own
    # builder, or `.remote(...)`): that stays PySpark's. A Connect binding answers both
    # (the classic builder dispatches to Connect's whenever the Connect flavour is on).
    if binding[2]:
        return True
    wants_connect = "spark.remote" in options or (
        str(options.get("spark.api.mode", "")).lower() == "connect"
    )
    return not connect_builder and not wants_connect


def apply_options(
    session: Any,
    name: str,
    options: dict[str, Any],
    call: str = "getOrCreate()",
    ignored: Iterable[str] = (),
) -> list[str]:
    """Set the builder's ``options`` on ``session`` as Spark's ``applyModifiableSettings``
    does (the runtime ones; a value already set is left alone); the ones that cannot
    change a running context, and ``ignored`` (names of the ``call``'s other arguments),
    are named in one note (``note``). Returns their names."""
    ignored = list(ignored)
    conf = session.conf
    for key, value in options.items():
        value = str(value)
        try:
            if conf.get(key, None) == value:
                continue
        except Exception:  # a key the server refuses to read: try to set it below
            pass
        if key in _CONTEXT_OPTIONS:
            ignored.append(_CONTEXT_OPTIONS[key])
            continue
        try:
            conf.set(key, value)  # runtime SQL settings; unknown keys, as Spark does
        except Exception:  # static SQL and core settings: Spark refuses them
            ignored.append(key)
    ignored = list(dict.fromkeys(ignored))
    if ignored:
        note(session, name, call, ignored)
    return ignored


def note(session: Any, name: str, call: str, ignored: list[str]) -> None:
    """Print on stdout that ``call`` gave the bound ``session`` and ignored the settings
    ``ignored`` (a note, not an error: the notebook goes on as it would), unless this
    session's note named the same settings already."""
    what = frozenset(ignored)
    try:
        seen = _noted.setdefault(session, set())
    except TypeError:  # an object without weak references: noted every time
        seen = set()
    if what in seen:
        return
    seen.add(what)
    # SparkContext(), SparkContext.getOrCreate(): the context, which is the session's.
    gave = f"the bound session {name!r}"
    if call.startswith("SparkContext"):
        gave = f"the running context of {gave}"
    print(
        f"Note: {call} gave {gave} of jupyter_spark_sessions: "
        f"{', '.join(ignored)} cannot change a running context "
        "(ignored; runtime SQL settings were applied)."
    )
