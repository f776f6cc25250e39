"""How a Spark Connect call's error reads: a cancel, a server that cannot be reached,
a session the server no longer knows, a server whose SparkContext stopped; and what
then keeps the session from working (``problem_after``), in the words its one line
uses (``ConnectBackend.problem``). From the errors' text: the client gives no
structured form for these.
"""

from __future__ import annotations

from .connect_endpoint import redact
from .spark_error_reading import driver_stopped, error_chain

#: What keeps a session from working, as its one line says it ("its Spark Connect server
#: sc://... cannot be reached (...): ...").
UNREACHABLE = "cannot be reached"
FORGOTTEN = "no longer knows this session (it restarted?)"
#: Its SparkContext stopped (a task ran out of memory?): the JVM exits after it.
STOPPED = "stopped (its SparkContext was shut down)"
BROKEN = "answers again, but this session's connection to it broke"


def is_cancellation(error: BaseException | None) -> bool:
    """True for the errors Spark reports for an interrupted operation (not for one
    whose server's SparkContext stopped: nobody cancelled it)."""
    text = str(error or "")
    cancelled = "OPERATION_CANCELED" in text or "SPARK_JOB_CANCELLED" in text
    return cancelled and not driver_stopped(error)


def out_of_memory_reason(error: BaseException | None) -> str:
    """``ran out of memory (java.lang.OutOfMemoryError: ...)`` when Spark's reason for
    the failed call names a task's OutOfMemoryError; else ""."""
    mark = "java.lang.OutOfMemoryError"
    for current in error_chain(error) if error is not None else ():
        text = str(current)
        if mark in text:
            found = text[text.index(mark) :].splitlines()[0]
            return f"ran out of memory ({found[:120].strip()})"
    return ""


def is_lost_session(error: BaseException | None) -> bool:
    """True when the server no longer knows the session (it restarted, or released it)."""
    text = str(error or "")
    return "INVALID_HANDLE" in text or "SESSION_CHANGED" in text or "SESSION_CLOSED" in text


def is_connection_error(error: BaseException | None) -> bool:
    """True for errors that mean the server could not be reached."""
    text = str(error or "")
    return any(
        mark in text
        for mark in (
            "StatusCode.UNAVAILABLE",
            "Connection refused",
            "failed to connect",
            "Socket closed",
        )
    )


def problem_after(error: BaseException | None, previous: str) -> str:
    """What keeps a session from working after a call that ended with ``error``: none
    after a success, the reason after a lost server or session, else (a failed query)
    whatever was known before."""
    if error is None:
        return ""
    if is_connection_error(error):
        return f"{UNREACHABLE} ({error_line(error)})"
    if is_lost_session(error):
        return FORGOTTEN
    if driver_stopped(error):
        return STOPPED
    return previous


def error_line(error: BaseException) -> str:
    """The first meaningful line of a client error (no gRPC debug strings)."""
    for line in str(error).splitlines():
        line = line.strip()
        if line and not line.startswith("<_") and "debug_error_string" not in line:
            return redact(line)[:300] if line.startswith("sc://") else line[:300]
    return type(error).__name__
