"""The exceptions of jupyter_spark_sessions.

Every exception the package defines is here. Each is a user mistake or an environment
problem whose message is one complete line: the magics turn them into IPython
``UsageError`` (no traceback), the channels into an error reply. Anything else that
escapes is a bug and keeps its traceback.

    SparkSessionsError
    +-- UnknownSessionError      no session of that name (or it was stopped)
    +-- UnknownGroupError        no job group of that id on the board
    +-- SessionNameError         a name that is badly formed or already used
    +-- ConfError                a --conf that is not KEY=VALUE or that Spark refuses
    +-- NotASparkSessionError    adopting something that is not a SparkSession
    +-- ContextStoppedError      the SparkContext was stopped behind the project's back
    +-- MasterMismatchError      --master differs from the running SparkContext's
    +-- JavaNotFoundError        no usable Java to start Spark
    +-- ArtifactError            a file that cannot be added to a session
    +-- ConnectError             a Spark Connect server that cannot be reached or used
    +-- SessionRootError         a session_root that other users could change
    +-- UnsupportedKernelError   an ipykernel without an internal the package needs
    +-- PackagesError            a session's packages that cannot be installed
    +-- JobsCancelled            how a cell whose Spark jobs were cancelled ends
    +-- SessionLostError         how a cell ends whose session's driver or server is gone
    +-- ProtocolError            a request that does not follow the protocol (a code)
    +-- GatewayRelayError        a Kernel Gateway that could not take a relayed request
    +-- SqlInputError            a SQL cell's text that cannot run (a variable, a brace)
    +-- SqlStatementError        how a SQL cell ends whose statement Spark refused
    +-- UnknownQueryError        no streaming query of that name or id (or it ended)
"""

from __future__ import annotations


class SparkSessionsError(Exception):
    """A mistake or problem explained in one line; the registry is left unchanged."""


class UnknownSessionError(SparkSessionsError):
    """No session is registered under the given name."""


class UnknownGroupError(SparkSessionsError):
    """No job group with the given id is on the job board."""


class SessionNameError(SparkSessionsError):
    """A session name that is malformed or already in use."""


class ConfError(SparkSessionsError):
    """A configuration entry that is malformed or that Spark refused."""


class NotASparkSessionError(SparkSessionsError):
    """The object to adopt is not a SparkSession this project can manage."""


class ContextStoppedError(SparkSessionsError):
    """The shared SparkContext was stopped outside this project."""


class MasterMismatchError(SparkSessionsError):
    """A master URL was asked for but a SparkContext already runs on another one."""


class JavaNotFoundError(SparkSessionsError):
    """No Java runtime that this PySpark supports was found."""


class ArtifactError(SparkSessionsError):
    """A file, archive or Python file cannot be added to a session (missing, unreadable,
    unsupported, unsafe, over a limit, or clashing with one already added)."""


class ConnectError(SparkSessionsError):
    """A Spark Connect server that is unreachable, refuses the session, or went away."""


class SessionRootError(SparkSessionsError):
    """The folder for session files is unsafe (another user owns it or can write in it)
    or cannot be made."""


class UnsupportedKernelError(SparkSessionsError):
    """This ipykernel lacks an internal the package cannot work without."""


class PackagesError(SparkSessionsError):
    """A session's Python packages cannot be installed (a missing wheel, an unknown
    package, a conflict, no network): nothing was created or changed."""


class JobsCancelled(SparkSessionsError):
    """The name a cell's one-line error has when a user cancelled its Spark jobs."""


class SessionLostError(SparkSessionsError):
    """The name a cell's one-line error has when its session's Spark driver (or Spark
    Connect server) went away."""


class ProtocolError(SparkSessionsError):
    """A request that does not follow the protocol (``protocol.py``); ``code`` is
    machine-readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class GatewayRelayError(SparkSessionsError):
    """A Kernel Gateway could not take a relayed request: ``status`` and ``code`` are the
    relay's HTTP status and protocol error code, the message one line saying what is
    true."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class SqlInputError(SparkSessionsError):
    """A SQL cell's text that cannot be sent to Spark: a ``{name}`` that is no variable of
    the notebook or no Python identifier, an unbalanced brace, a variable where Spark
    reads text rather than a parameter. Nothing ran."""


class SqlStatementError(SparkSessionsError):
    """How a ``%%spark_sql`` cell ends when Spark refused or failed one of its
    statements: Spark's error class, message and the position marker in at most four
    lines (``sql/short_errors``); its ``__cause__`` is Spark's own error (``%tb``)."""


class UnknownQueryError(SparkSessionsError):
    """No streaming query of the given name or id is on the board, or it already ended."""
