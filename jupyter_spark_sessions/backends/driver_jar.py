"""The project's own JVM classes (java/jss/, shipped built as ``jars/jss-driver.jar``),
made on the running driver: each does in one py4j call what would take many from
Python (``cell_scope``: a bound cell's thread state; ``job_feed.ContextJobFeed``: one
poll of the job board).

The jar is loaded into a class loader of its own whose parent is Spark's, so it works
on any running driver (one this project started or the user's) and adds nothing to
Spark's class path. One loader per JVM, kept across contexts: py4j remembers a class's
methods by its name, so a second ``jss.CellScope`` class in the same JVM (after
``spark.stop()`` and a new context) would be called through the first one's methods
("object is not an instance of declaring class"). ``tests/test_private_apis.py`` makes
every class on the installed Spark (they use Spark's private members) and checks the jar
was built from java/.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .driver import scala_context

if TYPE_CHECKING:
    from pyspark import SparkContext

#: Built by ``make jar`` from java/; its manifest names the hash of the sources.
JAR = Path(__file__).resolve().parent.parent / "jars" / "jss-driver.jar"

_lock = threading.Lock()
#: Per class name: (the context, its instance); one context at a time in a process.
_made: dict[str, tuple[SparkContext, Any]] = {}
#: (the py4j gateway of a JVM, the jar's class loader in it).
_loader: tuple[Any, Any] | None = None


def instance(sc: SparkContext, class_name: str) -> Any:
    """The instance of ``class_name`` (made with the Scala SparkContext) for ``sc``:
    made on first use (a few round trips, once per context), then reused."""
    made = _made.get(class_name)
    if made is not None and made[0] is sc:
        return made[1]
    with _lock:
        made = _made.get(class_name)
        if made is None or made[0] is not sc:
            made = _made[class_name] = (sc, _make(sc, class_name))
        return made[1]


def _make(sc: SparkContext, class_name: str) -> Any:
    global _loader
    gateway, jvm = sc._gateway, sc._jvm  # private
    assert gateway is not None and jvm is not None
    context = scala_context(sc)
    if _loader is None or _loader[0] is not gateway:  # a new JVM: a new loader
        urls = gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = jvm.java.io.File(str(JAR)).toURI().toURL()
        _loader = (gateway, jvm.java.net.URLClassLoader(urls, context.getClass().getClassLoader()))
    arguments = gateway.new_array(jvm.java.lang.Object, 1)
    arguments[0] = context
    return _loader[1].loadClass(class_name).getConstructors()[0].newInstance(arguments)


def with_driver_listener(conf: Mapping[str, str], class_name: str) -> dict[str, str]:
    """``conf`` for a driver this project launches, with ``class_name`` among its
    ``spark.extraListeners`` (the user's own listeners kept); the JVM needs the jar on
    its class path too (``class_path_env``). Spark makes listeners on the driver only:
    nothing of the jar runs on executors, whose class path (a cluster's) may lack it."""
    listeners = [p.strip() for p in conf.get("spark.extraListeners", "").split(",") if p.strip()]
    if class_name not in listeners:
        listeners.append(class_name)
    return {**conf, "spark.extraListeners": ",".join(listeners)}


#: Spark's launcher puts this variable's entries on a JVM's class path after Spark's
#: own jars (``spark.driver.extraClassPath`` goes before them).
DIST_CLASS_PATH = "SPARK_DIST_CLASSPATH"


def class_path_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment that puts the jar on the class path of a JVM spark-submit
    launches (read at its launch only: a listener or the UI's filter of this jar is
    made by Spark's class loader): after Spark's jars, so that it shadows nothing of
    Spark's and the JVM's class path starts as a plain Spark driver's (what a JDK
    class-data archive of Spark's classes needs to apply). The user's entries kept."""
    entries = [p for p in environ.get(DIST_CLASS_PATH, "").split(os.pathsep) if p]
    if str(JAR) not in entries:
        entries.append(str(JAR))
    return {DIST_CLASS_PATH: os.pathsep.join(entries)}
