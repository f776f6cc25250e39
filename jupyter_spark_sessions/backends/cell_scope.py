"""A bound cell's changes to its thread in the driver, in one py4j call each way.

A cell bound to a classic session tags its thread's jobs, interrupts their tasks on
cancel, lends the session's artifact state to its RDD jobs and makes the session
Spark's active one; at its end all of it is undone. Made from Python, that was about
fifteen py4j round trips per cell (every call and every JVM class looked up is one).
``jss.CellScope`` (java/jss/CellScope.java, see ``driver_jar``) makes them in the JVM:
one round trip at the cell's start, one at its end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import driver_jar

if TYPE_CHECKING:
    from pyspark import SparkContext

CLASS_NAME = "jss.CellScope"


def scope_of(sc: SparkContext) -> Any:
    """The JVM ``CellScope`` of ``sc``."""
    return driver_jar.instance(sc, CLASS_NAME)


def enter(
    sc: SparkContext, tags: tuple[str, ...], jsession: Any, state: Any, pool: str | None = None
) -> None:
    """Start a cell on this thread: ``tags`` on its jobs, tasks interrupted on cancel,
    RDD jobs in artifact ``state`` and scheduler ``pool`` (None: left alone), ``jsession``
    Spark's active session. One round trip."""
    scope_of(sc).enter(",".join(tags), jsession, state, pool)


def exit(sc: SparkContext) -> None:
    """Undo this thread's last ``enter``. One round trip."""
    scope_of(sc).exit()
