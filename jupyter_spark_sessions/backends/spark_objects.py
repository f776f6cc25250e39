"""What a user's PySpark object tells about the session or driver it belongs to, read in
one place: what ``sessions/gone_objects`` needs to name the session a failed call used,
and to tell a driver that went away from a mistake in the user's code.

PySpark's DataFrames (classic and Spark Connect) keep their session in the private
attribute ``_session`` (the public ``sparkSession`` property is a call: on a Connect
DataFrame of a stopped session it may fail, and a property can run anything); py4j says
that the JVM behind a handle is gone with ``Py4JNetworkError``. One wrapper each,
checked against the installed PySpark by
``tests/test_private_apis.py::test_session_of_reads_the_session_pysparks_dataframes_hold``.
Nothing here imports PySpark at import time.
"""

from __future__ import annotations

#: PySpark's private attribute holding an object's session (its DataFrames').
SESSION_ATTRIBUTE = "_session"


def session_of(value: object) -> object | None:
    """The session ``value`` is or belongs to: ``value`` itself for a SparkSession
    (classic or Connect, told by its class's name), the session a PySpark object
    (a DataFrame) holds; None for anything else, PySpark objects that hold no session
    (a column, a UDF) included. Reads the object's ``__dict__`` only: never a property
    or ``__getattr__`` (a DataFrame's resolves column names)."""
    if type(value).__name__ == "SparkSession":
        return value
    if type(value).__module__.startswith("pyspark."):
        held: object | None = getattr(value, "__dict__", {}).get(SESSION_ATTRIBUTE)
        return held
    return None


def is_lost_connection(error: BaseException) -> bool:
    """True when ``error`` itself (not its cause) is how the connection to a driver or
    server breaks: a socket's ``ConnectionError`` or ``EOFError``, or py4j's
    ``Py4JNetworkError`` (the JVM behind a py4j handle died or cannot be reached). A
    Java exception from a live JVM (py4j's other errors) is not one."""
    from py4j.protocol import Py4JNetworkError

    return isinstance(error, (ConnectionError, EOFError, Py4JNetworkError))
