"""Classic PySpark (one SparkContext in the kernel's JVM): with ``driver_jar`` and
``cell_scope`` (the project's own JVM classes, which do in one call what takes many from
Python), the only module that touches private PySpark and JVM APIs.

Each private call has one wrapper here, and ``tests/test_private_apis.py`` calls every
wrapper against the installed PySpark so an upgrade that breaks one fails loudly.
docs/job-tags.md and docs/files.md say why the public alternatives do not do the job.
``ClassicBackend`` is the ``SessionBackend`` the rest of the package uses.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import logging
import os
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfError, ContextStoppedError, NotASparkSessionError
from ..job_tags import session_tag
from . import api_flavour, call_site, cell_scope, driver_jar
from .base import BackendKind, JobRef, OperationSink

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: Must be set on a session before its first query or artifact call to take effect.
ISOLATION_CONF = "spark.sql.artifact.isolation.enabled"


def active_context() -> SparkContext | None:
    """The SparkContext running in this process, or None."""
    from pyspark import SparkContext

    sc: SparkContext | None = SparkContext._active_spark_context  # private
    return sc


def gateway_process() -> subprocess.Popen[bytes] | None:
    """The JVM process PySpark launched for this kernel, or None (no JVM yet, or one
    started outside Python and reached through PYSPARK_GATEWAY_PORT)."""
    pyspark = sys.modules.get("pyspark")
    if pyspark is None:  # never imported: no JVM, and no reason to import it now
        return None
    gateway = pyspark.SparkContext._gateway  # private; class attribute set on first start
    proc: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)  # private
    return proc


DriverState = Literal["running", "stopped", "lost"]


def driver_state(sc: SparkContext, recent: bool = False) -> DriverState:
    """ "running"; "stopped" (``stop()`` from Python, or a fatal error in the JVM); or
    "lost": its JVM exited or cannot be reached (killed, out of memory), or a newer
    driver replaced it (``forget_lost_driver``). ``recent``: a "running" seen within
    the last second will do (the board's views, asked for every session of a poll)."""
    from py4j.protocol import Py4JError

    if getattr(sc, "_jss_driver_lost", False):  # forgotten after its JVM died
        return "lost"
    if sc._jsc is None:  # private; PySpark sets it to None on stop()
        return "stopped"
    gateway = _gateway_of(sc)
    proc = getattr(gateway, "proc", None)  # private; None for a JVM started outside Python
    if gateway is None or (proc is not None and proc.poll() is not None):
        return "lost"  # known without a round trip (which would end in ConnectionRefused)
    checked = getattr(sc, "_jss_running_at", None)
    if recent and checked is not None and time.monotonic() - checked < _RUNNING_FOR:
        return "running"
    try:
        stopped = bool(_scala_context(sc).isStopped())
    except (Py4JError, OSError):  # the JVM died a moment ago
        return "lost"
    if stopped:
        return "stopped"
    sc._jss_running_at = time.monotonic()  # type: ignore[attr-defined]
    return "running"


#: How long a context seen running is taken to still run by views (``recent``), unless
#: Python stopped it or its JVM exited (both seen without a round trip). A JVM dying
#: this moment is seen at once everywhere else: by the cell's error, the magics.
_RUNNING_FOR = 1.0


def _scala_context(sc: SparkContext) -> Any:
    # ``sc._jsc.sc()`` kept: asked anew, it costs a round trip and another to free it.
    scala = getattr(sc, "_jss_scala_context", None)
    if scala is None or scala._gateway_client is not sc._jsc._gateway_client:  # private
        scala = sc._jss_scala_context = sc._jsc.sc()  # type: ignore[attr-defined]
    return scala


def _gateway_of(sc: SparkContext) -> Any:
    """PySpark's gateway if ``sc`` talks through it (None once it was replaced)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway  # private; class attribute, None once forgotten
    client = getattr(gateway, "_gateway_client", None)  # private (py4j)
    jsc = sc._jsc  # private
    if gateway is None or jsc is None or jsc._gateway_client is not client:
        return None
    return gateway


def _reachable(sc: SparkContext) -> bool:
    # Without a round trip: a context stopped from Python, or a JVM known to be gone.
    gateway = _gateway_of(sc)
    proc = getattr(gateway, "proc", None)  # private
    return gateway is not None and (proc is None or proc.poll() is None)


def context_is_stopped(sc: SparkContext) -> bool:
    """True when ``sc`` cannot run jobs: stopped, or its driver lost."""
    return driver_state(sc) != "running"


def restart_hint(master: str | None) -> str:
    return (
        f"run `%spark_session restart` to start a new one on {master} with your sessions "
        "and their files"
    )


def driver_problem(sc: SparkContext, recent: bool = False) -> str:
    """Why ``sc`` cannot run jobs, in one line with the way out; "" when it can
    (``recent``: as for ``driver_state``)."""
    state = driver_state(sc, recent)
    if state == "running":
        return ""
    if state == "stopped":
        return (
            "its SparkContext was stopped outside jupyter_spark_sessions (spark.stop()?): "
            + restart_hint(sc.master)
        )
    proc = getattr(_gateway_of(sc), "proc", None)  # private
    code = None
    if proc is not None:  # a JVM that just broke its connection may still be exiting
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = proc.wait(0.5)
    how = "its JVM cannot be reached"
    if code is not None:
        how = f"its JVM exited with signal {-code}" if code < 0 else f"its JVM exited ({code})"
    return f"the Spark driver of this kernel is gone ({how}): " + restart_hint(sc.master)


def _raised_by_a_gone_driver(error: BaseException) -> bool:
    # How PySpark fails on a dead JVM (py4j, sockets) or a stopped context (its
    # ``_jsc`` is None); a Java exception from a live driver is a Py4JError too, which
    # the caller tells apart by asking the driver.
    from py4j.protocol import Py4JError

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (Py4JError, ConnectionError, EOFError)):
            return True
        if isinstance(current, AttributeError) and "'NoneType' object" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def require_running(sc: SparkContext, name: str) -> None:
    """Raise ContextStoppedError, saying how to recover, unless ``sc`` runs."""
    problem = driver_problem(sc)
    if problem:
        raise ContextStoppedError(f"Session '{name}' is unusable: {problem}.")


def forget_lost_driver(sc: SparkContext) -> None:
    """Let PySpark launch a new JVM after ``sc``'s died or was stopped: clear what it
    keeps of the old one (the gateway, the active context and sessions). Private."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if driver_state(sc) == "lost":
        sc._jss_driver_lost = True  # type: ignore[attr-defined]  # still lost once forgotten
    with warnings.catch_warnings(), contextlib.suppress(Exception):
        warnings.simplefilter("ignore")  # "Unable to cleanly shutdown Spark JVM process"
        sc.stop()
    # What stop() does after its JVM call, which raises (not only Py4JError) on a dead JVM.
    sc._jsc = None
    server, sc._accumulatorServer = getattr(sc, "_accumulatorServer", None), None  # type: ignore[assignment]
    if server is not None:
        with contextlib.suppress(Exception):
            server.shutdown()
    with SparkContext._lock:
        if SparkContext._active_spark_context is sc:
            SparkContext._active_spark_context = None
    gateway = SparkContext._gateway
    if gateway is not None and _gateway_is_dead(gateway):
        SparkContext._gateway, SparkContext._jvm = None, None
        with contextlib.suppress(Exception):
            gateway.close()  # the Python side of the dead connection
    SparkSession._instantiatedSession = None  # private
    SparkSession._activeSession = None  # private


def _current_gateway() -> Any:
    from pyspark import SparkContext

    return SparkContext._gateway  # private


def _gateway_is_dead(gateway: Any, wait: float = 0.0) -> bool:
    # ``wait``: a JVM whose connection just broke may still be exiting.
    from py4j.protocol import Py4JError

    proc = getattr(gateway, "proc", None)  # private
    if proc is not None:
        if not wait:
            return proc.poll() is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
        return proc.returncode is not None
    try:  # a JVM started outside Python (PYSPARK_GATEWAY_PORT): ask it
        gateway.jvm.java.lang.System.currentTimeMillis()
    except (Py4JError, OSError):
        return True
    return False


#: Settings Spark or PySpark put on every context: not the user's, and wrong for the
#: next one (its ids, ports and start times).
_RUNTIME_SETTINGS = (
    "spark.app.id",
    "spark.app.startTime",
    "spark.app.submitTime",
    "spark.app.initial.",
    "spark.driver.port",
    "spark.driver.host",
    "spark.executor.id",
    "spark.master",
    "spark.submit.",
    "spark.ui.proxyBase",
)


def context_settings(sc: SparkContext) -> dict[str, str]:
    """The settings of a running context that a new one should repeat (no ids, ports
    or times Spark added)."""
    return {
        key: value for key, value in sc.getConf().getAll() if not key.startswith(_RUNTIME_SETTINGS)
    }


def start_context(
    master: str, app_name: str, conf: Mapping[str, str], scratch_dir: str | None = None
) -> SparkSession:
    """Start the kernel's SparkContext and return its root session. On a local master,
    its driver and UI listen on loopback and its scratch files go to ``scratch_dir``
    (see ``local_master_defaults``); its JVM logs only what a notebook user needs
    (``quiet_logging_env``); ``conf`` wins over every default."""
    from pyspark.sql import SparkSession

    # Executors' Python workers must run the kernel's interpreter, which has pyarrow
    # and the user's packages; an explicit setting by the user wins.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    defaults = {**OWNED_CONTEXT_DEFAULTS, **local_master_defaults(master)}
    builder = SparkSession.builder.master(master).appName(app_name)
    if is_local_master(master):  # executors run this interpreter, with this package
        defaults.update(LOCAL_CONTEXT_DEFAULTS)
    for key, value in {**defaults, **conf}.items():
        builder = builder.config(key, value)
    env = local_master_env(master)
    users = "spark.local.dir" in conf or "SPARK_LOCAL_DIRS" in os.environ
    if scratch_dir and is_local_master(master) and not users:
        env["SPARK_LOCAL_DIRS"] = scratch_dir  # not spark.local.dir: Spark warns at each start
    env.update(quiet_logging_env(conf))
    _drop_py4j_tracebacks_of_a_dead_jvm()
    with _environ(env), api_flavour.classic():
        session = builder.getOrCreate()
    try:  # the UI's root stays under a proxy (Spark UI links through the Jupyter server)
        driver_jar.instance(session.sparkContext, "jss.UiRootRedirect")
    except Exception:  # a UI without it only links its logo outside the proxy
        log.warning("could not make the Spark UI's root redirect relative", exc_info=True)
    return session


class _DeadJvmLogFilter(logging.Filter):
    """py4j logs a traceback through the root logger for the call that finds the JVM
    dead; the cell's own error already says so in one line (``ClassicBackend.explain``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() != "Exception while sending command.":
            return True
        gateway = _current_gateway()
        return not (gateway is not None and _gateway_is_dead(gateway, wait=0.5))


_DEAD_JVM_LOG_FILTER = _DeadJvmLogFilter()


def _drop_py4j_tracebacks_of_a_dead_jvm() -> None:
    logging.getLogger().addFilter(_DEAD_JVM_LOG_FILTER)  # once: filters are a set


def quiet_accumulator_server(sc: SparkContext) -> None:
    """PySpark's accumulator server (a socketserver thread, private) prints a traceback
    to stderr, into the running cell, when the JVM's connection to it breaks (the JVM
    died: the cell says so in one line); any other error it still prints."""
    server = getattr(sc, "_accumulatorServer", None)  # private
    if server is None or getattr(server, "_jss_quiet", False):
        return
    report = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        # Called inside the handler's except block; a JVM that went away mid-read
        # shows as EOF or a reset connection (it may not be reaped yet).
        if not isinstance(sys.exc_info()[1], (EOFError, ConnectionError)):
            report(request, client_address)

    server.handle_error = handle_error
    server._jss_quiet = True


#: The JVM's logging for a context this project starts: Spark's own defaults at WARN
#: (what its shells use), without the lines every start or cancel prints (native
#: Hadoop, killed tasks, interrupted Python workers), which would land in whatever
#: cell runs next.
LOG_CONFIG = Path(__file__).resolve().parent.parent / "spark-log4j2.properties"


def quiet_logging_env(conf: Mapping[str, str]) -> dict[str, str]:
    """``SPARK_SUBMIT_OPTS`` that points the driver's log4j at ``LOG_CONFIG``; nothing
    when the user configured log4j (SPARK_CONF_DIR/log4j2.properties, or
    log4j2.configurationFile in SPARK_SUBMIT_OPTS or spark.driver.extraJavaOptions)."""
    opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
    own = "log4j2.configurationFile" in opts + conf.get("spark.driver.extraJavaOptions", "")
    conf_dir = os.environ.get("SPARK_CONF_DIR") or os.path.join(
        os.environ.get("SPARK_HOME", "/nonexistent"), "conf"
    )
    if own or os.path.exists(os.path.join(conf_dir, "log4j2.properties")):
        return {}
    return {"SPARK_SUBMIT_OPTS": f"{opts} -Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}".strip()}


def is_local_master(master: str) -> bool:
    """True for a master whose executors all run on this machine (local, local-cluster)."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def local_master_defaults(master: str, scratch_dir: str | None = None) -> dict[str, str]:
    """Settings that keep a Spark this project starts on a local master private: its
    driver listens on loopback (unless the user's SPARK_LOCAL_IP says where Spark binds),
    and its scratch files (shuffle and spill data, the executors' copies of session files)
    go to ``scratch_dir``, inside the kernel's private folder (unless the user's
    SPARK_LOCAL_DIRS says where; the kernel's context gets it as SPARK_LOCAL_DIRS, see
    ``start_context``). Nothing for other masters."""
    if not is_local_master(master):
        return {}
    defaults = dict(LOCAL_MASTER_DEFAULTS) if "SPARK_LOCAL_IP" not in os.environ else {}
    if scratch_dir and "SPARK_LOCAL_DIRS" not in os.environ:
        defaults["spark.local.dir"] = scratch_dir
    return defaults


