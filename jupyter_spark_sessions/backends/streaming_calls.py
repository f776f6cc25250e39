"""PySpark's streaming calls, as this project meets them: every query a session starts,
reported as it starts, and the calls a cell blocks in while it waits on a query.

**Starts.** ``DataStreamWriter.start`` and ``toTable`` (classic and Spark Connect) are
replaced, class-wide, by wrappers that call the app's hook with the new query and the
session it runs in.

Why a wrapper, not Spark's ``StreamingQueryListener``: a listener hears of a query on
Spark's listener bus, later and on another thread, without the cell that started it;
classic PySpark delivers its events through py4j's callback server (a second socket the
kernel would have to open). The wrapper runs in the thread that starts the query, so it
knows the cell (``ThreadJobTagger``), and it can start the query without the cell's job
tags: Spark's query thread inherits the starting thread's local properties, so every
micro-batch job would carry the cell's tags for the query's whole life, and a cancel of
that cell's group (or of a later cell of the same number, after a restart) would hit the
query's current batch. The batches keep Spark's session tag and their job group (the
query's run id), by which the board files them under the query.

Private PySpark API: none (the classes and methods are public); the session is read from
the writer (``_spark`` classic, ``_session`` Connect), checked by
``tests/test_private_apis.py::test_streaming_calls_reach_the_writers_session``.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

#: (module, class, the attribute holding the writer's SparkSession).
_WRITERS = (
    ("pyspark.sql.streaming.readwriter", "DataStreamWriter", "_spark"),
    ("pyspark.sql.connect.streaming.readwriter", "DataStreamWriter", "_session"),
)
_METHODS = ("start", "toTable")
_MARK = "__jss_stream_start__"

#: (session) -> a context in which the starting thread's cell tags are off.
Untagged = Callable[[Any], AbstractContextManager[None]]
#: (query, session) -> None, after the query started.
OnStart = Callable[[Any, Any], None]

_hooks: tuple[Untagged, OnStart] | None = None
_depth = threading.local()  # Connect's toTable and start share an inner call


def install(untagged: Untagged, on_start: OnStart) -> None:
    """Report every query started from now on to ``on_start`` (idempotent; the last
    hooks installed are the ones called)."""
    global _hooks
    _hooks = (untagged, on_start)
    for module_name, class_name, session_attr in _WRITERS:
        try:
            writer = getattr(importlib.import_module(module_name), class_name)
        except ImportError:  # Spark Connect's extras are not installed
            continue
        for name in _METHODS:
            method = getattr(writer, name)
            if not getattr(method, _MARK, False):
                setattr(writer, name, _reporting(method, session_attr))


def _reporting(method: Any, session_attr: str) -> Any:
    @functools.wraps(method)
    def start(self: Any, *args: Any, **kwargs: Any) -> Any:
        hooks, session = _hooks, getattr(self, session_attr, None)
        depth = getattr(_depth, "value", 0)
        if hooks is None or session is None or depth:
            return method(self, *args, **kwargs)
        untagged, on_start = hooks
        _depth.value = depth + 1
        try:
            with untagged(session):
                query = method(self, *args, **kwargs)
        finally:
            _depth.value = depth
        try:
            on_start(query, session)
        except Exception:  # the board misses it; the user's query runs on
            log.warning("could not show a streaming query on the board", exc_info=True)
        return query

    setattr(start, _MARK, True)
    return start


def batch_run_id(session: Any) -> str | None:
    """The job group of the calling thread on a classic session: inside a query's
    ``foreachBatch`` (py4j runs it on the thread of the query's batch), that query's run
    id. None elsewhere, and on Spark Connect (its ``foreachBatch`` runs on the server)."""
    try:
        group = session.sparkContext.getLocalProperty("spark.jobGroup.id")
    except Exception:  # Connect: no SparkContext in the client
        return None
    return str(group) if group else None


#: The blocking calls of a query or a query manager, in PySpark's streaming modules.
_WAITS = frozenset({"awaitTermination", "processAllAvailable", "awaitAnyTermination"})
_STREAMING_MODULES = ("pyspark.sql.streaming.", "pyspark.sql.connect.streaming.")


def waited_on(frame: FrameType | None) -> Any:
    """The query (or the query manager) whose blocking call is on the stack from
    ``frame`` outward; None when the stack is in no such call."""
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if frame.f_code.co_name in _WAITS and module.startswith(_STREAMING_MODULES):
            return frame.f_locals.get("self")
        frame = frame.f_back
    return None
