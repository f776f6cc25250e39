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
#: A job as its backend names it: a Spark job id, or a Connect operation id.
JobRef = int | str


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
    #: The first line of why it failed ("" unless it failed and was not cancelled).
    failure: str = ""
    #: The execution count of the managed cell the running thread belongs to (None:
    #: no managed cell, e.g. a plain thread).
    thread_cell: int | None = None
    #: It ended because the server went away or forgot the session (shown "lost").
    lost: bool = False
    #: Where the user's code started it (``collect at In [4] line 2``; "" unknown).
    call_site: str = ""


#: Where a backend that reports its own operations (Connect) sends them.
OperationSink = Callable[[OperationReport], None]


class JobFeed(Protocol):
    """Reads the jobs of one SparkContext (shared by every classic session on it)."""

    def poll(self, also: Iterable[int]) -> list[dict[str, Any]]:
        """Spark's ``JobData`` (as dicts) of the running jobs, of the jobs that ended
        since the last poll, and of the jobs ``also`` asks for again; new dicts each
        time (the poller keeps the last ones to see what changed)."""
        ...

    def running_stages(self, stage_ids: Iterable[int]) -> list[dict[str, Any]]:
        """Task counts of those of ``stage_ids`` that run now (``SparkStageInfo``)."""
        ...

    def stage_figures(self) -> dict[int, dict[str, Any]]:
        """Stage id -> the figures of its latest attempt (``jss.StageFigures``), read
        with the jobs: the stages that changed at the last poll; the dicts of stages
        that did not change are the same objects as before."""
        ...

    def executor_slots(self) -> dict[str, int]:
        """Executor id -> its task slots, as of the last poll."""
        ...


class StageSource(Protocol):
    """Reads the stages of a server's operations (a Spark Connect server's UI), for
    sessions whose backend reports its operations itself."""

    def refresh(self, running: Iterable[int], ended: Iterable[int] = ()) -> None:
        """Read the figures of these stages (of running and of ended operations) that
        were not read to their end yet."""
        ...

    def stage_figures(self) -> dict[int, dict[str, Any]]:
        """Stage id -> its latest attempt's figures, in ``JobFeed.stage_figures``' shape
        (a stage's dict is a new object only when it changed)."""
        ...

    def executor_slots(self) -> dict[str, int]:
        """Executor id -> its task slots, as of the last read."""
        ...


class SessionBackend(Protocol):
    """One Spark session, classic or Spark Connect."""

    #: Which kind of session this is (shown to users, never branched on).
    kind: BackendKind
    #: True when the session lives on the kernel's SparkContext (``restart`` makes it
    #: again after that context was stopped or lost); False for a server's session
    #: (``reconnect`` does).
    on_kernel_context: bool
    #: The SparkSession object the user's code holds.
    session: Any
    #: Spark's id of the session (classic: its UUID; Connect: the server's session id).
    session_id: str
    #: The tag Spark itself puts on every SQL job of this session, whatever thread
    #: runs it (classic: ``spark-session-<uuid>``; "" when Spark lists no jobs).
    spark_session_tag: str

    def where(self) -> str:
        """The master URL, or the Connect server's address (never a token)."""
        ...

    def scheduling(self) -> str:
        """How the session's jobs share the task slots with other sessions' (``info``)."""
        ...

    def share(self) -> str:
        """Its share of the slots in a few words (the views'; see ``SessionView``)."""
        ...

    def slots(self) -> int:
        """The task slots of the context it runs on; 0 when unknown."""
        ...

    def location(self) -> str:
        """Where the session runs, as a sentence names it ("local[2]", "Spark Connect
        sc://host:port")."""
        ...

    def worker_python(self) -> tuple[bool, str]:
        """(whether the session's Python workers run on this machine, the interpreter
        they run unless the session names one: "" when this kernel cannot know). Its
        own packages are used by path here, shipped as an archive elsewhere."""
        ...

    def require_usable(self, name: str) -> None:
        """Raise a one-line ``SparkSessionsError`` (saying how to recover) when the
        session ``name`` can never run anything again (stopped behind our back)."""
        ...

    def ui_url(self) -> str:
        """The address of the Spark UI of the session's driver ("" when it is off or
        not this kernel's to show: a Connect server's)."""
        ...

    def ui_note(self) -> str:
        """Why the session has no Spark UI link when ``ui_url`` is "" (the UI is off, or
        is a remote server's)."""
        ...

    def ui_protected(self) -> bool:
        """Whether that UI answers only its owner's Jupyter server (a context or a
        local Connect server this project started on a local master: its UI wants a
        secret); False for a UI anyone who reaches its port can read."""
        ...

    def operations_page(self) -> str:
        """The page of that UI (a path under it) that lists the session's operations
        with their Spark jobs: Spark Connect's, whose operations have no job ids of
        their own ("" for classic sessions: their jobs have pages of their own)."""
        ...

    def problem(self) -> str:
        """What keeps the session from working now, as views show it ("" when
        nothing does): a stopped context, an unreachable server."""
        ...

    def explain(self, error: BaseException, bound: bool) -> str:
        """One line (with the way out) when ``error``, raised in a cell, is how this
        session fails because its driver or server went away; "" otherwise. ``bound``:
        the cell ran bound to this session, or its failed calls used it (other
        sessions claim only errors that their own loss explains)."""
        ...

    def running_jobs(self) -> int:
        """How many of this session's jobs (or operations) have not ended."""
        ...

    def job_feed(self) -> JobFeed | None:
        """The context's job reader the board polls (None: the backend reports its
        operations itself, through ``watch``)."""
        ...

    def stage_source(self) -> StageSource | None:
        """The reader of its operations' stages (Connect, when the server's UI is known
        to this kernel: a local or shared server's); None when the job feed has them or
        nothing can read them."""
        ...

    def watch(self, sink: OperationSink) -> None:
        """Send the progress of this session's operations to ``sink`` (a no-op for
        backends whose jobs the board polls)."""
        ...

    def cancel_jobs(self, refs: tuple[JobRef, ...]) -> None:
        """Ask Spark to cancel these jobs of the session (job ids; Connect: operation
        ids). Each cancel returns at once; the outcome is observed, not reported here."""
        ...

    def cancel_session(self) -> None:
        """Ask Spark to cancel every job of the session that Spark can name as its own
        (classic: its SQL jobs from any thread; Connect: all its operations)."""
        ...

    def cancel_tag(self, tag: str) -> None:
        """Ask Spark to cancel the jobs carrying this thread tag, in any session that
        the tag reached (classic: the whole context; Connect: this session)."""
        ...

    def tag_thread(self, tags: tuple[str, ...]) -> Any:
        """Bind the current thread to this session: tag the jobs it starts, make the
        session Spark's active one (``SparkSession.getActiveSession()``) and pick
        PySpark's matching API flavour. Returns what ``untag_thread`` needs to restore
        the thread's previous state."""
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

    def stopping(self) -> None:
        """The session is being stopped: if it is the current thread's active session,
        it no longer is (libraries asking Spark must not get a session about to go)."""
        ...

    def forget(self) -> None:
        """Stop watching an adopted session without touching it."""
        ...
