"""The one line for an object of a session or driver that is gone: which errors count,
and how the failed call's frames name the object (pure: no Spark)."""

from __future__ import annotations

import gc
import sys

from jupyter_spark_sessions.sessions import gone_objects
from jupyter_spark_sessions.sessions.gone_objects import gone_object_line, looks_gone, mark_gone


class SparkSession:
    """Stands for a SparkSession (named like one: that is how frames are read)."""


def _fail_with(session: SparkSession) -> None:
    raise ConnectionRefusedError(111, "Connection refused")


def _traceback_of_call(session: SparkSession) -> object:
    try:
        _fail_with(session)
    except ConnectionRefusedError:
        return sys.exc_info()[2]
    raise AssertionError("did not fail")


def test_gone_driver_and_session_errors_count_and_user_errors_do_not() -> None:
    from py4j.protocol import Py4JNetworkError

    assert looks_gone(ConnectionRefusedError(111, "Connection refused"))
    assert looks_gone(Py4JNetworkError("Answer from Java side is empty"))
    assert looks_gone(AttributeError("'NoneType' object has no attribute 'setCallSite'"))
    assert looks_gone(RuntimeError("<_MultiThreadedRendezvous ... Channel closed!)>"))
    assert looks_gone(RuntimeError("[NO_ACTIVE_SESSION] No active Spark session found."))
    wrapped = ValueError("wrapped")
    wrapped.__cause__ = EOFError()
    assert looks_gone(wrapped)
    assert not looks_gone(ValueError("invalid literal for int()"))
    assert not looks_gone(AttributeError("'DataFrame' object has no attribute 'colunms'"))


def test_a_marked_session_used_by_the_failed_call_is_named() -> None:
    session = SparkSession()
    mark_gone(session, "session 'c', which `%spark_session stop` ended")
    line = gone_object_line(_traceback_of_call(session))  # type: ignore[arg-type]
    assert line == (
        "This SparkSession is session 'c', which `%spark_session stop` ended: use a session "
        "that runs."
    )
    # Another session, never given up: nothing to say.
    assert gone_object_line(_traceback_of_call(SparkSession())) == ""  # type: ignore[arg-type]


def test_a_session_marked_then_collected_is_forgotten() -> None:
    session = SparkSession()
    mark_gone(session, "session 'x', which `%spark_session stop` ended")
    before = len(gone_objects._gone)
    del session
    gc.collect()
    assert len(gone_objects._gone) == before - 1