def local_master_env(master: str) -> dict[str, str]:
    """Environment for the JVM of a local master: ``SPARK_LOCAL_IP`` on loopback unless
    the user set it. Spark's UI binds to SPARK_LOCAL_IP, else to every interface; no
    setting moves it. local-cluster's master, workers and executors inherit it."""
    if is_local_master(master) and "SPARK_LOCAL_IP" not in os.environ:
        return {"SPARK_LOCAL_IP": LOOPBACK}
    return {}


@contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    # PySpark copies os.environ into the JVM it launches (once per kernel): set the
    # values only around that launch, so the kernel's own children do not inherit them.
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def ui_url(sc: SparkContext) -> str | None:
    """The address of the context's Spark UI; None when the UI is off."""
    url: str | None = sc.uiWebUrl
    return url


def root_session(sc: SparkContext) -> SparkSession:
    """The default session of a running context, to derive new sessions from.

    Uses PySpark's own instantiated session when it belongs to ``sc``, so that no
    setting of the user's session is touched.
    """
    from pyspark.sql import SparkSession

    existing = SparkSession._instantiatedSession  # private
    if existing is not None and existing._sc is sc:
        return existing
    return SparkSession(sc)


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
    tracker = sc._jsc.sc().statusTracker()  # private: PySpark wraps no getJobIdsForTag
    tagged: set[int] = set()
    for tag in tags:
        tagged.update(int(job_id) for job_id in tracker.getJobIdsForTag(tag))
    if not tagged:
        return tagged
    return tagged & set(sc.statusTracker().getActiveJobsIds())


