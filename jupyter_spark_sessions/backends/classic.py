"""Classic PySpark sessions on the kernel's one SparkContext: isolated sessions, their
tags, cancels, files and release, and ``ClassicBackend``, the ``SessionBackend`` the
rest of the package uses.

The private PySpark and JVM calls of classic Spark live in this module and its
neighbours (``driver``: the context and its JVM; ``context_start``; ``job_feed``; and
``driver_jar`` / ``cell_scope``, the project's own JVM classes, which do in one call what
takes many from Python). Each has one wrapper, and ``tests/test_private_apis.py`` calls
every wrapper against the installed PySpark so an upgrade that breaks one fails loudly.
docs/job-tags.md and docs/files.md say why the public alternatives do not do the job.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfError, ContextStoppedError, NotASparkSessionError
from ..job_tags import session_tag
from . import api_flavour, builder_binding, call_site, cell_scope, context_binding, scheduler_pools
from .base import BackendKind, JobRef, OperationSink
from .driver import (
    context_is_stopped,
    driver_problem,
    quiet_accumulator_server,
    raised_by_a_gone_driver,
    reachable,
    require_running,
    scala_context,
)
from .job_feed import ContextJobFeed
from .local_master import UI_FILTER, UI_SECRET_CONF, workers_on_this_machine

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession


log = logging.getLogger(__name__)


#: Must be set on a session before its first query or artifact call to take effect.
ISOLATION_CONF = "spark.sql.artifact.isolation.enabled"


def ui_url(sc: SparkContext) -> str | None:
    """The address of the context's Spark UI; None when the UI is off."""
    url: str | None = sc.uiWebUrl
    return url


def ui_protected(sc: SparkContext) -> bool:
    """Whether the context's UI wants the secret of ``UiSecretFilter`` (set when this
    project started the context: ``local_master.ui_protection``)."""
    conf = sc.getConf()
    filters = [f.strip() for f in (conf.get("spark.ui.filters") or "").split(",")]
    return UI_FILTER in filters and bool(conf.get(UI_SECRET_CONF))


def is_classic_session(obj: object) -> bool:
    """True for a classic (not Spark Connect) SparkSession."""
    try:
        from pyspark.sql.session import SparkSession as ClassicSession
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return False
    return isinstance(obj, ClassicSession) and hasattr(obj, "_jsparkSession")


def new_isolated_session(root: SparkSession, conf: Mapping[str, str]) -> SparkSession:
    """A new session on ``root``'s context with its own SQL conf, temp views, UDFs and
    session-scoped artifacts; ``conf`` entries are applied after isolation is on."""
    session = root.newSession()
    session.conf.set(ISOLATION_CONF, "true")
    if not is_isolated(session):
        raise RuntimeError("Spark did not switch on artifact isolation for a new session")
    apply_session_conf(session, conf)
    return session


def try_isolate(session: SparkSession) -> bool:
    """Switch on artifact isolation for an adopted session if it is still possible
    (the session ran no query yet); leave its setting as it was when not.

    The setting goes first: looking at the artifact manager creates it, with whatever
    the setting is at that moment."""
    previous = session.conf.get(ISOLATION_CONF, None)
    session.conf.set(ISOLATION_CONF, "true")
    if is_isolated(session):
        return True
    if previous is None:
        session.conf.unset(ISOLATION_CONF)
    else:
        session.conf.set(ISOLATION_CONF, previous)
    return False


def apply_session_conf(session: SparkSession, conf: Mapping[str, str]) -> None:
    """Set SQL settings on one session; a setting Spark refuses is a ConfError."""
    from pyspark.errors import AnalysisException

    for key, value in conf.items():
        try:
            session.conf.set(key, value)
        except AnalysisException as exc:
            reason = str(exc).splitlines()[0]
            raise ConfError(
                f"Spark refused --conf {key}={value}: {reason} Context-wide settings go in "
                "SparkSessionsConfig.context_conf, before the first `create`."
            ) from None


def is_isolated(session: SparkSession) -> bool:
    """True when the session's artifacts are session-scoped (SPARK-44290)."""
    return artifact_state(session) is not None


def artifact_state(session: SparkSession) -> Any:
    """The JVM ``JobArtifactState`` of an isolated session (None when not isolated)."""
    return session._jsparkSession.sessionState().artifactManager().state()  # private


def session_uuid(session: SparkSession) -> str:
    """Spark's UUID of the session (names its artifact folders)."""
    return str(session._jsparkSession.sessionUUID())  # private


