"""What the rest of the package asks of a Spark session, whatever runs it.

The registry, the job board and the job tagger talk to a session only through
``SessionBackend``; every Spark and py4j call lives in the implementations
(``classic.ClassicBackend``, ``connect.ConnectBackend``). A third backend (a fake for
unit tests, say) is one class with these methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

BackendKind = Literal["classic", "connect"]


@dataclass(frozen=True)
class OperationReport:
    """One progress report of a Spark Connect operation, as the board records it.

    ``stages`` are (stage id, tasks, completed tasks, done); ``thread_tags`` are the tags
    of the thread running the operation (they name the cell's group)."""

    operation_id: str
    thread_tags: frozenset[str]
    stages: tuple[tuple[int, int, int, bool], ...]
    inflight_tasks: int
    done: bool
    failed: bool = False
    #: Why Spark cancelled it ("" when it was not cancelled).
    cancel_reason: str = ""


#: Where a backend that reports its own operations (Connect) sends them.
OperationSink = Callable[[OperationReport], None]


class JobFeed(Protocol):
    """Reads the jobs of one SparkContext (shared by every classic session on it)."""

    def poll(self, also: Iterable[int]) -> list[dict[str, Any]]:
        """Spark's ``JobData`` (as dicts) of the running jobs, of the jobs that ended
        since the last poll, and of the jobs ``also`` asks for again."""
        ...

    def running_stages(self, stage_ids: Iterable[int]) -> list[dict[str, Any]]:
        """Task counts of those of ``stage_ids`` that run now (``SparkStageInfo``)."""
        ...


class SessionBackend(Protocol):
    """One Spark session, classic or Spark Connect."""

    #: Which kind of session this is (shown to users, never branched on).
    kind: BackendKind
    #: The SparkSession object the user's code holds.
    session: Any
    #: Spark's id of the session (classic: its UUID; Connect: the server's session id).
    session_id: str
    #: Tags on every job of the session in a ``JobFeed`` (Spark's own session tag and
    #: this project's); a job carrying one belongs to the session.
    session_tags: tuple[str, ...]

    def where(self) -> str:
        """The master URL, or the Connect server's address (never a token)."""
        ...

    def require_usable(self, name: str) -> None:
        """Raise a one-line ``SparkSessionsError`` (saying how to recover) when the
        session ``name`` can never run anything again (stopped behind our back)."""
        ...

    def problem(self) -> str:
        """What keeps the session from working now, as views show it ("" when
        nothing does): a stopped context, an unreachable server."""
        ...

    def running_jobs(self) -> int:
        """How many of this session's jobs (or operations) have not ended."""
        ...

    def job_feed(self) -> JobFeed | None:
        """The context's job reader the board polls (None: the backend reports its
        operations itself, through ``watch``)."""
        ...

    def watch(self, sink: OperationSink) -> None:
        """Send the progress of this session's operations to ``sink`` (a no-op for
        backends whose jobs the board polls)."""
        ...

    def cancel(self, tags: tuple[str, ...] | None) -> None:
        """Ask Spark to cancel the jobs carrying any of ``tags``, or (None) every job of
        the session. Returns at once; the outcome is observed, not reported here."""
        ...

    def tag_thread(self, tags: tuple[str, ...]) -> Any:
        """Tag the jobs the current thread starts in this session; returns what
        ``untag_thread`` needs to undo it (restoring the thread's previous state)."""
        ...

    def untag_thread(self, applied: Any) -> None:
        """Undo one ``tag_thread`` on the current thread."""
        ...

    def add_artifact(self, remote_path: str, staged: Path, fragment: str | None) -> None:
        """Register a staged file as the session's ``files/``, ``archives/`` or
        ``pyfiles/`` artifact ``remote_path`` (an archive unpacked into ``fragment``)."""
        ...

    def release(self, quick: bool = False) -> None:
        """Free what the session holds in Spark (a created session, once its jobs
        ended). ``quick``: at kernel shutdown, only what outlives the kernel."""
        ...

    def forget(self) -> None:
        """Stop watching an adopted session without touching it."""
        ...