def cancel_job(sc: SparkContext, job_id: int) -> None:
    """Ask Spark to cancel one job (PySpark wraps no ``cancelJob``)."""
    sc._jsc.sc().cancelJob(job_id)  # private: the JVM SparkContext


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
    ``catalog.clearCache()``: that clears every session's cache."""
    for table in session.catalog.listTables():
        if table.isTemporary and table.tableType == "TEMPORARY":
            session.catalog.dropTempView(table.name)


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


#: Settings for a SparkContext this project starts (the user's context_conf wins):
#: free executor slots soon after a cancel, keep the status store current for the job
#: board, and leave progress display to the board's views instead of the cell's stderr.
OWNED_CONTEXT_DEFAULTS = {
    # PySpark waits this long for a killed task's Python worker to exit (default 2s).
    "spark.python.task.killTimeout": "0s",
    # Write every status event to the store: with the 100ms default, the last task
    # events of a burst can stay unwritten until the next executor heartbeat (10s).
    "spark.ui.liveUpdate.period": "0ms",
    "spark.ui.showConsoleProgress": "false",
    # Anyone who reaches the UI could kill any session's jobs; cancel is this project's.
    "spark.ui.killEnabled": "false",
}

LOOPBACK = "127.0.0.1"

#: Also for a context this project starts on a local master (local, local-cluster): its
#: driver listens on loopback only, since nothing outside the machine needs to reach it.
LOCAL_MASTER_DEFAULTS = {
    "spark.driver.bindAddress": LOOPBACK,  # the RPC and block manager ports
    "spark.driver.host": LOOPBACK,  # the address executors and the UI link use
}


