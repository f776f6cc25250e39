"""Spark backends: how sessions are made, tagged, cancelled and released.

``base.SessionBackend`` is what the rest of the package asks of a session;
``classic.ClassicBackend`` drives one SparkContext in the kernel's JVM through py4j,
``connect.ConnectBackend`` a Spark Connect session. Every Spark call lives here.
"""

from __future__ import annotations

from .base import SessionBackend


def active_session() -> object | None:
    """The thread's active SparkSession as PySpark sees it (classic or Connect), or None."""
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def check_adoptable(obj: object, what: str) -> None:
    """Raise a one-line error unless ``obj`` is a SparkSession of either kind that can
    still run (``what`` names it in the message). Changes nothing."""
    from . import classic, connect

    if connect.is_connect_session(obj):
        connect.check_adoptable(obj, what)
    else:
        classic.check_adoptable(obj, what)


def adopt(obj: object, name: str, what: str, recheck_seconds: float) -> tuple[SessionBackend, bool]:
    """A backend for an existing SparkSession of either kind (``check_adoptable``
    first), registered as ``name``, and whether its artifacts are isolated."""
    from . import classic, connect

    if connect.is_connect_session(obj):
        return connect.adopt(obj, name, what, recheck_seconds), True
    return classic.adopt(obj, name, what)