def session_job_tag(session: SparkSession) -> str:
    """The tag Spark puts on every SQL job of the session (``spark-session-<uuid>``)."""
    return str(session._jsparkSession.sessionJobTag())  # private


def active_job_ids(sc: SparkContext, tags: Iterable[str]) -> set[int]:
    """Ids of the running jobs that carry any of ``tags``."""
    tracker = scala_context(sc).statusTracker()  # private: no getJobIdsForTag in PySpark
    tagged: set[int] = set()
    for tag in tags:
        tagged.update(int(job_id) for job_id in tracker.getJobIdsForTag(tag))
    if not tagged:
        return tagged
    return tagged & set(sc.statusTracker().getActiveJobsIds())


def cancel_job(sc: SparkContext, job_id: int) -> None:
    """Ask Spark to cancel one job (PySpark wraps no ``cancelJob``)."""
    scala_context(sc).cancelJob(job_id)  # private: the JVM SparkContext


def clear_active_session(session: SparkSession) -> None:
    """If ``session`` is the active session, make the context's default one active."""
    from pyspark.sql import SparkSession

    if SparkSession._activeSession is not session:  # private
        return
    default = SparkSession._instantiatedSession  # private
    jclass = SparkSession._get_j_spark_session_class(session.sparkContext._jvm)  # private
    if default is not None and default is not session:
        jclass.setActiveSession(default._jsparkSession)
    else:
        jclass.clearActiveSession()
    SparkSession._activeSession = default


def close_artifacts(session: SparkSession) -> None:
    """Remove the session's files from the file server and its artifact folder."""
    session._jsparkSession.artifactManager().close()  # private


def drop_temp_views(session: SparkSession) -> None:
    """Drop the session's temporary views (which also uncaches them). Never
    ``catalog.clearCache()``: that clears every session's cache.

    Listed from the session's own temp views (private ``SessionCatalog``):
    ``catalog.listTables()`` would set up Spark's external catalog, which makes a
    ``spark-warehouse/`` folder in the kernel's working folder, beside the notebook."""
    views = session._jsparkSession.sessionState().catalog().listLocalTempViews("*")
    for name in [views.apply(i).table() for i in range(views.size())]:
        session.catalog.dropTempView(name)


def stop_streaming_queries(session: SparkSession) -> None:
    """Stop the session's own streaming queries."""
    for query in session.streams.active:
        query.stop()


def require_session(obj: Any, what: str) -> SparkSession:
    """Return ``obj`` as a classic SparkSession, or raise NotASparkSessionError."""
    if is_classic_session(obj):
        session: SparkSession = obj
        return session
    kind = type(obj).__module__ + "." + type(obj).__qualname__
    raise NotASparkSessionError(f"{what} is a {kind}, not a SparkSession.")


def add_session_artifact(
    session: SparkSession, remote_path: str, staged: str, fragment: str | None = None
) -> None:
    """Register a file with the session's own artifact manager (SPARK-44290).

    ``remote_path`` is ``files/<name>``, ``archives/<name>`` (unpacked on executors into
    ``<fragment>/``) or ``pyfiles/<name>``. Spark *moves* ``staged`` into its artifact
    folder (a rename on the same file system). The public ``addArtifacts`` of classic
    PySpark calls the global ``sc.addFile``, which is not isolated."""
    jvm = session.sparkContext._jvm  # private
    assert jvm is not None

    def path(p: str) -> Any:
        return jvm.java.io.File(p).toPath()

    option = (
        jvm.scala.Option.apply(fragment)
        if fragment is not None
        else getattr(getattr(jvm.scala, "None$"), "MODULE$")
    )
    manager = session._jsparkSession.artifactManager()  # private
    manager.addArtifact(path(remote_path), path(staged), option, True)


@dataclass
class _ThreadTags:
    """What ``ClassicBackend.tag_thread`` changed on one thread, to undo it."""

    tags: tuple[str, ...]
    python_active_before: Any = None  # PySpark's process-wide active session before
    flavour_before: str | None = None  # SPARK_CONNECT_MODE_ENABLED before
    tags_set: bool = False  # False when the driver was unreachable: nothing to undo