#: Added for local masters (``local[...]``, ``local-cluster[...]``), whose Python
#: workers run the kernel's interpreter: keep them out of the kernel's process group,
#: so that an Interrupt reaches only the interrupted cell's tasks (``spark_daemon``).
LOCAL_CONTEXT_DEFAULTS = {
    "spark.python.daemon.module": "jupyter_spark_sessions.spark_daemon",
}


class JobStatusReader:
    """Reads Spark's job status store (``sc.statusStore()``, private: it has the job tags
    and task counts the public status tracker lacks) in one py4j round trip per poll:
    ``jss.BoardReader`` (java/jss/BoardReader.java) reads what the feed asks for and
    answers with one (compressed) JSON text. Read field by field from Python, a poll with 50 running
    jobs took over 200 round trips. Call it from one thread (py4j gives each Python
    thread its own connection; the first call on a thread pays for opening it)."""

    def __init__(self, sc: SparkContext) -> None:
        self._reader = driver_jar.instance(sc, "jss.BoardReader")
        # Ending killed tasks' workers at once uses Spark internals (KilledTaskWorkers.java).
        problem = self._reader.killedTaskWorkersProblem()
        if problem:
            log.warning("cancelled Python tasks keep Spark's timing (0-2 s): %s", problem)

    def read(self, asked: Iterable[int], from_job_id: int, limit: int) -> dict[str, Any]:
        """``stopped``; ``total`` (jobs submitted so far: ids 0..total-1); ``running``
        (Spark's ``JobData`` of every running job); ``jobs`` (the ``JobData`` of the
        ``asked`` ids and of those from ``from_job_id`` up (negative: the last
        ``-from_job_id``) that are not running, at most ``limit``, the newest);
        ``missing`` (ids among those the store does not have); ``stages`` (task counts,
        ``SparkStageInfo``, of the running jobs' active stages)."""
        text = self._reader.read(",".join(map(str, sorted(asked))), from_job_id, limit)
        # gzip + base64: py4j holds a reply over 8 KiB ~40 ms (BoardReader.java).
        reply: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(text)))
        return reply


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


