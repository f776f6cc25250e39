"""The registry of named sessions: the one source of truth for session state.

It knows which sessions this project created (and so may release) and which it adopted
(and must never stop), and whether this project started the shared SparkContext (the
only case in which it ever stops it: at kernel shutdown, after releasing its sessions).
"""

from __future__ import annotations

import builtins
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from . import job_tags
from .archives import ArchiveLimits
from .artifacts import AddResult, Artifact, SessionArtifacts
from .backends import classic, connect
from .config import SparkSessionsConfig
from .errors import (
    ArtifactError,
    ConfError,
    ConnectError,
    ContextStoppedError,
    MasterMismatchError,
    NotASparkSessionError,
    SessionNameError,
    UnknownSessionError,
)
from .java_runtime import require_java
from .jobs import BoardPoller, JobBoard
from .kernel_lifecycle import reap_when_it_exits

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

Origin = Literal["created", "adopted"]
Backend = Literal["classic", "connect"]

# Letters, digits, '_', '.', '-'; never ':' or ',' (they would break job tags).
_NAME_PATTERN = re.compile(r"[^\W\d][\w.-]{0,63}")


def check_session_name(name: str) -> None:
    """Raise SessionNameError unless ``name`` can name a session."""
    if not _NAME_PATTERN.fullmatch(name):
        raise SessionNameError(
            f"Invalid session name {name!r}: use up to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or '_'."
        )


@dataclass
class ManagedSession:
    """A SparkSession registered under a name."""

    name: str
    session: Any  # a classic SparkSession, or a Spark Connect one (see ``backend``)
    origin: Origin
    session_id: str
    spark_job_tag: str
    directory: Path
    isolated: bool
    artifacts: SessionArtifacts
    backend: Backend = "classic"
    #: Spark Connect only: where the server is (``display`` carries no token).
    endpoint: connect.Endpoint | None = None
    registered_at: float = field(default_factory=time.time)
    #: Spark Connect only: the progress handler feeding the job board.
    progress_handler: Any = None

    @property
    def sc(self) -> SparkContext:
        """The SparkContext the session runs on (classic sessions only)."""
        sc: SparkContext = self.session.sparkContext
        return sc

    @property
    def is_connect(self) -> bool:
        return self.backend == "connect"

    @property
    def tag_target(self) -> Any:
        """What carries this session's job tags: the SparkContext (classic, per JVM
        thread) or the Connect session (per client thread)."""
        return self.session if self.is_connect else self.sc

    @cached_property
    def thread_artifact_state(self) -> Any:
        """What a cell's RDD jobs run in: the JVM artifact state of a classic isolated
        session (its files, as for its queries); None otherwise. Fixed for the session's
        life: read once, not on every cell."""
        if self.is_connect or not self.isolated:
            return None
        return classic.artifact_state(self.session)

    @property
    def master(self) -> str:
        """The master URL (classic) or the Connect server's address, without token."""
        if self.endpoint is not None:
            return self.endpoint.display
        return "(stopped)" if self.stopped else str(self.sc.master)

    @property
    def stopped(self) -> bool:
        """True when the session can no longer run anything (context or client stopped)."""
        if self.is_connect:
            return connect.is_stopped(self.session)
        return classic.context_is_stopped(self.sc)

    @property
    def cancel_tags(self) -> tuple[str, ...]:
        """Tags that together cover every job of this session: Spark's own session tag
        (SQL jobs from any thread) and this project's (every job run from its cells).
        A Connect session is cancelled as a whole with ``interruptAll`` instead."""
        if self.is_connect:
            return (job_tags.session_tag(self.name),)
        return self.spark_job_tag, job_tags.session_tag(self.name)


@dataclass(frozen=True)
class SessionInfo:
    """What `list` and `info` show about one session."""

    name: str
    origin: Origin
    backend: str
    master: str
    session_id: str
    directory: str
    running_jobs: int
    isolated: bool
    context_running: bool
    ui_url: str | None = None  # the Spark UI of a classic session's context, if on


class Release:
    """The background release of a stopped session; ``wait`` for it in tests or scripts."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        self.error: BaseException | None = None
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        """True once the session's jobs ended and its resources were released."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until released; False when ``timeout`` passed first."""
        return self._done.wait(timeout)

    def _finish(self, error: BaseException | None = None) -> None:
        self.error = error
        self._done.set()


