"""Spark Connect sessions: opening and releasing them, tags and interrupts, artifacts,
and operation progress (the local server ``--remote local`` starts:
``local_connect_server``).

Everything that touches the Connect client goes through here; the client's retry
policy and progress hooks are not documented API, so ``tests/test_private_apis.py``
calls each wrapper against the installed PySpark.

Unlike classic mode, Connect isolates sessions upstream (SPARK-44290): each session has
its own artifacts on the server, and ``interruptTag`` cancels operations whatever client
thread started them. ``ConnectBackend`` is the ``SessionBackend`` the rest of the
package uses.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ..errors import ConfError, ConnectError, NotASparkSessionError
from . import api_flavour, builder_binding, call_site, scheduler_pools, server_stages
from .base import BackendKind, JobRef, OperationReport, OperationSink
from .connect_endpoint import Endpoint, reachable
from .connect_errors import (
    BROKEN,
    FORGOTTEN,
    STOPPED,
    UNREACHABLE,
    error_line,
    is_cancellation,
    is_connection_error,
    is_lost_session,
    out_of_memory_reason,
    problem_after,
)
from .connect_tls import check_token_transport
from .spark_error_reading import driver_stopped, failure_line
from .thread_cell import current_cell

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession


#: Set on a thread whose Connect operations are the extension's own reads (a catalog
#: for Tab): the board does not show them.
_unwatched = threading.local()


@contextmanager
def unwatched() -> Iterator[None]:
    """The Connect operations this thread runs inside are not reported to the board."""
    before = getattr(_unwatched, "on", False)
    _unwatched.on = True
    try:
        yield
    finally:
        _unwatched.on = before


def is_connect_session(obj: object) -> bool:
    """True for a Spark Connect SparkSession."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # pragma: no cover - pyspark[connect] is a dependency
        return False
    return isinstance(obj, ConnectSession)


def require_session(obj: Any, what: str) -> ConnectSession:
    """Return ``obj`` as a Connect SparkSession, or raise NotASparkSessionError."""
    if not is_connect_session(obj):
        kind = type(obj).__module__ + "." + type(obj).__qualname__
        raise NotASparkSessionError(f"{what} is a {kind}, not a Spark Connect SparkSession.")
    session: ConnectSession = obj
    return session