# -- the backend -------------------------------------------------------------------------

# How many ended jobs one poll fetches at most; older ones are skipped (a burst of
# thousands of tiny jobs between two polls must not stall the board).
_MAX_ENDED_PER_POLL = 200
# How many polls a job Spark counted may be missing from its status store before the
# board stops asking (it was evicted, or the listener bus dropped its events).
_MAX_MISSES = 40


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

    def __init__(self, session: SparkSession, name: str, isolated: bool) -> None:
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
        self._ui_url: tuple[SparkContext, str] | None = None

    @property
    def sc(self) -> SparkContext:
        sc: SparkContext = self.session.sparkContext
        return sc

    def where(self) -> str:
        return str(self.sc.master)  # a Python attribute: no JVM round trip

    def require_usable(self, name: str) -> None:
        require_running(self.sc, name)

    def ui_url(self) -> str:
        sc = self.sc
        if self._ui_url is None or self._ui_url[0] is not sc:  # fixed for a context's life
            self._ui_url = (sc, ui_url(sc) or "")
        return self._ui_url[1]

    def problem(self) -> str:
        return driver_problem(self.sc, recent=True)

    def explain(self, error: BaseException, bound: bool) -> str:
        if not _raised_by_a_gone_driver(error):
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
        return ContextJobFeed.of(sc) if _reachable(sc) else None

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
        if not _reachable(sc):  # stopped or lost: its jobs cannot run, nothing to tag
            return applied
        # In the JVM, one round trip: tags, interrupt on cancel (without it, cancelling
        # an RDD job leaves its tasks running), the session's artifact state for RDD
        # jobs, Spark's active session of the thread.
        cell_scope.enter(sc, tags, self.session._jsparkSession, self._thread_state())
        applied.tags_set = True
        # In PySpark (one per process), what getActiveSession() returns.
        applied.python_active_before = SparkSession._activeSession  # private
        SparkSession._activeSession = self.session
        applied.flavour_before = api_flavour.use(connect=False)
        return applied

    def untag_thread(self, applied: _ThreadTags) -> None:
        from pyspark.sql import SparkSession

        sc = self.sc
        if not _reachable(sc) or not applied.tags_set:  # stopped or lost meanwhile
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
        return ClassicBackend(new_isolated_session(root, conf), name, isolated=True)


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


