"""PySpark's context and session constructors give the running context and the bound session.

What it changes: in a thread bound to a managed classic session (the threads for which
``builder_binding.bound()`` answers a classic session; the running SparkContext is that
session's, i.e. the kernel's shared one):

- ``SparkContext(...)``, whatever its arguments (``SparkContext(conf=SparkConf())``,
  ``SparkContext("local[2]", "app")``), returns the running SparkContext instead of
  raising ``Cannot run multiple SparkContexts at once``; ``SparkContext.getOrCreate(conf)``
  returns it as before;
- ``SparkSession(sc)`` (no ``jsparkSession``) returns the bound session, not a new Python
  object over the JVM's default session;
- ``SQLContext.getOrCreate(sc)`` returns an SQLContext of the bound session, not the
  process's first SQLContext (``SQLContext(sc)`` already takes the thread's active
  session, which the binding sets).

The settings these calls carry (a ``SparkConf``, ``master``/``appName``, a session's
``options``) are handled as ``builder_binding.apply_options`` handles the builder's:
runtime SQL settings are set on the bound session, as they would be on the sessions of
a context the call had started; those a running context cannot take are named in one
note (once per session and set). What ``SparkConf()`` holds without being told (the JVM's
``spark.*`` system properties) is not counted as asked for.

Where no classic session is bound, or the running context is not the bound session's,
or the context has no default session yet (this project's own start of a context),
PySpark's constructors run unchanged.

Why: tutorials and notebooks written for plain PySpark open with
``sc = SparkContext(conf=SparkConf())`` and ``spark = SparkSession(sparkContext=sc)``.
Without it the first line raises after ``%spark_session use nb`` (the kernel's context
runs already), and ``SparkSession(sc)`` would put the notebook's work in the context's
root session: no isolation, no board, no Cancel.

Private PySpark API: ``SparkContext._active_spark_context``,
``SparkSession._instantiatedSession``, ``SQLContext._get_or_create`` (wrapped), the
parameters of ``SparkContext.__init__`` and ``SparkSession.__init__``, and that neither
class defines ``__new__`` (this module adds one; ``__init__`` is wrapped to skip the
object ``__new__`` returned already running). The classic backend's ``tag_thread``
installs the wrappers. ``test_pyspark_constructors_are_what_context_binding_wraps`` (in
``tests/test_builder_binding_kernel.py``) checks them against the installed PySpark.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

from . import builder_binding

log = logging.getLogger(__name__)

_MARK = "__jss_context_binding__"
#: Arguments of ``SparkContext(...)`` besides master, appName and conf: none of them can
#: change a running context (named in the note when given).
_CONTEXT_ARGUMENTS = (
    "sparkHome",
    "pyFiles",
    "environment",
    "batchSize",
    "serializer",
    "gateway",
    "jsc",
    "profiler_cls",
    "udf_profiler_cls",
    "memory_profiler_cls",
)

_lock = threading.Lock()
#: None until ``install`` ran; then whether the wrappers are in place.
_installed: bool | None = None
#: The running object this thread's last ``__new__`` returned: its ``__init__`` is skipped.
_adopted = threading.local()
#: The SQLContext ``SQLContext.getOrCreate`` gave for each session (while it is used):
#: the same one each time, as PySpark's is.
_sql_contexts: weakref.WeakKeyDictionary[Any, weakref.ref[Any]] = weakref.WeakKeyDictionary()

#: Finds what ``cls(*args, **kwargs)`` gives in this thread: the running object, or None.
Adopter = Callable[[Any, inspect.BoundArguments], Any]


def install() -> bool:
    """Wrap the constructors (idempotent: a cheap check after the first call). False
    when classic PySpark cannot be imported (a Spark Connect only client) or an upgrade
    moved what the wrappers rely on (said once in the log)."""
    global _installed
    if _installed is not None:
        return _installed
    with _lock:
        if _installed is not None:
            return _installed
        try:
            from pyspark.core.context import SparkContext
            from pyspark.sql.context import SQLContext
            from pyspark.sql.session import SparkSession
        except ImportError:
            _installed = False
            return False
        if not all(_has_no_new(cls) for cls in (SparkContext, SparkSession)):
            log.warning("PySpark defines __new__: SparkContext(...) is not bound to sessions")
            _installed = False
            return False
        _wrap_constructor(SparkContext, _running_context)
        _wrap_constructor(SparkSession, _bound_session)
        SparkContext.getOrCreate = classmethod(  # type: ignore[method-assign,assignment]
            _wrap_context_get_or_create(SparkContext.__dict__["getOrCreate"].__func__)
        )
        SQLContext._get_or_create = classmethod(  # type: ignore[method-assign,assignment]
            _wrap_sql_context_get_or_create(SQLContext.__dict__["_get_or_create"].__func__)
        )
        _installed = True
    return True


def _has_no_new(cls: type) -> bool:
    # object.__new__ is what the constructor's __new__ falls back to.
    return all("__new__" not in vars(base) for base in cls.__mro__[:-1])


def _wrap_constructor(cls: type, adopter: Adopter) -> None:
    original_init = cls.__dict__["__init__"]
    if getattr(original_init, _MARK, False):
        return
    signature = inspect.signature(original_init)

    def __new__(klass: type, *args: Any, **kwargs: Any) -> Any:
        _adopted.value = None
        if _classic_binding() is None:  # PySpark's own, as cheap as can be
            return object.__new__(klass)
        try:
            arguments = signature.bind(None, *args, **kwargs)
        except TypeError:  # PySpark's __init__ raises its own error for these
            return object.__new__(klass)
        running = adopter(klass, arguments)
        if running is None:
            return object.__new__(klass)
        _adopted.value = running
        return running

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if getattr(_adopted, "value", None) is self:  # running already: not made again
            _adopted.value = None
            return
        original_init(self, *args, **kwargs)

    setattr(__new__, _MARK, True)
    setattr(__init__, _MARK, True)
    cls.__new__ = staticmethod(__new__)  # type: ignore[assignment]
    cls.__init__ = __init__  # type: ignore[misc]


def _classic_binding() -> tuple[Any, str] | None:
    binding = builder_binding.bound()
    if binding is None or binding[2]:
        return None
    return binding[0], binding[1]


def _running_context(klass: Any, arguments: inspect.BoundArguments) -> Any:
    from pyspark.core.context import SparkContext

    binding = _classic_binding()
    running = SparkContext._active_spark_context  # private
    if binding is None or running is None or not isinstance(running, klass):
        return None
    session, name = binding
    if running is not session._sc:
        return None
    given = arguments.arguments
    _settle(
        session,
        name,
        "SparkContext()",
        _context_options(given.get("conf"), given.get("master"), given.get("appName")),
        [
            key
            for key in _CONTEXT_ARGUMENTS
            if key in given and given[key] is not arguments.signature.parameters[key].default
        ],
    )
    return running


def _bound_session(klass: Any, arguments: inspect.BoundArguments) -> Any:
    from pyspark.sql.session import SparkSession

    binding = _classic_binding()
    if binding is None:
        return None
    session, name = binding
    given = arguments.arguments
    sc = given.get("sparkContext")
    default = SparkSession._instantiatedSession  # private
    if (
        not isinstance(session, klass)
        or given.get("jsparkSession") is not None
        or sc is None
        or sc is not session._sc
        or default is None  # the context's first session: PySpark makes it
        or default._sc is not sc
    ):
        return None
    _settle(session, name, "SparkSession(sc)", dict(given.get("options") or {}), [])
    return session


def _wrap_context_get_or_create(original: Any) -> Any:
    @functools.wraps(original)
    def getOrCreate(cls: Any, conf: Any = None) -> Any:
        binding = _classic_binding()
        running = cls._active_spark_context  # private
        if binding is None or running is None or running is not binding[0]._sc:
            return original(cls, conf)
        session, name = binding
        if conf is not None:
            _settle(session, name, "SparkContext.getOrCreate()", _context_options(conf), [])
        return running

    setattr(getOrCreate, _MARK, True)
    return getOrCreate


def _wrap_sql_context_get_or_create(original: Any) -> Any:
    # PySpark's getOrCreate checks its arguments, warns that it is deprecated and calls
    # this; it returns the process's first SQLContext, whatever session it is of.
    @functools.wraps(original)
    def _get_or_create(cls: Any, sc: Any, **static_conf: Any) -> Any:
        binding = _classic_binding()
        if binding is None or sc is not binding[0]._sc:
            return original(cls, sc, **static_conf)
        session = binding[0]
        first = cls._instantiatedContext  # private
        if isinstance(first, cls) and first.sparkSession is session:
            return first
        known = _sql_contexts.get(session)
        sql_context = known() if known is not None else None
        if type(sql_context) is not cls:
            sql_context = cls(sc, session, session._jsparkSession.sqlContext())
            _sql_contexts[session] = weakref.ref(sql_context)
        return sql_context

    setattr(_get_or_create, _MARK, True)
    return _get_or_create


def _context_options(conf: Any, master: Any = None, app_name: Any = None) -> dict[str, str]:
    """The settings a context call asks for: ``conf``'s, less what ``SparkConf()`` holds
    untold, then ``master`` and ``appName``, which win over ``conf`` (as in PySpark)."""
    from pyspark import SparkConf

    options: dict[str, str] = {}
    if conf is not None:
        untold = dict(SparkConf().getAll())
        # Sorted: a JVM SparkConf lists its entries in no fixed order.
        options.update({k: v for k, v in sorted(conf.getAll()) if untold.get(k) != v})
    if master:
        options["spark.master"] = str(master)
    if app_name:
        options["spark.app.name"] = str(app_name)
    return options


def _settle(
    session: Any, name: str, call: str, options: dict[str, Any], ignored: list[str]
) -> None:
    try:
        builder_binding.apply_options(session, name, options, call=call, ignored=ignored)
    except Exception:  # the constructor's result matters more than its settings
        log.warning("could not apply the settings of %s to session %r", call, name, exc_info=True)