class SessionRegistry:
    """Named, isolated Spark sessions on the kernel's shared SparkContext."""

    def __init__(self, config: SparkSessionsConfig | None = None) -> None:
        self.config = config or SparkSessionsConfig()
        self.tagger = job_tags.ThreadJobTagger()
        self._lock = threading.RLock()
        self._context_lock = threading.Lock()
        self._sessions: dict[str, ManagedSession] = {}
        self._reserved: set[str] = set()
        self._stopped: set[str] = set()
        self._releases: dict[str, Release] = {}
        self._owned_context: SparkContext | None = None
        self._connect_lock = threading.Lock()
        self._connect_server: connect.LocalConnectServer | None = None
        #: Job groups of the registered sessions, kept current by ``board_poller``
        #: (started with the first session).
        self.board = JobBoard(self, self.config)
        self.board_poller = BoardPoller(self.board)

    # -- queries -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._sessions)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        with self._lock:
            return list(self._sessions)

    def get(self, name: str) -> ManagedSession:
        """The registered session ``name``; UnknownSessionError when there is none."""
        with self._lock:
            managed = self._sessions.get(name)
            if managed is not None:
                return managed
            known = ", ".join(self._sessions) or "none"
            if name in self._stopped:
                raise UnknownSessionError(
                    f"Session '{name}' was stopped; `create` or `adopt` it again "
                    f"(registered: {known})."
                )
        raise UnknownSessionError(f"No session named '{name}' (registered: {known}).")

    def session(self, name: str) -> Any:
        """The SparkSession (classic or Connect) registered as ``name``, checked to be
        usable."""
        managed = self.get(name)
        _require_usable(managed)
        return managed.session

    def find(self, session: object) -> ManagedSession | None:
        """The registration of this very SparkSession object, if any."""
        if session is None:
            return None
        for managed in list(self._sessions.values()):
            if managed.session is session:
                return managed
        return None

    def info(self, name: str) -> SessionInfo:
        """What is known about session ``name`` now."""
        managed = self.get(name)
        running = not managed.stopped
        if managed.is_connect:
            jobs = self.board.running_operations(name)
        else:
            jobs = len(classic.active_job_ids(managed.sc, managed.cancel_tags)) if running else 0
        return SessionInfo(
            name=managed.name,
            origin=managed.origin,
            backend=managed.backend,
            master=managed.master,
            session_id=managed.session_id,
            directory=str(managed.directory),
            running_jobs=jobs,
            isolated=managed.isolated,
            context_running=running,
            ui_url=classic.ui_url(managed.sc) if running and not managed.is_connect else None,
        )

    def list(self) -> list[SessionInfo]:
        """``info`` of every registered session."""
        return [self.info(name) for name in self.names()]

    @property
    def owns_context(self) -> bool:
        """True when this project started the running SparkContext."""
        sc = self._owned_context
        return sc is not None and not classic.context_is_stopped(sc)

    # -- create / adopt --------------------------------------------------------------

    def create(
        self,
        name: str,
        conf: Mapping[str, str] | None = None,
        master: str | None = None,
        remote: str | None = None,
    ) -> ManagedSession:
        """Create an isolated session ``name``: on the shared SparkContext, started on
        ``master`` (default: the configured one) when none runs; or, with ``remote``
        (``sc://host:port`` or ``local``), a Spark Connect session."""
        check_session_name(name)
        if remote is not None and master is not None:
            raise ConnectError(
                "--master and --remote do not go together: a Connect server has its own "
                "master (for --remote local, set SparkSessionsConfig.connect_master)."
            )
        with self._reserve(name):
            settings = {**self.config.session_defaults, **(conf or {})}
            if remote is not None:
                endpoint = self._connect_endpoint(remote)
                remote_session = connect.open_session(endpoint, self.config.connect_retry_seconds)
                try:
                    _apply_connect_conf(remote_session, settings)
                except BaseException:
                    connect.release(remote_session)
                    raise
                return self._register(
                    name, remote_session, "created", isolated=True, endpoint=endpoint
                )
            root = self._root_session(master)
            session = classic.new_isolated_session(root, settings)
            return self._register(name, session, "created", isolated=True)

    def adopt(self, name: str, session: object, what: str | None = None) -> ManagedSession:
        """Register an existing SparkSession as ``name``; it will never be stopped by
        this project. Artifact isolation is switched on if the session ran no query yet
        (a Spark Connect session is always isolated)."""
        check_session_name(name)
        if connect.is_connect_session(session):
            remote_session = connect.require_session(session, what or "The object to adopt")
            with self._reserve(name):
                if connect.is_stopped(remote_session):
                    raise ConnectError("That Spark Connect session is stopped: nothing to adopt.")
                other = self.find(session)
                if other is not None:
                    raise NotASparkSessionError(
                        f"That SparkSession is already registered as '{other.name}'."
                    )
                return self._register(
                    name,
                    session,
                    "adopted",
                    isolated=True,
                    endpoint=connect.session_endpoint(remote_session),
                )
        spark = classic.require_session(session, what or "The object to adopt")
        with self._reserve(name):
            if classic.context_is_stopped(spark.sparkContext):
                raise ContextStoppedError(
                    "That SparkSession's SparkContext is stopped: there is nothing to adopt."
                )
            other = self.find(spark)
            if other is not None:
                raise NotASparkSessionError(
                    f"That SparkSession is already registered as '{other.name}'."
                )
            return self._register(name, spark, "adopted", isolated=classic.try_isolate(spark))

    @contextmanager
    def _reserve(self, name: str) -> Iterator[None]:
        # Two racing creates of one name: the second fails here, before any work.
        with self._lock:
            if name in self._sessions or name in self._reserved:
                raise SessionNameError(f"A session named '{name}' already exists.")
            self._reserved.add(name)
        try:
            self.config.resolved_session_root()  # an unsafe root is refused before any work
            yield
        finally:
            with self._lock:
                self._reserved.discard(name)

    def _root_session(self, master: str | None) -> SparkSession:
        with self._context_lock:
            sc = classic.active_context()
            if sc is not None and not classic.context_is_stopped(sc):
                if master is not None and master != sc.master:
                    raise MasterMismatchError(
                        f"A SparkContext already runs on {sc.master}; --master {master} can "
                        "only be used when none runs (or stop that context first)."
                    )
                return classic.root_session(sc)
            require_java()
            root = classic.start_context(
                master or self.config.default_master,
                self.config.app_name,
                self.config.context_conf,
                scratch_dir=str(self.config.kernel_root().scratch_dir()),
            )
            self._owned_context = root.sparkContext
            return root

    def _connect_endpoint(self, remote: str) -> connect.Endpoint:
        if remote != connect.LOCAL:
            return connect.parse_remote(remote)
        with self._connect_lock:
            server = self._connect_server
            if server is not None and server.alive and server.endpoint is not None:
                return server.endpoint
            # None yet, or the one we started died: start a fresh one.
            require_java()
            server = connect.LocalConnectServer(
                self.config.connect_master,
                self.config.connect_conf,
                Path(self.config.resolved_session_root()),
                self.config.connect_start_timeout,
            )
            endpoint = server.start()
            self._connect_server = server
            return endpoint

    @property
    def local_connect_server(self) -> connect.LocalConnectServer | None:
        """The Spark Connect server ``--remote local`` started, if any."""
        return self._connect_server

    def _register(
        self,
        name: str,
        session: Any,
        origin: Origin,
        isolated: bool,
        endpoint: connect.Endpoint | None = None,
    ) -> ManagedSession:
        is_connect = connect.is_connect_session(session)
        session_id = connect.session_id(session) if is_connect else classic.session_uuid(session)
        directory = self.config.kernel_root().make_dir(f"{name}-{session_id[:8]}")

        def register(remote: str, staged: Path, fragment: str | None) -> None:
            if is_connect:
                connect.add_artifact(session, remote, staged, fragment)
            else:
                classic.add_session_artifact(session, remote, str(staged), fragment)

        managed = ManagedSession(
            name=name,
            session=session,
            origin=origin,
            session_id=session_id,
            spark_job_tag="" if is_connect else classic.session_job_tag(session),
            directory=directory,
            isolated=isolated,
            artifacts=SessionArtifacts(name, directory, register),
            backend="connect" if is_connect else "classic",
            endpoint=endpoint,
        )
        if is_connect:
            managed.progress_handler = connect.register_progress(
                session, self.board.operation_reporter(name)
            )
        with self._lock:
            self._sessions[name] = managed
            self._stopped.discard(name)
        self.board_poller.start()
        self.board.wake.set()  # views list the new session at once
        return managed

    # -- files ---------------------------------------------------------------------------

    def add_file(
        self, name: str, path: str | os.PathLike[str], alias: str | None = None
    ) -> AddResult:
        """Add a file to session ``name``: its Python UDFs open it as ``./<alias>``
        (default: the file's name); ``result.artifact.path`` is the driver's copy."""
        return self._added(self._artifacts_of(name).add_file(path, alias))

    def add_archive(
        self, name: str, path: str | os.PathLike[str], alias: str | None = None
    ) -> AddResult:
        """Add a zip, jar, tar, tar.gz or tgz to session ``name``, unpacked into
        ``<alias>/`` (default: the archive's base name) for its UDFs and on the driver."""
        return self._added(
            self._artifacts_of(name).add_archive(path, alias, self._archive_limits())
        )

    def add_pyfile(self, name: str, path: str | os.PathLike[str]) -> AddResult:
        """Add a .py, .zip or .egg that session ``name``'s Python UDFs can import."""
        return self._added(self._artifacts_of(name).add_pyfile(path))

    def files(self, name: str) -> builtins.list[Artifact]:
        """What was added to session ``name``, oldest first."""
        return self.get(name).artifacts.list()

    def _added(self, result: AddResult) -> AddResult:
        self.board.wake.set()  # views list the session's new file at once
        return result

    def _artifacts_of(self, name: str) -> SessionArtifacts:
        managed = self.get(name)
        _require_usable(managed)
        if not managed.isolated:
            raise ArtifactError(
                f"Session '{name}' is not isolated (it ran queries before it was adopted): "
                "files added to it would reach every session. Add them to a session made "
                "with `%spark_session create NAME`."
            )
        return managed.artifacts

    def _archive_limits(self) -> ArchiveLimits:
        return ArchiveLimits(
            max_total_bytes=self.config.archive_max_bytes,
            max_entries=self.config.archive_max_entries,
            max_ratio=self.config.archive_max_ratio,
        )

    # -- job attribution -------------------------------------------------------------

    @contextmanager
    def running_in(
        self, name: str, execution_count: int = 0, description: str = ""
    ) -> Iterator[SparkSession]:
        """Run a block as one job group of session ``name``: the jobs the current thread
        starts inside it carry the session's and the group's tags, and the job board
        shows them as group ``name:execution_count`` described by ``description``."""
        session = self.session(name)
        self.board.cell_started(name, execution_count, description)
        try:
            managed = self.get(name)
            with self.tagger.tagged(
                managed.tag_target, name, execution_count, managed.thread_artifact_state
            ):
                yield session
        finally:
            self.board.cell_finished(name, execution_count)

    # -- stop / shutdown ---------------------------------------------------------------

    def stop(self, name: str) -> Release:
        """Unregister ``name`` now. For a created session, also cancel its running jobs
        (without waiting) and release it in the background once they have ended.
        Never stops the shared SparkContext."""
        with self._lock:
            managed = self.get(name)
            del self._sessions[name]
            self._stopped.add(name)
            release = Release(name, managed.directory)
            self._releases[name] = release
        self.board.forget_session(name)
        self.board.wake.set()
        if managed.origin == "adopted":
            if managed.is_connect:
                connect.unregister_progress(managed.session, managed.progress_handler)
            _remove_directory(managed.directory)
            release._finish()
            return release
        _cancel(managed)
        thread = threading.Thread(
            target=self._release_when_idle,
            args=(managed, release, self.config.release_timeout),
            name=f"jss-release-{name}",
            daemon=True,
        )
        thread.start()
        return release

    def _release_when_idle(self, managed: ManagedSession, release: Release, timeout: float) -> None:
        try:
            self._wait_for_jobs_to_end(managed, timeout)
            _release(managed)
        except BaseException as exc:  # reported on the handle, never lost in a thread
            log.exception("releasing Spark session %r failed", managed.name)
            release._finish(exc)
        else:
            release._finish()

    def shutdown(self) -> None:
        """Kernel shutdown: release every created session, unregister adopted ones, and
        stop the SparkContext only if this project started it.

        Kept short: the kernel manager sends SIGTERM 2.5 s after a shutdown request. Temp
        views are not dropped one by one here, since they live in the kernel's JVM, which
        ends with the kernel."""
        self.board_poller.stop()  # no more status reads from a JVM about to stop
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
            # Stopped sessions whose jobs have not ended yet: their release thread dies
            # with the kernel, so their directories go now.
            unreleased = [r.directory for r in self._releases.values() if not r.done]
        created = [m for m in sessions if m.origin == "created"]
        connect_created = [m for m in created if m.is_connect]
        created = [m for m in created if not m.is_connect]
        # Connect sessions: interrupt and release on threads, each bounded by the
        # client's retry budget; a dead server must not hold up the shutdown.
        releases = [
            threading.Thread(target=_release_connect_quietly, args=(m,), daemon=True)
            for m in connect_created
        ]
        for thread in releases:
            thread.start()
        for managed in created:
            _cancel(managed)
        deadline = time.monotonic() + self.config.shutdown_timeout
        for managed in created:
            try:
                self._wait_for_jobs_to_end(managed, max(0.0, deadline - time.monotonic()))
                if not managed.stopped:
                    classic.close_artifacts(managed.session)
            except Exception:
                log.exception("releasing Spark session %r at shutdown failed", managed.name)
        for thread in releases:
            thread.join(max(0.0, deadline - time.monotonic()))
        for directory in [m.directory for m in sessions] + unreleased:
            _remove_directory(directory)
        owned, self._owned_context = self._owned_context, None
        if owned is not None and not classic.context_is_stopped(owned):
            owned.stop()
        server, self._connect_server = self._connect_server, None
        if server is not None:
            server.stop(timeout=1.0)
        self.config.remove_session_roots()
        # The kernel now terminates its children: let the JVM be reaped when it dies.
        reap_when_it_exits(classic.gateway_process())

    def _wait_for_jobs_to_end(self, managed: ManagedSession, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not managed.stopped:
            if managed.is_connect:
                running = self.board.running_operations(managed.name)
            else:
                running = len(classic.active_job_ids(managed.sc, managed.cancel_tags))
            if not running:
                return
            if time.monotonic() >= deadline:
                log.warning("jobs of session %r still run; releasing it anyway", managed.name)
                return
            time.sleep(0.05)


def _require_usable(managed: ManagedSession) -> None:
    if managed.is_connect:
        if connect.is_stopped(managed.session):
            raise ConnectError(
                f"Session '{managed.name}' was stopped outside jupyter_spark_sessions "
                f"(spark.stop()?). Run `%spark_session stop {managed.name}`, then create it "
                "again."
            )
        return
    classic.require_running(managed.sc, managed.name)


def _apply_connect_conf(session: Any, conf: Mapping[str, str]) -> None:
    for key, value in conf.items():
        try:
            session.conf.set(key, value)
        except Exception as exc:
            raise ConfError(
                f"Spark refused --conf {key}={value}: {connect.error_line(exc)}"
            ) from None


def _cancel(managed: ManagedSession) -> None:
    if managed.stopped:
        return
    if managed.is_connect:
        # Interrupting is a server call: off this thread (`stop` returns at once).
        connect.interrupt_in_background(managed.session, None, lambda ids, error: None)
        return
    sc = managed.sc
    for tag in managed.cancel_tags:
        sc.cancelJobsWithTag(tag)


def _release(managed: ManagedSession) -> None:
    if managed.is_connect:
        connect.unregister_progress(managed.session, managed.progress_handler)
        connect.release(managed.session)
    elif not managed.stopped:
        classic.stop_streaming_queries(managed.session)
        classic.drop_temp_views(managed.session)
        classic.close_artifacts(managed.session)
    _remove_directory(managed.directory)


def _release_connect_quietly(managed: ManagedSession) -> None:
    try:
        if not managed.stopped:
            connect.interrupt(managed.session, None)
        _release(managed)
    except Exception:
        log.warning("releasing Spark Connect session %r at shutdown failed", managed.name)


def _remove_directory(path: Path, only_if_empty: bool = False) -> None:
    if only_if_empty:
        with suppress(OSError):
            os.rmdir(path)
        return
    shutil.rmtree(path, ignore_errors=True)


_default: SessionRegistry | None = None
_default_lock = threading.Lock()


def default_registry(config: SparkSessionsConfig | None = None) -> SessionRegistry:
    """The process-wide registry the magics use; the Python API's entry point.

    ``config`` is used only by the call that creates it (the extension passes the
    shell's configuration when it loads)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = SessionRegistry(config)
        return _default