_FEEDS: dict[str, ContextJobFeed] = {}
# Spark's tag on every SQL job of a session (``sessionJobTag``); the tags of
# ``SparkSession.addTag`` extend it with ``-thread-...`` and are not a session's.
_SESSION_TAG = re.compile(r"spark-session-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")


def _is_session_tag(tag: str) -> bool:
    return tag.startswith("spark-session-") and _SESSION_TAG.fullmatch(tag) is not None


class ContextJobFeed:
    """The jobs of one SparkContext, read for the board (``JobFeed``); one per context,
    used from the board's thread only (see ``JobStatusReader``)."""

    @classmethod
    def of(cls, sc: SparkContext) -> ContextJobFeed:
        """The feed of ``sc`` (made on first use; one context at a time in a process)."""
        feed = _FEEDS.get("current")
        if feed is None or feed._sc is not sc:
            feed = _FEEDS["current"] = cls(sc, JobStatusReader(sc))
        return feed

    def __init__(self, sc: SparkContext, reader: JobStatusReader) -> None:
        self._sc = sc
        self._reader = reader
        #: Jobs from before the first session are not ours; the last 50 may be.
        self._last_total = -50
        self._last_running: set[int] = set()
        #: Job ids Spark counted whose data its status store has not written yet
        #: (listener events arrive after submission), with how many polls missed them.
        self._unwritten: dict[int, int] = {}
        self._stages: list[dict[str, Any]] = []

    def poll(self, also: Iterable[int]) -> list[dict[str, Any]]:
        asked = self._last_running | set(self._unwritten) | set(also)
        reply = self._reader.read(asked, self._last_total, _MAX_ENDED_PER_POLL)
        if reply["stopped"]:
            self._stages = []
            return []
        total = int(reply["total"])
        running: list[dict[str, Any]] = reply["running"]
        fetched: list[dict[str, Any]] = reply["jobs"]
        first_new = self._last_total if self._last_total >= 0 else max(0, total + self._last_total)
        new = range(first_new, total)
        for data in fetched:
            self._unwritten.pop(int(data["jobId"]), None)
        for job_id in map(int, reply["missing"]):
            if job_id in new or job_id in self._unwritten:  # not written yet: ask again
                misses = self._unwritten.get(job_id, 0) + 1
                if misses < _MAX_MISSES:
                    self._unwritten[job_id] = misses
                else:  # evicted (spark.ui.retainedJobs), or never to come
                    self._unwritten.pop(job_id, None)
        # A job read one by one may still run (it started between the two reads):
        # read it again next time, as every running job.
        self._last_total = total
        self._last_running = {
            int(d["jobId"]) for d in running + fetched if d.get("status") == "RUNNING"
        }
        self._stages = reply["stages"]
        jobs = running + fetched
        for data in jobs:  # the session Spark ran it in (SQL jobs only)
            tags = data.get("jobTags", ())
            data["sparkSession"] = next((t for t in tags if _is_session_tag(t)), "")
        return jobs

    def running_stages(self, stage_ids: Iterable[int]) -> list[dict[str, Any]]:
        # Read with the jobs, in the same round trip.
        wanted = set(stage_ids)
        return [d for d in self._stages if int(d["stageId"]) in wanted]