class ClassicBackend:
    """A classic session on the kernel's shared SparkContext (``SessionBackend``)."""

    kind: BackendKind = "classic"
    on_kernel_context = True

    def __init__(
        self, session: SparkSession, name: str, isolated: bool, pool: str | None = None
    ) -> None:
        self.name = name
        self.session = session
        quiet_accumulator_server(session.sparkContext)
        call_site.install()  # jobs named after the user's line (`count at In [4] line 2`)
        self.session_id = session_uuid(session)
        self.spark_session_tag = session_job_tag(session)
        #: Together they cover every job of the session: Spark's own session tag (SQL
        #: jobs from any thread) and this project's (RDD jobs of its bound cells).
        self.session_tags = (self.spark_session_tag, session_tag(name))
        # What a cell's RDD jobs run in: the session's JVM artifact state (its files, as
        # for its queries). Fixed for the session's life: read once.
        self._artifact_state = artifact_state(session) if isolated else None
        #: The scheduler pool its cells' RDD jobs run in (its SQL jobs: through its
        #: settings); None: the thread's.
        self.pool = pool
        self._ui: tuple[SparkContext, str, bool] | None = None  # fixed for a context's life
        self._share: tuple[SparkContext, str] | None = None
        self._slots: tuple[SparkContext, float, int] | None = None

    @property
    def sc(self) -> SparkContext:
        sc: SparkContext = self.session.sparkContext
        return sc

    def where(self) -> str:
        return str(self.sc.master)  # a Python attribute: no JVM round trip

    def _pool(self) -> tuple[str | None, scheduler_pools.PoolShare | None]:
        """(pool, its shares) of the session's jobs; (None, None) on a FIFO context."""
        sc = self.sc
        if scheduler_pools.mode(sc) != "FAIR":
            return None, None
        pool = self.session.conf.get(scheduler_pools.POOL, None)
        shares = scheduler_pools.pool_weights(sc, pool) if pool else None
        return pool, scheduler_pools.PoolShare(*shares) if shares else None

    def scheduling(self) -> str:
        pool, share = self._pool()
        if pool is None and share is None:
            return "FIFO: one queue for every session's jobs (spark.scheduler.mode)"
        if pool is None or share is None:
            return "FAIR, in the default pool"
        if pool == scheduler_pools.pool_name(self.name, share):
            return f"FAIR, in its own pool ({scheduler_pools.describe(share)})"
        return f"FAIR, in your pool '{pool}' ({scheduler_pools.describe(share)})"

    def share(self) -> str:
        if self._share is None or self._share[0] is not self.sc:  # read once per context
            pool, share = self._pool()
            text = scheduler_pools.describe(share) if pool and share else ""
            if pool and share and pool != scheduler_pools.pool_name(self.name, share):
                text = f"pool '{pool}'"
            self._share = (self.sc, text)
        return self._share[1]

    def slots(self) -> int:
        sc, now = self.sc, time.monotonic()
        if self._slots is None or self._slots[0] is not sc or now - self._slots[1] > 10:
            # Executors come and go on a cluster: read again now and then.
            self._slots = (sc, now, int(sc.defaultParallelism))
        return self._slots[2]

    def set_pool(self, pool: str) -> None:
        """Run the session's new jobs, SQL and its cells' RDD jobs, in ``pool``."""
        self.session.conf.set(scheduler_pools.POOL, pool)
        self.pool = pool
        self._share = None

    def location(self) -> str:
        return self.where()

    def worker_python(self) -> tuple[bool, str]:
        # Executors run the driver's choice (spark.pyspark.python, PYSPARK_PYTHON).
        return workers_on_this_machine(self.where()), self.sc.pythonExec or "python3"

    def require_usable(self, name: str) -> None:
        require_running(self.sc, name)

    def ui_url(self) -> str:
        return self._ui_of_context()[1]

    def ui_note(self) -> str:
        return "" if self.ui_url() else "off (spark.ui.enabled is false)"

    def ui_protected(self) -> bool:
        return self._ui_of_context()[2]

    def _ui_of_context(self) -> tuple[SparkContext, str, bool]:
        sc = self.sc
        if self._ui is None or self._ui[0] is not sc:
            url = ui_url(sc) or ""
            self._ui = (sc, url, bool(url) and ui_protected(sc))
        return self._ui

    def operations_page(self) -> str:
        return ""

    def problem(self) -> str:
        return driver_problem(self.sc, recent=True)

    def explain(self, error: BaseException, bound: bool) -> str:
        if not raised_by_a_gone_driver(error):
            return ""
        problem = driver_problem(self.sc)
        return f"Session '{self.name}' is unusable: {problem}." if problem else ""

    def running_jobs(self) -> int:
        if context_is_stopped(self.sc):
            return 0
        return len(active_job_ids(self.sc, self.session_tags))

    def job_feed(self) -> ContextJobFeed | None:
        # No round trip: the feed's own read says when the JVM stopped the context.
        sc = self.sc
        return ContextJobFeed.of(sc) if reachable(sc) else None

    def stage_source(self) -> None:
        return None  # the job feed reads the stages with the jobs

    def watch(self, sink: OperationSink) -> None:
        """Nothing to do: the board polls the context's status store."""

    def cancel_jobs(self, refs: tuple[JobRef, ...]) -> None:
        sc = self.sc
        if not context_is_stopped(sc):
            for job_id in refs:
                cancel_job(sc, int(job_id))

    def cancel_session(self) -> None:
        self.cancel_tag(self.spark_session_tag)

    def cancel_tag(self, tag: str) -> None:
        sc = self.sc
        if not context_is_stopped(sc):
            sc.cancelJobsWithTag(tag)

    def tag_thread(self, tags: tuple[str, ...]) -> _ThreadTags:
        from pyspark.sql import SparkSession

        applied = _ThreadTags(tags)
        sc = self.sc
        if not reachable(sc):  # stopped or lost: its jobs cannot run, nothing to tag
            return applied
        # In the JVM, one round trip: tags, interrupt on cancel (without it, cancelling
        # an RDD job leaves its tasks running), the session's artifact state for RDD
        # jobs, Spark's active session of the thread.
        cell_scope.enter(sc, tags, self.session._jsparkSession, self._thread_state(), self.pool)
        applied.tags_set = True
        # In PySpark (one per process), what getActiveSession() returns.
        applied.python_active_before = SparkSession._activeSession  # private
        SparkSession._activeSession = self.session
        builder_binding.bind(self.session, self.name, connect=False)  # getOrCreate()
        context_binding.install()  # SparkContext(...), SparkSession(sc), SQLContext
        applied.flavour_before = api_flavour.use(connect=False)
        return applied

    def untag_thread(self, applied: _ThreadTags) -> None:
        from pyspark.sql import SparkSession

        builder_binding.unbind(self.session)
        sc = self.sc
        if not reachable(sc) or not applied.tags_set:  # stopped or lost meanwhile
            return
        cell_scope.exit(sc)
        SparkSession._activeSession = applied.python_active_before  # private
        api_flavour.restore(applied.flavour_before)

    def _thread_state(self) -> Any:
        # Thread-local JVM state reaches a Python thread's jobs only when PySpark pins
        # each Python thread to a JVM thread (its default).
        if os.environ.get("PYSPARK_PIN_THREAD", "true").lower() != "true":
            return None
        return self._artifact_state

    def add_artifact(self, remote_path: str, staged: Path, fragment: str | None) -> None:
        add_session_artifact(self.session, remote_path, str(staged), fragment)

    def release(self, quick: bool = False) -> None:
        if context_is_stopped(self.sc):
            return
        if not quick:  # temp views and streams live in the JVM, which ends with the kernel
            stop_streaming_queries(self.session)
            drop_temp_views(self.session)
        close_artifacts(self.session)

    def stopping(self) -> None:
        if not context_is_stopped(self.sc):
            clear_active_session(self.session)

    def forget(self) -> None:
        """Nothing to undo: an adopted classic session is only unregistered."""


def create(root: SparkSession, name: str, conf: Mapping[str, str]) -> ClassicBackend:
    """A new isolated session ``name`` on ``root``'s context (``new_isolated_session``)."""
    with api_flavour.classic():
        session = new_isolated_session(root, conf)
        return ClassicBackend(session, name, isolated=True, pool=conf.get(scheduler_pools.POOL))


def check_adoptable(obj: object, what: str) -> None:
    """NotASparkSessionError / ContextStoppedError unless ``obj`` can be adopted."""
    spark = require_session(obj, what)
    if context_is_stopped(spark.sparkContext):
        raise ContextStoppedError(
            "That SparkSession's SparkContext is stopped: there is nothing to adopt."
        )


def adopt(obj: object, name: str, what: str) -> tuple[ClassicBackend, bool]:
    """A backend for the user's own classic session, isolated if it still can be."""
    check_adoptable(obj, what)
    spark = require_session(obj, what)
    isolated = try_isolate(spark)
    return ClassicBackend(spark, name, isolated), isolated