def open_session(endpoint: Endpoint, retry_seconds: float) -> ConnectSession:
    """A new Connect session on the server at ``endpoint``, checked to answer.

    The client's default retry policy waits up to 10 minutes for a server that does
    not answer; ``retry_seconds`` bounds it, so a dead server is an error, not a hang."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    why = reachable(endpoint)
    if why:
        raise ConnectError(f"No Spark Connect server answers at {endpoint.display}: {why}.")
    session = ConnectSession.builder.remote(endpoint.url).create()
    bound_retries(session, retry_seconds)
    try:
        _ = session.version  # one round trip: is it a Connect server, is the token right?
    except Exception as exc:
        release(session)
        raise ConnectError(
            f"The Spark Connect server at {endpoint.display} refused the session: {error_line(exc)}"
        ) from None
    return session


def bound_retries(session: ConnectSession, seconds: float) -> None:
    """Give up on an unreachable server after about ``seconds`` of retries."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    # Backoffs 50, 200, 800 ms, ... capped at a quarter of the budget.
    policy = DefaultPolicy(
        max_retries=max(1, int(seconds // max(0.2, seconds / 4)) + 3),
        max_backoff=int(seconds * 250),
        max_server_retry_delay=int(seconds * 1000),
    )
    session.client.set_retry_policies([policy])
    # The client warns before raising; the cell's one-line error says it (explain).
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]", category=UserWarning)


def session_endpoint(session: ConnectSession) -> Endpoint:
    """Where an (adopted) session's server is."""
    builder: Any = session.client._builder  # private: the client's connection settings
    host = str(builder.host).strip("[]")
    port = int(builder._port)  # private
    return Endpoint(url=f"sc://{host}:{port}", host=host, port=port)


def session_id(session: ConnectSession) -> str:
    return str(session.session_id)


def client_user_id(session: ConnectSession) -> str:
    """The user the client names to its server ("" for none): the server keys a
    session by (user, session id), its UI's session page too."""
    return str(session.client._user_id or "")  # private


def is_stopped(session: ConnectSession) -> bool:
    return bool(session.is_stopped)


def release(session: ConnectSession) -> None:
    """Release the session on the server and close its channel (best effort: the
    server may be gone). Other sessions on the same server are untouched."""
    session.stop()


def add_tags(session: ConnectSession, tags: Iterable[str]) -> None:
    """Tag the operations the current thread starts in ``session``."""
    for tag in tags:
        session.addTag(tag)


def remove_tags(session: ConnectSession, tags: Iterable[str]) -> None:
    for tag in tags:
        session.removeTag(tag)


def current_tags(session: ConnectSession) -> set[str]:
    """The tags of the current thread in ``session``."""
    return set(session.getTags())


def interrupt(session: ConnectSession, tags: Iterable[str] | None) -> list[str]:
    """Interrupt the operations carrying any of ``tags`` (None: all the session's);
    returns the ids of the operations the server interrupted."""
    if tags is None:
        return list(session.interruptAll())
    interrupted: list[str] = []
    for tag in tags:
        interrupted += session.interruptTag(tag)
    return interrupted


def interrupt_operation(session: ConnectSession, operation_id: str | int) -> list[str]:
    """Interrupt one operation of the session; the ids the server interrupted."""
    return list(session.interruptOperation(str(operation_id)))


def set_active_session(session: ConnectSession) -> Any:
    """Make ``session`` the current thread's active Connect session (what
    ``SparkSession.getActiveSession()`` and Connect's ``udf()`` read); returns the
    previous one for ``restore_active_session``."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    holder = ConnectSession._active_session  # private: a threading.local
    before = getattr(holder, "session", None)
    holder.session = session
    return before


def restore_active_session(before: Any) -> None:
    """Undo ``set_active_session`` on the current thread."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    ConnectSession._active_session.session = before  # private


def add_artifact(
    session: ConnectSession, remote_path: str, staged: Path, fragment: str | None
) -> None:
    """Upload a staged file as the session's artifact ``remote_path`` (``files/<name>``,
    ``archives/<name>`` unpacked into ``<fragment>/``, or ``pyfiles/<name>``).

    The upload takes its name from the local file, so the staged file is linked under
    that name in a private temporary folder first."""
    kind, _, name = remote_path.partition("/")
    with tempfile.TemporaryDirectory(dir=staged.parent, prefix=".jss-upload-") as folder:
        named = Path(folder) / name
        try:
            os.link(staged, named)
        except OSError:
            shutil.copyfile(staged, named)
        target = str(named) + (f"#{fragment}" if fragment else "")
        before = list(sys.path)
        try:
            session.addArtifacts(
                target, file=kind == "files", archive=kind == "archives", pyfile=kind == "pyfiles"
            )
        finally:
            # The client puts an added .zip/.egg on this kernel's sys.path too: that
            # would be global and point at a temporary file.
            sys.path[:] = before


def register_progress(
    session: ConnectSession,
    on_progress: Callable[[str, set[str], list[tuple[int, int, int, bool]], int, bool], None],
) -> Any:
    """Call ``on_progress(operation_id, thread_tags, stages, inflight_tasks, done)`` for
    every progress report of the session's operations, in the thread running them.
    ``stages`` are (stage id, tasks, completed tasks, done). Returns the handler."""
    from pyspark.sql.connect.shell.progress import ProgressHandler

    class _Handler(ProgressHandler):
        def __call__(
            self,
            stages: Iterable[Any] | None,
            inflight_tasks: int,
            operation_id: str | None,
            done: bool,
        ) -> None:
            if operation_id is None:
                return
            rows = [
                (int(s.stage_id), int(s.num_tasks), int(s.num_completed_tasks), bool(s.done))
                for s in stages or ()
            ]
            on_progress(operation_id, current_tags(session), rows, int(inflight_tasks), done)

    handler = _Handler()
    session.registerProgressHandler(handler)
    return handler


def unregister_progress(session: ConnectSession, handler: Any) -> None:
    """Stop reporting the session's progress (``handler`` from ``register_progress``)."""
    if handler is not None:
        session.removeProgressHandler(handler)


def operation_error() -> BaseException | None:
    """Inside the final progress report of an operation: the error it ends with.

    The client sends that report while leaving its ``with Progress(...)`` block, and
    Python exposes the exception leaving a ``with`` block to its ``__exit__``."""
    return sys.exc_info()[1]


#: Why a session of a remote Spark Connect server has no link to the server's UI.
REMOTE_UI_NOTE = (
    "the Spark UI of a Spark Connect server runs on the server's machine and the "
    "Connect protocol does not say where; only a local server's UI is linked"
)


def release_session(url: str, session_id: str, user_id: str) -> None:
    """Have the server at ``url`` (``sc://host:port/;token=...``) release session
    ``session_id`` of user ``user_id``: its operations interrupted, its state dropped.
    For a session whose client is gone (the shared driver's keeper, for a kernel that
    died)."""
    from pyspark.sql.connect.client import SparkConnectClient

    client = SparkConnectClient(connection=f"{url};session_id={session_id};user_id={user_id}")
    try:
        client.release_session()
    finally:
        client.close()


def warm_up(url: str) -> None:
    """A first query on a new server at ``url``, in a session of its own, released
    after: the server's first query loads and compiles what every later one uses
    (seconds), so a notebook's first one need not."""
    from pyspark.sql import SparkSession

    session = SparkSession.builder.remote(url).create()
    try:  # what first cells do: an aggregate, a grouping, a join, SQL, rows to pandas
        session.range(1000).selectExpr("sum(id)").collect()
        frame = session.range(100).selectExpr("id % 7 AS k", "id AS v")
        frame.groupBy("k").count().join(frame, "k").toPandas()
        session.sql("SELECT 1 AS one").collect()
    finally:
        session.stop()


def create(
    endpoint: Endpoint,
    name: str,
    conf: Mapping[str, str],
    retry_seconds: float,
    recheck_seconds: float,
) -> ConnectBackend:
    """A new session ``name`` on the server at ``endpoint`` with the SQL settings
    ``conf`` (ConfError, and nothing left open, when the server refuses one)."""
    check_token_transport(endpoint)
    session = open_session(endpoint, retry_seconds)
    try:
        for key, value in conf.items():
            try:
                session.conf.set(key, value)
            except Exception as exc:
                raise ConfError(f"Spark refused --conf {key}={value}: {error_line(exc)}") from None
    except BaseException:
        release(session)
        raise
    return ConnectBackend(session, name, endpoint, recheck_seconds)


def check_adoptable(obj: object, what: str) -> None:
    """NotASparkSessionError / ConnectError unless ``obj`` can be adopted."""
    if is_stopped(require_session(obj, what)):
        raise ConnectError("That Spark Connect session is stopped: nothing to adopt.")


def adopt(obj: object, name: str, what: str, recheck_seconds: float) -> ConnectBackend:
    """A backend for the user's own Connect session (always isolated)."""
    check_adoptable(obj, what)
    session = require_session(obj, what)
    return ConnectBackend(session, name, session_endpoint(session), recheck_seconds)


#: The share of a pool a Connect server makes on first use.
_EQUAL_SHARE = "weight 1"


class ConnectBackend:
    """A Spark Connect session (``SessionBackend``).

    Connect lists no jobs to a client: the session reports its operations' progress
    (``watch``), and what it last saw of the server (a lost connection, a session the
    server forgot) is kept here for the views."""

    kind: BackendKind = "connect"
    on_kernel_context = False

    def __init__(
        self, session: ConnectSession, name: str, endpoint: Endpoint, recheck_seconds: float = 2.0
    ) -> None:
        self.name = name
        self.session = session
        self.session_id = session_id(session)
        self.spark_session_tag = ""  # Connect lists no jobs: the session reports them
        self.endpoint = endpoint
        self._recheck_seconds = recheck_seconds
        self._lock = threading.Lock()
        self._running: set[str] = set()  # operation ids not ended yet
        #: Where the user's code started each running operation (its first report's
        #: stack: the client reports from the thread that runs it).
        self._call_sites: dict[str, str] = {}
        self._problem = ""  # what the session's last call or interrupt reported
        self._reachability: tuple[float, str] | None = None  # (when checked, why not)
        self._pool_read: tuple[bool, str | None] | None = None
        self._handler: Any = None

    def where(self) -> str:
        return self.endpoint.display

    def _pool(self) -> tuple[bool, str | None]:
        """(FAIR?, the session's pool) on its server, read once: two round trips."""
        if self._pool_read is None:
            conf = self.session.conf  # the server's SparkConf is in every session's
            fair = str(conf.get(scheduler_pools.MODE, "FIFO")).upper() == "FAIR"
            self._pool_read = (fair, conf.get(scheduler_pools.POOL, None) or None)
        return self._pool_read

    def scheduling(self) -> str:
        fair, pool = self._pool()
        if not fair:
            return "FIFO on the server: one queue for every session's jobs (spark.scheduler.mode)"
        if pool is None:
            return "FAIR on the server, in its default pool"
        if self._own_pool(pool):
            return f"FAIR on the server, in its own pool ({_EQUAL_SHARE})"
        return f"FAIR on the server, in pool '{pool}' (weights: the server's allocation file)"

    def share(self) -> str:
        fair, pool = self._pool()
        if not fair or pool is None:
            return ""
        return _EQUAL_SHARE if self._own_pool(pool) else f"pool '{pool}'"

    def _own_pool(self, pool: str) -> bool:
        # On the shared driver a session's pool also names its kernel ("a@1f2e3d4c"):
        # still its own, not a pool of the user's to name.
        return pool == self.name or (self.endpoint.shared and pool.startswith(f"{self.name}@"))

    def slots(self) -> int:
        return 0  # a client cannot see the server's executors

    def location(self) -> str:
        if self.endpoint.shared:
            return f"the shared Spark driver, Spark Connect {self.where()}"
        return f"Spark Connect {self.where()}"

    def worker_python(self) -> tuple[bool, str]:
        # Only the local server's workers are known to run here; a server chooses its
        # workers' interpreter itself.
        return self.endpoint.local, ""

    def require_usable(self, name: str) -> None:
        if is_stopped(self.session):
            raise ConnectError(
                f"Session '{name}' was stopped outside jupyter_spark_sessions "
                f"(spark.stop()?). Run `%spark_session stop {name}`, then create it again."
            )
        if self._unreachable():
            # The board's last check, up to recheck_seconds old, said down: a cell is
            # refused only on a check of its own (the server may have just come back).
            self._unreachable(fresh=True)
        problem = self.problem()
        if problem:
            raise ConnectError(f"Session '{name}' is unusable: {problem}.")

    def explain(self, error: BaseException, bound: bool) -> str:
        lost = is_connection_error(error) or is_lost_session(error) or driver_stopped(error)
        lost = lost or bool(self._out_of_memory(error))
        if bound and "NO_ACTIVE_SESSION" in str(error):
            lost = True  # how a restarted server's unknown session can show
        if not lost or (not bound and not self._unreachable()):
            return ""  # not bound: only when its own server is down, not another's
        reason = self._out_of_memory(error) or problem_after(error, "") or FORGOTTEN
        if reason.startswith(UNREACHABLE) and not self._unreachable(fresh=True):
            reason = BROKEN  # the server answers again; this session's channel does not
        with self._lock:
            self._problem = reason
        problem = self.problem()
        return f"Session '{self.name}' is unusable: {problem}." if problem else ""

    def ui_url(self) -> str:
        return self.endpoint.ui_url  # a local server's; a remote one's is not known

    def ui_note(self) -> str:
        return "" if self.endpoint.ui_url else REMOTE_UI_NOTE

    def ui_protected(self) -> bool:
        return self.endpoint.ui_protected

    def operations_page(self) -> str:
        # The server UI's Connect tab: this session's statements with their job ids.
        query = urlencode({"id": self.session_id, "userId": client_user_id(self.session)})
        return f"connect/session/?{query}"

    def problem(self) -> str:
        # A TCP check at most every ``recheck_seconds`` (cheap, bounded), plus what the
        # session's own calls last reported; with the way out.
        reason = self._unreachable()
        if not reason:
            with self._lock:
                reason = self._problem
        if not reason:
            return ""
        if self.endpoint.shared:  # reconnect starts a new one: no waiting for it
            if reason.startswith((UNREACHABLE, STOPPED)):  # how it ended, if known
                reason = self.endpoint.end_note() or reason
            return (
                f"the shared Spark driver ({self.endpoint.display}) {reason}: run "
                f"`%spark_session reconnect {self.name}` to make it again, with its "
                "settings and files, on a new shared driver"
            )
        when = "when it is back, " if reason.startswith(UNREACHABLE) else ""
        return (
            f"its Spark Connect server {self.endpoint.display} {reason}: {when}run "
            f"`%spark_session reconnect {self.name}` to make it again with its settings "
            "and files"
        )

    def _unreachable(self, fresh: bool = False) -> str:
        now = time.monotonic()
        checked = self._reachability
        if fresh or checked is None or now - checked[0] >= self._recheck_seconds:
            checked = self._reachability = (now, reachable(self.endpoint, timeout=0.5))
        return f"{UNREACHABLE} ({checked[1]})" if checked[1] else ""

    def running_jobs(self) -> int:
        with self._lock:
            return len(self._running)

    def job_feed(self) -> None:
        return None  # the session reports its operations through ``watch``

    def stage_source(self) -> server_stages.ServerStageReader | None:
        # A local or shared server's UI (this kernel has its address and secret); a
        # remote server's UI is its owner's, and Connect does not say where.
        ui_url = self.endpoint.ui_url
        return server_stages.reader_for(ui_url, self.endpoint.ui_secret) if ui_url else None

    def watch(self, sink: OperationSink) -> None:
        def on_progress(
            operation_id: str,
            tags: set[str],
            stages: list[tuple[int, int, int, bool]],
            inflight_tasks: int,
            done: bool,
        ) -> None:
            if getattr(_unwatched, "on", False):
                return  # the extension's own read (session_catalog), not the user's
            error = operation_error() if done else None  # only readable here
            with self._lock:
                site = self._call_sites.get(operation_id)
                if site is None:
                    site = call_site.current_call_site() or ""
                if done:
                    self._running.discard(operation_id)
                    self._call_sites.pop(operation_id, None)
                    self._note(error)
                else:
                    self._running.add(operation_id)
                    self._call_sites[operation_id] = site
            cancelled = done and is_cancellation(error)
            cell = current_cell()
            sink(
                OperationReport(
                    operation_id=operation_id,
                    thread_tags=frozenset(tags),
                    stages=tuple(stages),
                    inflight_tasks=inflight_tasks,
                    done=done,
                    failed=error is not None,
                    cancel_reason=error_line(error) if cancelled and error else "",
                    failure=failure_line(str(error)) if error and not cancelled else "",
                    thread_cell=cell[1] if cell else None,
                    lost=is_connection_error(error)
                    or is_lost_session(error)
                    or driver_stopped(error)
                    or bool(self._out_of_memory(error)),
                    call_site=site,
                )
            )

        self._handler = register_progress(self.session, on_progress)

    def _note(self, error: BaseException | None) -> None:
        self._problem = self._out_of_memory(error) or problem_after(error, self._problem)

    def _out_of_memory(self, error: BaseException | None) -> str:
        """How the server went down when a task of the call ran out of memory in a server
        whose tasks run in its own JVM (``local[...]``); else "". Spark stops that
        SparkContext for it, but the job's failure can reach the client first, without
        "SparkContext was shut down" (a loaded machine's CI run saw it)."""
        return out_of_memory_reason(error) if self.endpoint.tasks_in_server else ""

    def cancel_jobs(self, refs: tuple[JobRef, ...]) -> None:
        self._interrupt(lambda: [i for ref in refs for i in interrupt_operation(self.session, ref)])

    def cancel_session(self) -> None:
        self._interrupt(lambda: interrupt(self.session, None))

    def cancel_tag(self, tag: str) -> None:
        self._interrupt(lambda: interrupt(self.session, [tag]))

    def _interrupt(self, call: Callable[[], list[str]]) -> None:
        # Off this thread: a server that does not answer must not stall the caller.
        def run() -> None:
            try:
                call()
            except Exception as exc:
                with self._lock:
                    self._note(exc)

        threading.Thread(target=run, name="jss-connect-interrupt", daemon=True).start()

    def tag_thread(self, tags: tuple[str, ...]) -> tuple[tuple[str, ...], Any, str | None]:
        add_tags(self.session, tags)
        builder_binding.bind(self.session, self.name, connect=True)  # getOrCreate()
        return tags, set_active_session(self.session), api_flavour.use(connect=True)

    def untag_thread(self, applied: tuple[tuple[str, ...], Any, str | None]) -> None:
        tags, active_before, flavour_before = applied
        builder_binding.unbind(self.session)
        remove_tags(self.session, tags)
        restore_active_session(active_before)
        api_flavour.restore(flavour_before)

    def add_artifact(self, remote_path: str, staged: Path, fragment: str | None) -> None:
        add_artifact(self.session, remote_path, staged, fragment)

    def release(self, quick: bool = False) -> None:
        self.forget()
        release(self.session)

    def stopping(self) -> None:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        if getattr(ConnectSession._active_session, "session", None) is self.session:
            restore_active_session(None)

    def forget(self) -> None:
        unregister_progress(self.session, self._handler)
        self._handler = None
