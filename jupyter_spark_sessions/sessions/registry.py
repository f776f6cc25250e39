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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from .. import backends
from ..backends import streaming_calls
from ..backends.base import SessionBackend
from ..backends.kernel_context import KernelContext
from ..backends.local_connect_server import ConnectEndpoints, LocalConnectServer
from ..backends.scheduler_pools import DEFAULT_SHARE, PoolShare
from ..board.job_board import JobBoard
from ..board.poller import BoardPoller
from ..board.snapshot import FileView, SessionView
from ..config import SparkSessionsConfig
from ..errors import (
    ArtifactError,
    ConfError,
    ConnectError,
    NotASparkSessionError,
    PackagesError,
    SessionNameError,
    UnknownSessionError,
)
from ..files.archives import ArchiveLimits
from ..files.artifacts import AddResult, Artifact, SessionArtifacts
from . import recovery
from .gone_objects import mark_gone
from .python_envs import (
    PYTHON_CONF,
    EnvironmentCache,
    Requirements,
    SessionEnv,
    default_cache_dir,
)
from .recovery import RestartReport
from .release import (
    Release,
    cancel_everything,
    quietly,
    release_at_shutdown,
    wait_for_jobs_to_end,
)
from .thread_tagger import ThreadJobTagger

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..backends.classic import ClassicBackend

log = logging.getLogger(__name__)

Origin = Literal["created", "adopted"]

# Letters, digits, '_', '.', '-'; never ':' or ',' (they would break job tags).
_NAME_PATTERN = re.compile(r"[^\W\d][\w.-]{0,63}")
#: A stopped session is released once none of its jobs ran for this long: until then
#: the board cancels any job of it it sees (a running query's next job included).
_STOPPED_SESSION_QUIET_SECONDS = 1.0


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
    backend: SessionBackend
    origin: Origin
    directory: Path
    isolated: bool
    artifacts: SessionArtifacts
    #: How it was made, to make it again (``restart``, ``reconnect``): its session
    #: settings, and for a Connect session the ``--remote`` it was created with.
    settings: Mapping[str, str] = field(default_factory=dict)
    remote: str | None = None
    #: Its share of the task slots (its own scheduler pool's weights), when it has one.
    share: PoolShare | None = None
    #: The Python environment its UDFs run in, when it asked for packages.
    env: SessionEnv | None = None

    @property
    def session(self) -> Any:
        """The SparkSession object (classic or Spark Connect) the user's code holds."""
        return self.backend.session

    @property
    def session_id(self) -> str:
        return self.backend.session_id


_CONNECT_SHARES = (
    "--weight and --min-share shape a scheduler pool, whose weights a Spark Connect "
    "client cannot set (each session of the local server has a pool of weight 1)."
)

#: What `list` and `info` show about one session: the view every frontend shows.
SessionInfo = SessionView


