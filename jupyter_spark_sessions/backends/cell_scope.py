"""A bound cell's changes to its thread in the driver, in one py4j call each way.

A cell bound to a classic session tags its thread's jobs, interrupts their tasks on
cancel, lends the session's artifact state to its RDD jobs and makes the session
Spark's active one; at its end all of it is undone. Made from Python, that was about
fifteen py4j round trips per cell (every JVM class looked up and every call is one).
``jss.CellScope`` (java/jss/CellScope.java, shipped built in ``jars/``) makes them in
the JVM: one round trip at the cell's start, one at its end.

The jar is loaded into a class loader of its own whose parent is Spark's, so it works
on any running driver (one this project started or the user's) without touching
Spark's class path. It reaches Spark by reflection, private members included
(``JobArtifactSet``'s thread-local): ``tests/test_private_apis.py`` makes a scope on the
installed Spark, so an upgrade that breaks it fails there.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import SparkContext

#: Built by ``make jar`` from java/; its manifest names the hash of the sources.
JAR = Path(__file__).resolve().parent.parent / "jars" / "jss-cell-scope.jar"
CLASS_NAME = "jss.CellScope"

_lock = threading.Lock()
#: The scope of the running context (one context at a time in a process).
_current: tuple[SparkContext, Any] | None = None


def scope_of(sc: SparkContext) -> Any:
    """The JVM ``CellScope`` of ``sc`` (made on first use: a few round trips, once)."""
    global _current
    current = _current
    if current is not None and current[0] is sc:
        return current[1]
    with _lock:
        if _current is None or _current[0] is not sc:
            _current = (sc, _load(sc))
        return _current[1]


def _load(sc: SparkContext) -> Any:
    gateway, jvm = sc._gateway, sc._jvm  # private
    assert gateway is not None and jvm is not None
    context = sc._jsc.sc()  # private: the Scala SparkContext
    urls = gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(str(JAR)).toURI().toURL()
    loader = jvm.java.net.URLClassLoader(urls, context.getClass().getClassLoader())
    arguments = gateway.new_array(jvm.java.lang.Object, 1)
    arguments[0] = context
    return loader.loadClass(CLASS_NAME).getConstructors()[0].newInstance(arguments)


def enter(sc: SparkContext, tags: tuple[str, ...], jsession: Any, state: Any) -> None:
    """Start a cell on this thread: ``tags`` on its jobs, tasks interrupted on cancel,
    RDD jobs in artifact ``state`` (None: left alone), ``jsession`` Spark's active
    session. One round trip."""
    scope_of(sc).enter(",".join(tags), jsession, state)


def exit(sc: SparkContext) -> None:
    """Undo this thread's last ``enter``. One round trip."""
    scope_of(sc).exit()
