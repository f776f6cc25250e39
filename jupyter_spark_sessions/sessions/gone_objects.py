"""What a cell says when it uses an object made before its session or driver went away:
a DataFrame of a session ``stop`` ended (Spark Connect: the server forgot it), of a
session ``reconnect`` made again, or of the driver ``restart`` replaced; a UDF or
column made on that driver. PySpark fails on those with a gRPC or py4j traceback of a
hundred lines (``ConnectionRefusedError``, ``Channel closed``, ``NO_ACTIVE_SESSION``);
the cell gets one line saying whose the object was and what to run again.

The registry marks each session object it gives up (``mark_gone``); a failed cell's
traceback is searched for the object it used (a frame's ``self`` or locals: a session,
or an object holding one, as PySpark's DataFrames do: ``backends/spark_objects.session_of``).
PySpark's and py4j's own names are read in ``backends/`` only.
"""

from __future__ import annotations

import threading
import weakref
from types import TracebackType

from ..backends.spark_error_reading import error_chain
from ..backends.spark_objects import is_lost_connection, session_of

#: Text of the errors PySpark raises on an object whose session or driver is gone.
_GONE_MARKS = (
    "Channel closed",
    "NO_ACTIVE_SESSION",
    "SESSION_CLOSED",
    "SESSION_NOT_FOUND",
    "INVALID_HANDLE",
    "SparkContext was shut down",
    "stopped SparkContext",
)

_lock = threading.Lock()
#: id of a session object given up -> (a weak reference to it, what happened to it).
_gone: dict[int, tuple[weakref.ref[object], str]] = {}


def mark_gone(session: object, story: str) -> None:
    """``session`` is no longer usable through this project; ``story`` completes
    "This DataFrame belongs to ...", e.g. "session 'c', which `%spark_session stop`
    ended"."""
    key = id(session)

    def forget(_: object, key: int = key) -> None:
        with _lock:
            _gone.pop(key, None)

    try:
        ref = weakref.ref(session, forget)
    except TypeError:  # not weakly referenceable: nothing to recognise it by later
        return
    with _lock:
        _gone[key] = (ref, story)


def _story_of(session: object) -> str | None:
    with _lock:
        entry = _gone.get(id(session))
    if entry is None or entry[0]() is not session:
        return None
    return entry[1]


def looks_gone(error: BaseException) -> bool:
    """True when ``error`` (or its cause) is how PySpark fails on a gone driver or
    session, not a mistake in the user's code."""
    return any(
        is_lost_connection(current)
        # a stopped classic context's _jsc
        or (isinstance(current, AttributeError) and "'NoneType' object" in str(current))
        or any(mark in str(current) for mark in _GONE_MARKS)
        for current in error_chain(error)
    )


def _used_sessions(tb: TracebackType | None) -> list[tuple[object, object]]:
    """(object, its session) for each session the traceback's calls used: a frame's
    local that is a session, or a PySpark object holding one (a DataFrame: see
    ``backends/spark_objects.session_of``). Never a cell's or module's namespace, which holds
    every variable."""
    found: list[tuple[object, object]] = []
    while tb is not None:
        frame = tb.tb_frame
        tb = tb.tb_next
        if frame.f_locals is frame.f_globals:
            continue
        for value in list(frame.f_locals.values()):
            session = session_of(value)
            if session is not None:
                found.append((value, session))
    return found


def sessions_used(tb: TracebackType | None) -> list[object]:
    """The sessions the failed calls used, as far as their frames show."""
    return [session for _, session in _used_sessions(tb)]


def gone_object_line(tb: TracebackType | None) -> str:
    """One line for the first object of a gone session the traceback's frames used;
    "" when they used none."""
    for value, session in _used_sessions(tb):
        story = _story_of(session)
        if story is None:
            continue
        if value is session:
            return f"This SparkSession is {story}: use a session that runs."
        what = type(value).__name__
        return f"This {what} belongs to {story}: run the cells that made it again."
    return ""


#: For objects that hold no session (a UDF, a column) of a driver ``restart`` replaced.
OLD_DRIVER = (
    "This object was made on a Spark driver that is gone (`%spark_session restart` "
    "started a new one): run the cells that made it again (DataFrames, UDFs, columns "
    "and the variables holding them)."
)

#: What ``restart`` and ``reconnect`` say about the objects made before them.
MAKE_AGAIN = (
    "DataFrames, UDFs and columns made before belong to {what}: run the cells that made them again."
)