class SessionRegistry:
    """Named, isolated Spark sessions on the kernel's shared SparkContext."""

    def __init__(
        self,
        config: SparkSessionsConfig,
        *,
        board: JobBoard,
        poller: BoardPoller,
        context: KernelContext,
        endpoints: ConnectEndpoints,
        tagger: ThreadJobTagger,
    ) -> None:
        """Built by ``app.SparkSessionsApp``, which makes the parts it is handed here."""
        self.config = config
        self.tagger = tagger
        self._lock = threading.RLock()
        self._context_lock = threading.Lock()
        self._sessions: dict[str, ManagedSession] = {}
        self._reserved: set[str] = set()
        self._stopped: set[str] = set()
        self._releases: dict[str, Release] = {}
        #: Job groups of the sessions, kept current by ``board_poller`` (from the first).
        self.board = board
        self.board_poller = poller
        #: The kernel's SparkContext, which every classic session lives on.
        self.context = context
        #: Where ``--remote`` sessions go, and the local Connect server if one was started.
        self.connect_endpoints = endpoints

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
        managed.backend.require_usable(name)
        return managed.session

    def backend(self, name: str) -> SessionBackend:
        """The backend of session ``name`` (for the job board)."""
        return self.get(name).backend

    def find(self, session: object) -> ManagedSession | None:
        """The registration of this very SparkSession object, if any."""
        if session is None:
            return None
        for managed in list(self._sessions.values()):
            if managed.session is session:
                return managed
        return None

    def info(self, name: str) -> SessionView:
        """What is known about session ``name`` now."""
        return self.describe(name)

    def describe(self, name: str, running_jobs: int | None = None) -> SessionView:
        """How every view shows session ``name`` (``running_jobs``: when the caller
        already counted them). Never raises for a session Spark lost: it says so."""
        managed = self.get(name)
        backend = managed.backend
        share, slots = "", 0
        try:
            master, problem = backend.where(), backend.problem()
            if running_jobs is None:
                running_jobs = 0 if problem else backend.running_jobs()
            ui_url = "" if problem else backend.ui_url()
            ui_note = "" if ui_url or problem else backend.ui_note()
            protected = bool(ui_url) and backend.ui_protected()
            if not problem:
                share, slots = backend.share(), backend.slots()
        except Exception as exc:  # the driver or server went away
            master, problem, running_jobs, ui_url = "(unreachable)", _first_line(exc), 0, ""
            protected, ui_note = False, ""
        return SessionView(
            name=managed.name,
            origin=managed.origin,
            backend=backend.kind,
            master=master,
            session_id=managed.session_id,
            isolated=managed.isolated,
            directory=str(managed.directory),
            disconnected=problem,
            files=tuple(FileView(a.name, a.kind, a.size) for a in managed.artifacts.list()),
            running_jobs=running_jobs,
            ui_url=ui_url,
            ui_note=ui_note,
            ui_protected=protected,
            operations_page=backend.operations_page() if ui_url else "",
            share=share,
            slots=slots,
            packages=managed.env.wanted.describe() if managed.env else "",
            active_queries=self.board.queries.active_count(name),
        )

    def list(self) -> builtins.list[SessionView]:
        """``info`` of every registered session."""
        return [self.info(name) for name in self.names()]

    @property
    def owns_context(self) -> bool:
        """True when this project started the running SparkContext."""
        return self.context.owned

    # -- create / adopt --------------------------------------------------------------

    def create(
        self,
        name: str,
        conf: Mapping[str, str] | None = None,
        master: str | None = None,
        remote: str | None = None,
        share: PoolShare | None = None,
        packages: Requirements | None = None,
        progress: Callable[[str], None] = log.info,
    ) -> ManagedSession:
        """Create an isolated session ``name``: on the shared SparkContext, started on
        ``master`` (default: the configured one) when none runs, in a scheduler pool of
        its own with ``share`` (see ``KernelContext.create_session``); or, with
        ``remote`` (``sc://host:port`` or ``local``), a Spark Connect session. With
        ``packages``, its UDFs run in a Python environment of their own (built, with
        ``progress`` lines, unless cached: ``sessions/python_envs``)."""
        check_session_name(name)
        if remote is None and master is None and self.config.default_remote:
            remote = self.config.default_remote
        if remote is not None and master is not None:
            raise ConnectError(
                "--master and --remote do not go together: a Connect server has its own "
                "master (for --remote local, set SparkSessionsConfig.connect_master)."
            )
        if remote is not None and share is not None:
            raise ConfError(_CONNECT_SHARES)
        with self._reserve(name):
            settings = {**self.config.session_defaults, **(conf or {})}
            env = self._env_cache().get_or_build(packages, progress) if packages else None
            backend: SessionBackend
            if remote is not None:
                backend = self.connect_endpoints.create_session(remote, name, settings, progress)
            else:
                backend = self.context.create_session(name, settings, master, share)
            managed = self.register(name, backend, "created", isolated=True)
            managed.settings, managed.remote, managed.share = settings, remote, share
            try:
                if env is not None:
                    self._use_environment(managed, env)
            except BaseException:
                self.stop(name)  # nothing made: a session without its packages is not it
                raise
            return managed

    def _env_cache(self) -> EnvironmentCache:
        root = Path(self.config.env_cache_dir or default_cache_dir())
        in_use = [m.env.key for m in self._sessions.values() if m.env is not None]
        return EnvironmentCache(root, self.config.env_cache_max_bytes, in_use)

    def _use_environment(self, managed: ManagedSession, env: SessionEnv) -> SessionEnv:
        # By path where the session's Python workers run here; else shipped to them as
        # the session's archive (kept by restart and reconnect, like its settings).
        here, worker_python = managed.backend.worker_python()
        shipping = self.config.env_shipping
        if shipping == "archive" or (shipping == "auto" and not here):
            env = replace(env, shipped_as=f"python-env-{env.key[:12]}")
            archive = self._env_cache().archive(env, worker_python)
            self.add_archive(managed.name, archive, env.shipped_as)
        managed.session.conf.set(PYTHON_CONF, env.worker_python)
        managed.settings = {**managed.settings, PYTHON_CONF: env.worker_python}
        managed.env = env
        return env

    def pip(
        self, name: str, packages: Requirements, progress: Callable[[str], None] = log.info
    ) -> SessionEnv:
        """Add ``packages`` to session ``name``'s own (its new jobs' UDFs run in the
        environment of all of them; running jobs keep theirs). Nothing changes when the
        environment cannot be built."""
        managed = self.get(name)
        if managed.origin == "adopted":
            raise PackagesError(f"'{name}' was adopted: its settings are its owner's.")
        wanted = managed.env.wanted.plus(packages) if managed.env else packages
        return self._use_environment(managed, self._env_cache().get_or_build(wanted, progress))

    def adopt(self, name: str, session: object, what: str | None = None) -> ManagedSession:
        """Register an existing SparkSession as ``name``; it will never be stopped by
        this project. Artifact isolation is switched on if the session ran no query yet
        (a Spark Connect session is always isolated)."""
        check_session_name(name)
        what = what or "The object to adopt"
        backends.check_adoptable(session, what)
        with self._reserve(name):
            other = self.find(session)
            if other is not None:
                raise NotASparkSessionError(
                    f"That SparkSession is already registered as '{other.name}'."
                )
            backend, isolated = backends.adopt(session, name, what, self.config.idle_poll_interval)
            return self.register(name, backend, "adopted", isolated=isolated)

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

    @property
    def local_connect_server(self) -> LocalConnectServer | None:
        """The Spark Connect server ``--remote local`` started, if any."""
        return self.connect_endpoints.local_server

    def register(
        self, name: str, backend: SessionBackend, origin: Origin, isolated: bool
    ) -> ManagedSession:
        """Register a session of any backend under ``name`` (``create`` and ``adopt``
        end here; so does a backend of your own). Only a created session is ever
        released."""
        check_session_name(name)
        if name in self._sessions:
            raise SessionNameError(f"A session named '{name}' already exists.")
        directory = self.config.kernel_root().make_dir(f"{name}-{backend.session_id[:8]}")
        managed = ManagedSession(
            name=name,
            backend=backend,
            origin=origin,
            directory=directory,
            isolated=isolated,
            artifacts=SessionArtifacts(name, directory, backend.add_artifact),
        )
        backend.watch(self.board.operation_sink(name))
        with self._lock:
            self._sessions[name] = managed
            self._stopped.discard(name)
        # Its streaming queries go on the board as they start (PySpark is loaded now).
        streaming_calls.install(lambda session: self.tagger.suspended(), self._query_started)
        self.board_poller.start()
        self.board.wake_now()  # views list the new session at once
        return managed

    def _query_started(self, query: Any, session: object) -> None:
        """A streaming query started (``streaming_calls``): on the board under its session,
        with the cell that started it (none for a thread's)."""
        queries = self.board.queries
        managed = self.find(session)
        if managed is None:
            # Inside another query's foreachBatch the batch's session is a clone of that
            # query's: the query is that session's (its thread runs the batch's job group,
            # the outer query's run id).
            outer = queries.session_of_run(streaming_calls.batch_run_id(session))
            if outer is not None:
                queries.started(query, outer, None)
            return  # else a session of the user's own: not on the board
        cell = self.tagger.current_cell()
        queries.started(query, managed.name, cell[1] if cell else None)

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
        self.board.wake_now()  # views list the session's new file at once
        return result

    def _artifacts_of(self, name: str) -> SessionArtifacts:
        managed = self.get(name)
        managed.backend.require_usable(name)
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
        self, name: str, execution_count: int = 0, description: str = "", source: str = ""
    ) -> Iterator[SparkSession]:
        """Run a block as one job group of session ``name``: the jobs the current thread
        starts inside it carry the session's and the group's tags, and the job board
        shows them as group ``name:execution_count`` described by ``description`` (or,
        given the cell's ``source``, by the code that ran its first job)."""
        session = self.session(name)
        self.board.cell_started(name, execution_count, description, source)
        try:
            with self.tagger.tagged(self.backend(name), name, execution_count):
                yield session
        finally:
            self.board.cell_finished(name, execution_count)

    def share(self, name: str, weight: int | None, min_share: int | None) -> PoolShare:
        """Give created classic session ``name`` a new share of the task slots for its
        new jobs (what is not given stays); ConfError where that cannot apply."""
        managed = self.get(name)
        if not managed.backend.on_kernel_context:
            raise ConfError(_CONNECT_SHARES)
        if managed.origin == "adopted":
            raise ConfError(
                f"'{name}' was adopted: its jobs run where its owner put them; only the "
                "sessions this project creates get a pool of their own."
            )
        current = managed.share or DEFAULT_SHARE
        share = PoolShare(
            current.weight if weight is None else weight,
            current.min_share if min_share is None else min_share,
        )
        backend = cast("ClassicBackend", managed.backend)  # on the shared context: classic
        self.context.change_share(backend, managed.settings, share)
        managed.share = share
        return share

    # -- recovery ----------------------------------------------------------------------

    def restart(self) -> RestartReport:
        """After the driver was lost or the context stopped: start a new context on the
        previous master and settings, make every created classic session again under its
        name, with its settings and its files (from the session directory), and drop
        adopted classic sessions (their owner made them). Connect sessions are untouched."""
        with self._lock:
            on_context = [m for m in self._sessions.values() if m.backend.on_kernel_context]
        return recovery.restart(on_context, self.context, self.board, self._unregister)

    def reconnect(self, name: str) -> ManagedSession:
        """Make Connect session ``name`` again on its server (after the server was lost
        or restarted; ``--remote local``: on a new local server if ours died), with its
        settings and its files; its old server session is released if still there."""
        managed = self.get(name)
        recovery.reconnect(managed, self.connect_endpoints, self.board)
        return managed

    def _unregister(self, managed: ManagedSession) -> None:
        with self._lock:
            self._sessions.pop(managed.name, None)
            self._stopped.add(managed.name)
        managed.backend.forget()
        _remove_directory(managed.directory)

    # -- stop / shutdown ---------------------------------------------------------------

    def stop(self, name: str) -> Release:
        """Unregister ``name`` now. For a created session, also cancel its running jobs
        (without waiting) and release it in the background once they have ended.
        Never stops the shared SparkContext."""
        managed = self.get(name)
        cancelled: tuple[str, ...] = ()
        if managed.origin == "created":
            # While it is still registered.
            cancelled = self.board.request_cancel(session=name, source="stop").cancelling
            managed.backend.stopping()
            self.board.retire(name, managed.backend)
        mark_gone(managed.session, f"session '{name}', which `%spark_session stop` ended")
        with self._lock:
            del self._sessions[name]
            self._stopped.add(name)
            release = Release(name, managed.directory)
            release.cancelled = cancelled
            self._releases[name] = release
        self.board.wake_now()
        if managed.origin == "adopted":
            managed.backend.forget()
            _remove_directory(managed.directory)
            release.finish()
            return release
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
            wait_for_jobs_to_end(managed, timeout, quiet=_STOPPED_SESSION_QUIET_SECONDS)
            managed.backend.release()
            _remove_directory(managed.directory)
        except BaseException as exc:  # reported on the handle, never lost in a thread
            log.exception("releasing Spark session %r failed", managed.name)
            release.finish(exc)
        else:
            release.finish()
        finally:
            self.board.released(managed.name)
            self.connect_endpoints.released(managed.name, managed.backend.session_id)

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
        for managed in created:
            quietly(managed, "cancelling", cancel_everything)
        # Each release on its own thread, all bounded by one deadline: a dead Connect
        # server (whose client retries) must not hold up the shutdown.
        deadline = time.monotonic() + self.config.shutdown_timeout
        threads = [
            threading.Thread(target=release_at_shutdown, args=(m, deadline), daemon=True)
            for m in created
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for directory in [m.directory for m in sessions] + unreleased:
            _remove_directory(directory)
        self.context.stop_if_owned()
        self.connect_endpoints.at_shutdown()
        self.config.remove_session_roots()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


def _remove_directory(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
