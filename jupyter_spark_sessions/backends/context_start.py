"""Starting the kernel's SparkContext: the settings this project gives a context it
starts (the user's win), its JVM's quiet logging, the settings a new context repeats
after a stop, and the root session new sessions derive from.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from . import api_flavour, driver, driver_jar, java_tmpdir, jvm_stderr
from .driver import drop_py4j_tracebacks_of_a_dead_jvm
from .local_master import (
    UI_FILTER,
    UI_SECRET_CONF,
    authenticate_defaults,
    is_local_master,
    local_master_defaults,
    local_master_env,
    python_daemon_defaults,
    ui_protection,
    write_ui_secret,
)

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


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
    "spark.jss.",  # the UI filter's secret: each context gets its own
)


def context_settings(sc: SparkContext) -> dict[str, str]:
    """The settings of a running context that a new one should repeat (no ids, ports
    or times Spark added)."""
    return {
        key: value
        for key, value in sc.getConf().getAll()
        if not key.startswith(_RUNTIME_SETTINGS)
        and not (key == "spark.ui.filters" and value == UI_FILTER)
    }


def start_context(
    master: str,
    app_name: str,
    conf: Mapping[str, str],
    scratch_dir: str | None = None,
    java_tmp_dir: str | None = None,
) -> SparkSession:
    """Start the kernel's SparkContext and return its root session. On a local master,
    its driver and UI listen on loopback and its scratch files go to ``scratch_dir``
    (see ``local_master_defaults``); on any master its JVM's temp folder is
    ``java_tmp_dir`` (``java_tmpdir``) and it logs only what a notebook user needs
    (``quiet_logging_env``); ``conf`` wins over every default."""
    from pyspark.sql import SparkSession

    # Executors' Python workers must run the kernel's interpreter, which has pyarrow
    # and the user's packages; an explicit setting by the user wins.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    defaults = {**OWNED_CONTEXT_DEFAULTS, **local_master_defaults(master)}
    defaults.update(python_daemon_defaults(master))
    defaults.update(authenticate_defaults(master))
    launching = driver.current_gateway() is None and jvm_stderr.can_filter()
    protection = ui_protection(master, conf)
    if protection and not (launching or _filter_loadable()):
        protection = {}  # a JVM launched without the jar on its class path: cannot
    settings = {"spark.master": master, "spark.app.name": app_name, **defaults, **conf}
    settings.update(protection)  # only when the user set no spark.ui.filters
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    env = local_master_env(master)
    users = "spark.local.dir" in conf or "SPARK_LOCAL_DIRS" in os.environ
    if scratch_dir and is_local_master(master) and not users:
        env["SPARK_LOCAL_DIRS"] = scratch_dir  # not spark.local.dir: Spark warns at each start
    env.update(quiet_logging_env(conf))
    if protection and launching:  # the UI's filter, made by Spark's class loader
        env.update(driver_jar.class_path_env(os.environ))
    tmp_option = java_tmpdir.tmpdir_option(Path(java_tmp_dir), conf) if java_tmp_dir else ""
    if tmp_option:
        submit_opts = env.get("SPARK_SUBMIT_OPTS", os.environ.get("SPARK_SUBMIT_OPTS", ""))
        env["SPARK_SUBMIT_OPTS"] = java_tmpdir.with_option(submit_opts, tmp_option)
    drop_py4j_tracebacks_of_a_dead_jvm()
    with _environ(env), api_flavour.classic():
        if launching:
            _launch_filtered(settings)  # the builder then finds this context
        session = builder.getOrCreate()
    if protection:  # only the kernel's Jupyter server learns the secret
        write_ui_secret(session.sparkContext.uiWebUrl, protection[UI_SECRET_CONF])
    try:  # the UI's root stays under a proxy (Spark UI links through the Jupyter server)
        driver_jar.instance(session.sparkContext, "jss.UiRootRedirect")
    except Exception:  # a UI without it only links its logo outside the proxy
        log.warning("could not make the Spark UI's root redirect relative", exc_info=True)
    return session


def _launch_filtered(settings: Mapping[str, str]) -> None:
    """A new JVM and a SparkContext on it with ``settings``, launched as
    ``SparkSession.builder.getOrCreate()`` would, but with the JVM's stderr filtered
    (``jvm_stderr``)."""
    from pyspark import SparkConf, SparkContext

    # The UI's secret goes to the JVM through py4j only: what launch_gateway gets is on
    # the JVM's command line, which every local user can read.
    launch = {key: value for key, value in settings.items() if key != UI_SECRET_CONF}
    gateway = jvm_stderr.launch_gateway(launch)
    SparkContext(conf=SparkConf().setAll(list(settings.items())), gateway=gateway)


def _filter_loadable() -> bool:
    """Whether the running JVM (launched earlier) has the UI filter on its class path."""
    gateway = driver.current_gateway()
    if gateway is None:
        return False
    try:
        loader = gateway.jvm.java.lang.ClassLoader.getSystemClassLoader()
        loader.loadClass("jss.UiSecretFilter")
    except Exception:
        return False
    return True


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
    # Sessions share the task slots: each runs its jobs in its own pool
    # (scheduler_pools), and FAIR scheduling between pools keeps one session's big job
    # from holding every slot until it ends (FIFO's one queue).
    "spark.scheduler.mode": "FAIR",
}
