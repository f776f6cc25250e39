"""Every wrapper of a private PySpark/JVM API in ``backends/classic.py``,
``backends/cell_scope.py`` and ``backends/first_rows.py``, called against
the installed PySpark. When an upgrade moves or changes one of them, this module fails
and names the wrapper to fix."""

from __future__ import annotations

import hashlib
import os
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from jupyter_spark_sessions.backends import (
    cell_scope,
    classic,
    context_start,
    driver,
    driver_jar,
    first_rows,
    job_feed,
    local_master,
    scheduler_pools,
    spark_objects,
)

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # Spark's own temp files (its artifact folders) in the test's folder, as a kernel's
    # go to its private folder: not left in /tmp.
    java_tmp = tmp_path_factory.mktemp("java-tmp") / ".spark-java-tmp"
    session = context_start.start_context(
        "local[2]", "private-api-test", {"spark.ui.enabled": "false"}, java_tmp_dir=str(java_tmp)
    )
    assert session.sparkContext._jvm.System.getProperty("java.io.tmpdir") == str(java_tmp)
    yield session
    session.sparkContext.stop()
    driver.end_jvm(timeout=30)  # the next module in this worker launches its own JVM


def test_active_context_and_stopped_state(root: Any) -> None:
    sc = driver.active_context()
    assert sc is root.sparkContext
    assert driver.context_is_stopped(sc) is False


def test_gateway_process_is_the_running_jvm_launched_by_pyspark(root: Any) -> None:
    process = driver.gateway_process()
    assert process is not None, "PySpark no longer keeps the JVM's Popen on its gateway"
    assert process.poll() is None, "the JVM of the running context"
    assert psutil.Process(process.pid).name() == "java"


def test_the_jvm_pyspark_launches_for_us_writes_its_stderr_through_the_filter(
    root: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    # start_context launched the module's JVM with jvm_stderr.launch_gateway (PySpark's
    # launch_gateway with popen_kwargs): its stderr is the filter's pipe, not ours.
    assert driver.current_gateway() is root.sparkContext._gateway
    process = driver.gateway_process()
    assert process is not None and process.poll() is None
    jvm_fd2 = os.readlink(f"/proc/{process.pid}/fd/2")
    assert jvm_fd2.startswith("pipe:") and jvm_fd2 != os.readlink("/proc/self/fd/2")
    jvm = root.sparkContext._jvm
    capfd.readouterr()
    jvm.System.err.println("WARNING: Using incubator modules: jdk.incubator.vector")
    jvm.System.err.println("a line of the JVM's")
    jvm.org.apache.logging.log4j.LogManager.getLogger("org.apache.spark.Probe").error("real")
    deadline = time.monotonic() + 10
    err = ""
    while "ERROR Probe: real" not in err and time.monotonic() < deadline:
        time.sleep(0.05)
        err += capfd.readouterr().err
    assert "a line of the JVM's\n" in err and "ERROR Probe: real\n" in err, err
    assert "incubator" not in err, err


def test_root_session_reuses_pysparks_instantiated_session(root: Any) -> None:
    assert context_start.root_session(root.sparkContext) is root


def test_new_session_is_isolated_with_its_own_uuid_and_job_tag(root: Any) -> None:
    session = classic.new_isolated_session(root, {"spark.sql.shuffle.partitions": "5"})
    assert classic.is_isolated(session) is True
    assert classic.is_isolated(root) is False
    uuid = classic.session_uuid(session)
    assert len(uuid) == 36 and uuid != classic.session_uuid(root)
    assert classic.session_job_tag(session) == f"spark-session-{uuid}"
    assert session.conf.get("spark.sql.shuffle.partitions") == "5"


def test_try_isolate_works_only_before_the_first_query(root: Any) -> None:
    fresh = root.newSession()
    assert classic.try_isolate(fresh) is True
    used = root.newSession()
    used.range(1).count()
    assert classic.try_isolate(used) is False
    assert used.conf.get(classic.ISOLATION_CONF) == "false", "setting restored"


def test_active_job_ids_sees_running_tagged_jobs_only(root: Any) -> None:
    import threading

    from pyspark import InheritableThread

    session = classic.new_isolated_session(root, {})
    sc = root.sparkContext
    started = threading.Event()

    def run() -> None:
        sc.addJobTag("probe-tag")
        started.set()
        try:
            session.range(2).repartition(2).rdd.map(lambda x: time.sleep(3) or x).count()
        finally:
            sc.removeJobTag("probe-tag")

    thread = InheritableThread(target=run)
    thread.start()
    started.wait(10)
    deadline = time.monotonic() + 20
    while not classic.active_job_ids(sc, ["probe-tag"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert classic.active_job_ids(sc, ["probe-tag"])
    assert classic.active_job_ids(sc, ["other-tag"]) == set()
    thread.join(60)
    assert classic.active_job_ids(sc, ["probe-tag"]) == set()


def test_release_helpers_drop_views_and_close_artifacts(root: Any) -> None:
    session = classic.new_isolated_session(root, {})
    session.range(3).createOrReplaceTempView("doomed_view")
    classic.stop_streaming_queries(session)
    classic.drop_temp_views(session)
    assert session.catalog.tableExists("doomed_view") is False
    classic.close_artifacts(session)


def test_require_session_rejects_other_objects(root: Any) -> None:
    assert classic.require_session(root, "x") is root
    with pytest.raises(classic.NotASparkSessionError, match=r"builtins\.int, not a SparkSession"):
        classic.require_session(3, "'x'")


def test_a_conf_spark_refuses_is_a_conf_error(root: Any) -> None:
    from jupyter_spark_sessions.errors import ConfError

    with pytest.raises(ConfError, match="CANNOT_MODIFY"):
        classic.new_isolated_session(root, {"spark.executor.memory": "2g"})


def test_owned_context_defaults_are_applied(root: Any) -> None:
    conf = root.sparkContext.getConf()
    for key, value in context_start.OWNED_CONTEXT_DEFAULTS.items():
        assert conf.get(key) == value, key


def test_a_sessions_sql_jobs_run_in_its_pool_whatever_the_threads_pool(root: Any) -> None:
    """scheduler_pools: a pool made with its weight, and a session's pool setting
    carried to its SQL jobs (Spark's withSQLConfPropagated), not the thread's."""
    import threading

    from pyspark import InheritableThread
    from pyspark.sql.functions import udf

    sc = root.sparkContext
    assert scheduler_pools.mode(sc) == "FAIR"  # OWNED_CONTEXT_DEFAULTS
    scheduler_pools.ensure_pool(sc, "probe-b", weight=3, min_share=1)
    scheduler_pools.ensure_pool(sc, "probe-b", weight=5)  # already there: kept as made
    assert scheduler_pools.pool_weights(sc, "probe-b") == (3, 1)
    assert scheduler_pools.pool_weights(sc, "no-such-pool") is None
    b = classic.new_isolated_session(root, {scheduler_pools.POOL: "probe-b"})
    started = threading.Event()

    @udf("long")
    def slow(x: int) -> int:
        time.sleep(3)
        return x

    def run() -> None:
        sc.setLocalProperty(scheduler_pools.POOL, "probe-thread")  # the thread's own
        started.set()
        b.range(0, 2, 1, 2).select(slow("id")).collect()

    thread = InheritableThread(target=run)
    thread.start()
    started.wait(10)
    pools = sc._jsc.sc().taskScheduler().rootPool()
    deadline = time.monotonic() + 30
    while not pools.getSchedulableByName("probe-b").runningTasks():
        assert time.monotonic() < deadline, "b's tasks never ran in its pool"
        time.sleep(0.05)
    assert pools.getSchedulableByName("probe-thread") is None  # never used
    thread.join(60)


def test_job_status_reader_reads_jobs_stages_and_counts_in_one_round_trip(root: Any) -> None:
    import threading

    from pyspark import InheritableThread

    sc = root.sparkContext
    reader = job_feed.JobStatusReader(sc)
    sc.parallelize([1]).count()  # a job before the probe's, also when run alone
    before = reader.read((), 0, 0)["total"]
    started = threading.Event()

    def run() -> None:
        sc.addJobTag("reader-probe")
        started.set()
        try:
            sc.parallelize(range(2), 2).map(lambda x: time.sleep(3) or x).count()
        finally:
            sc.removeJobTag("reader-probe")

    thread = InheritableThread(target=run)
    thread.start()
    started.wait(10)
    deadline = time.monotonic() + 20
    reply: dict[str, Any] = {}
    while time.monotonic() < deadline:
        with py4j_commands(sc) as sent:
            reply = reader.read((), -5, 10)
        mine = [j for j in reply["running"] if "reader-probe" in j.get("jobTags", [])]
        if mine and reply["stages"]:
            break
        time.sleep(0.05)
    assert len(sent) == 1, sent
    assert reply["stopped"] is False
    (running,) = mine
    assert running["status"] == "RUNNING" and running["numTasks"] == 2
    job_id = running["jobId"]
    assert reply["total"] == job_id + 1 > before
    assert job_id not in [j["jobId"] for j in reply["jobs"]], "running: not read twice"
    (stage,) = [s for s in reply["stages"] if s["stageId"] in running["stageIds"]]
    assert stage["numTasks"] == 2
    thread.join(60)
    # Spark's status store learns of the job's end from its asynchronous listener bus.
    deadline = time.monotonic() + 20
    ended = reader.read((job_id, 10**6), job_id + 1, 10)
    while not any(j["status"] != "RUNNING" for j in ended["jobs"]):
        assert time.monotonic() < deadline, ended
        time.sleep(0.05)
        ended = reader.read((job_id, 10**6), job_id + 1, 10)
    assert [(j["jobId"], j["status"], j["numCompletedTasks"]) for j in ended["jobs"]] == [
        (job_id, "SUCCEEDED", 2)
    ]
    assert ended["missing"] == [10**6]
    assert ended["running"] == [] and ended["stages"] == []
    limited = reader.read(range(job_id + 1), 0, 2)
    assert [j["jobId"] for j in limited["jobs"]] == [job_id - 1, job_id], "the newest"


def test_cancel_job_cancels_one_job_by_id(root: Any) -> None:
    import threading

    sc = root.sparkContext
    errors: list[str] = []

    def run() -> None:
        sc.setJobGroup("cancel-job-probe", "probe", interruptOnCancel=True)
        try:
            sc.parallelize(range(2), 2).map(lambda x: __import__("time").sleep(60)).count()
        except Exception as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 30
    while not sc.statusTracker().getJobIdsForGroup("cancel-job-probe"):
        assert time.monotonic() < deadline, "the probe job never started"
        time.sleep(0.05)
    (job_id,) = sc.statusTracker().getJobIdsForGroup("cancel-job-probe")
    classic.cancel_job(sc, job_id)
    thread.join(30)
    assert errors and "cancelled" in errors[0].lower()


def test_the_board_reader_ends_the_python_workers_of_killed_tasks(
    root: Any, tmp_path: Path
) -> None:
    # Spark's BasePythonRunner$MonitorThread ends a killed task's worker on its next
    # 2-second tick; jss.KilledTaskWorkers (private fields of that thread) does it at the
    # reader's next read. Cancelled at once after the workers start, before that tick.
    # The tick can still come first (it runs from the task's start, and a loaded machine
    # delays the reads): that is a race the reader loses now and then, so the probe runs
    # up to three times and the reader must end both workers in one of them; a reader
    # that ends none fails all three.
    sc = root.sparkContext
    reader = job_feed.JobStatusReader(sc)
    assert reader._reader.killedTaskWorkersProblem() == ""
    attempts: list[int] = []
    while len(attempts) < 3 and (not attempts or attempts[-1] < 2):
        attempts.append(_probe_killed_workers(sc, reader, tmp_path / str(len(attempts))))
    assert attempts[-1] == 2, f"the reader did not end the killed tasks' workers: {attempts}"


def _probe_killed_workers(sc: Any, reader: Any, piddir: Path) -> int:
    """Start two sleeping Python tasks, cancel them, read until the reader ended both
    (or 2 s, when Spark's own monitor has ended them); how many the reader ended. Both
    workers are gone at the end either way."""
    import os
    import threading

    piddir.mkdir()
    errors: list[str] = []

    def sleeper(x: int, piddir: str = str(piddir)) -> int:
        open(os.path.join(piddir, str(os.getpid())), "w").close()
        time.sleep(60)
        return x

    def run() -> None:
        sc.setJobGroup("killed-workers-probe", "probe", interruptOnCancel=True)
        try:
            sc.parallelize(range(2), 2).map(sleeper).count()
        except Exception as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 30
    while len(os.listdir(piddir)) < 2:
        assert time.monotonic() < deadline, "the probe's workers never started"
        time.sleep(0.02)
    workers = [psutil.Process(int(name)) for name in os.listdir(piddir)]
    sc.cancelJobGroup("killed-workers-probe")
    ended = 0
    deadline = time.monotonic() + 2
    while ended < 2 and time.monotonic() < deadline:
        ended += reader.read((), -1, 0)["endedWorkers"]
        time.sleep(0.02)
    thread.join(30)
    assert errors and "cancelled" in errors[0].lower()

    # A kill is a signal: the process ends a moment after it was sent (a loaded CI saw
    # one still running right after). is_running() also tells a reused pid apart.
    def gone(worker: psutil.Process) -> bool:
        try:
            return not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    deadline = time.monotonic() + 5
    while not all(gone(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(w) for w in workers), [w.pid for w in workers if not gone(w)]
    return ended


def test_a_tagged_thread_has_the_session_active_in_the_jvm_and_in_pyspark(root: Any) -> None:
    from pyspark.sql import SparkSession

    session = classic.new_isolated_session(root, {})
    backend = classic.ClassicBackend(session, "probe", isolated=True)
    before = SparkSession.getActiveSession()
    applied = backend.tag_thread(("jss:probe", "jss:probe:1"))
    try:
        assert SparkSession.getActiveSession() is session
        assert SparkSession.active() is session
        jclass = SparkSession._get_j_spark_session_class(root.sparkContext._jvm)
        assert jclass.getActiveSession().get().equals(session._jsparkSession)
    finally:
        backend.untag_thread(applied)
    assert SparkSession.getActiveSession() is before


def test_pyspark_reads_its_api_flavour_from_the_variable_we_set() -> None:
    from pyspark.sql.utils import is_remote

    from jupyter_spark_sessions.backends import api_flavour

    previous = api_flavour.use(connect=True)
    try:
        assert is_remote() is True
        api_flavour.use(connect=False)
        assert is_remote() is False
    finally:
        api_flavour.restore(previous)


def test_pyspark_daemon_can_be_replaced_and_our_daemon_leaves_the_kernels_group() -> None:
    # Spark runs `python -m <spark.python.daemon.module>`; ours calls pyspark's manager.
    import inspect

    from pyspark import daemon

    assert callable(daemon.manager)
    assert "spark.python.daemon.module" in local_master.LOCAL_PYTHON_DAEMON
    source = inspect.getsource(daemon.worker)
    assert "signal.signal(SIGINT, signal.default_int_handler)" in source, (
        "PySpark's workers no longer die on SIGINT: spark_daemon may not be needed"
    )


def test_python_workers_of_a_local_context_are_out_of_the_kernels_process_group(
    root: Any,
) -> None:
    import os

    from pyspark.sql.functions import udf

    # A Python UDF starts the worker daemon (in an isolated session: RDD jobs without one
    # would fetch the same-named files other tests added to sessions, and fail).
    session = classic.new_isolated_session(root, {})

    def modules(_: int) -> str:
        import py4j
        import pyspark

        return f"{pyspark.__file__} {py4j.__file__}"

    workers_see = session.range(2).select(udf(modules, "string")("id")).collect()
    # Spark puts its zips of PySpark and py4j first on the workers' path; spark_daemon
    # leaves them off where the same release is installed: the compiled copy, no zip.
    import py4j
    import pyspark

    assert {row[0] for row in workers_see} == {f"{pyspark.__file__} {py4j.__file__}"}
    kernel_group = os.getpgid(0)
    jvm = psutil.Process(driver.gateway_process().pid)  # type: ignore[union-attr]
    daemons = []
    for child in jvm.children(recursive=True):
        try:
            if "spark_daemon" in " ".join(child.cmdline()):
                daemons.append(child)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):  # a worker that just ended
            continue
    assert daemons, "the context does not run jupyter_spark_sessions.backends.spark_daemon"
    assert all(os.getpgid(p.pid) != kernel_group for p in daemons)


def test_session_of_reads_the_session_pysparks_dataframes_hold(root: Any) -> None:
    # backends/spark_objects.session_of reads PySpark's private `_session` of a DataFrame
    # (classic and Connect): sessions/gone_objects names a gone session's objects by it.
    from pyspark.sql.connect import plan
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

    from jupyter_spark_sessions.backends.spark_error_reading import error_chain
    from jupyter_spark_sessions.sessions import gone_objects

    session = classic.new_isolated_session(root, {})
    df = session.range(3).filter("id > 0")
    assert spark_objects.SESSION_ATTRIBUTE in vars(df), (
        "PySpark's classic DataFrame no longer keeps its session in _session: "
        "fix backends/spark_objects.session_of"
    )
    assert spark_objects.session_of(df) is session
    assert spark_objects.session_of(df.select("id")) is session
    assert spark_objects.session_of(session) is session
    assert spark_objects.session_of(df.id) is None, "a column holds no session"
    stand_in = object()  # a Connect DataFrame made without a server
    connect_df = ConnectDataFrame(plan.Range(0, 1, 1), session=stand_in)  # type: ignore[arg-type]
    assert spark_objects.session_of(connect_df) is stand_in, (
        "PySpark's Connect DataFrame no longer keeps its session in _session: "
        "fix backends/spark_objects.session_of"
    )

    # spark_objects.is_lost_connection: py4j's error for a JVM that is gone counts; a
    # Java exception from the live JVM does not.
    from py4j.protocol import Py4JNetworkError

    assert spark_objects.is_lost_connection(Py4JNetworkError("Answer from Java side is empty"))
    with pytest.raises(Exception, match="not a number") as java_error:  # PySpark's own kind
        root.sparkContext._jvm.java.lang.Integer.parseInt("not a number")
    assert not any(
        spark_objects.is_lost_connection(error) for error in error_chain(java_error.value)
    )

    def fail(frame: Any) -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    def traceback_using(frame: Any) -> Any:
        try:
            fail(frame)
        except ConnectionRefusedError:
            return sys.exc_info()[2]
        raise AssertionError("did not fail")

    gone_objects.mark_gone(session, "session 'probe', which `%spark_session stop` ended")
    assert gone_objects.gone_object_line(traceback_using(df)) == (
        "This DataFrame belongs to session 'probe', which `%spark_session stop` ended: "
        "run the cells that made it again."
    )


def test_classic_jobs_are_named_after_the_users_line(root: Any, tmp_path: Path) -> None:
    # backends/call_site: PySpark's SCCallSiteSync (collect) takes our call site, and
    # the actions that set none (count, the writers) are wrapped in it, class-wide.
    import importlib

    import pyspark.traceback_utils

    from jupyter_spark_sessions.backends import call_site

    session = classic.new_isolated_session(root, {})
    classic.ClassicBackend(session, "names", isolated=True)  # installs the hook
    assert call_site.install()
    assert getattr(pyspark.traceback_utils.SCCallSiteSync.__init__, call_site._MARK, False)
    for module_name, class_name, methods in call_site._UNNAMED_ACTIONS:
        owner = getattr(importlib.import_module(module_name), class_name)
        for name in methods:
            assert getattr(getattr(owner, name), call_site._MARK, False), (
                f"{module_name}.{class_name}.{name} is not wrapped: its jobs get JVM names"
            )
    sc = root.sparkContext
    reader = job_feed.JobStatusReader(sc)
    first = reader.read((), 0, 0)["total"]
    here = os.path.abspath(__file__)
    df = session.range(0, 4, 1, 2)
    _, count_line = df.count(), sys._getframe().f_lineno
    _, collect_line = df.collect(), sys._getframe().f_lineno
    out = str(tmp_path / "out")
    _, write_line = df.write.parquet(out), sys._getframe().f_lineno
    expected = {
        f"count at {here}:{count_line}",
        f"collect at {here}:{collect_line}",
        f"parquet at {here}:{write_line}",
    }
    total = reader.read((), 0, 0)["total"]
    assert total > first
    deadline = time.monotonic() + 20
    jobs = reader.read((), first, 100)["jobs"]
    # Spark's status store learns of the jobs from its asynchronous listener bus.
    while {job["jobId"] for job in jobs} != set(range(first, total)):
        assert time.monotonic() < deadline, jobs
        time.sleep(0.05)
        jobs = reader.read((), first, 100)["jobs"]
    assert {job["name"] for job in jobs} == expected


def test_pysparks_builders_return_the_bound_session_from_getorcreate(root: Any) -> None:
    # backends/builder_binding wraps both builders' getOrCreate and reads their private
    # _options.
    import pyspark.sql.connect.session
    import pyspark.sql.session
    from pyspark.sql import SparkSession

    from jupyter_spark_sessions.backends import builder_binding

    for module in (pyspark.sql.session, pyspark.sql.connect.session):
        builder = module.SparkSession.builder.config("spark.sql.shuffle.partitions", "7")
        assert builder._options == {"spark.sql.shuffle.partitions": "7"}, module.__name__
        assert callable(module.SparkSession.Builder.getOrCreate), module.__name__
    session = classic.new_isolated_session(root, {})
    builder_binding.bind(session, "probe", connect=False)
    try:
        got = SparkSession.builder.config("spark.sql.shuffle.partitions", "7").getOrCreate()
        assert got is session
        assert session.conf.get("spark.sql.shuffle.partitions") == "7"
    finally:
        builder_binding.unbind(session)
    assert SparkSession.builder.getOrCreate() is not session, "PySpark's own, unbound"


def test_python_workers_run_the_kernels_interpreter(root: Any) -> None:
    # context_start sets PYSPARK_PYTHON (setdefault) before the context starts; PySpark
    # gives it to the workers it starts (SparkContext.pythonExec).
    from pyspark.sql.functions import udf

    assert os.environ.get("PYSPARK_PYTHON") == sys.executable
    assert root.sparkContext.pythonExec == sys.executable, (
        "PySpark no longer takes its workers' Python from PYSPARK_PYTHON"
    )
    session = classic.new_isolated_session(root, {})
    (row,) = session.range(1).select(udf(lambda _: sys.executable, "string")("id")).collect()
    assert row[0] == sys.executable


def test_the_jvm_gets_the_environment_set_around_its_launch_and_the_kernel_keeps_its_own(
    root: Any,
) -> None:
    # PySpark gives the JVM it launches a copy of os.environ; start_context sets
    # SPARK_LOCAL_IP and SPARK_SUBMIT_OPTS there only around the launch.
    jvm = root.sparkContext._jvm
    if "SPARK_LOCAL_IP" not in os.environ:  # the user's would be kept
        assert jvm.System.getenv("SPARK_LOCAL_IP") == "127.0.0.1"
    quiet = context_start.quiet_logging_env({"spark.ui.enabled": "false"})
    if quiet:  # no log4j configuration of the user's
        uri = context_start.LOG_CONFIG.as_uri()
        assert jvm.System.getProperty("log4j2.configurationFile") == uri
        assert uri not in os.environ.get("SPARK_SUBMIT_OPTS", ""), "restored"
    assert "-Djava.io.tmpdir=" + jvm.System.getProperty("java.io.tmpdir") not in (
        os.environ.get("SPARK_SUBMIT_OPTS", "")
    ), "restored"


def test_py4j_reports_a_dead_jvm_through_the_root_logger_we_filter(root: Any) -> None:
    # driver.drop_py4j_tracebacks_of_a_dead_jvm filters the root logger: py4j logs the
    # failed send there (logging.exception, not its own logger).
    import inspect
    import logging

    from py4j.java_gateway import GatewayClient

    client = root.sparkContext._gateway._gateway_client
    assert type(client).send_command is GatewayClient.send_command
    source = "".join(inspect.getsource(GatewayClient.send_command).split())
    assert 'logging.exception("Exceptionwhilesendingcommand.")' in source, (
        "py4j logs a dead JVM's send error elsewhere: update driver._DeadJvmLogFilter"
    )
    assert driver._DEAD_JVM_LOG_FILTER in logging.getLogger().filters
    record = logging.LogRecord(
        "root", logging.ERROR, __file__, 1, "Exception while sending command.", None, None
    )
    assert driver._DEAD_JVM_LOG_FILTER.filter(record) is True, "the JVM runs: kept"


def test_streaming_calls_reach_the_writers_session(root: Any) -> None:
    # backends/streaming_calls reads the session of a classic DataStreamWriter from its
    # `_spark`, and names the blocking waits by their methods' names.
    from pyspark.sql.streaming.query import StreamingQuery, StreamingQueryManager

    from jupyter_spark_sessions.backends import streaming_calls

    # A streaming frame's writer: made, never started.
    writer = root.readStream.format("rate").load().writeStream
    assert writer._spark is root
    assert {"awaitTermination", "processAllAvailable"} <= set(vars(StreamingQuery))
    assert "awaitAnyTermination" in vars(StreamingQueryManager)
    assert StreamingQuery.awaitTermination.__module__.startswith(streaming_calls._STREAMING_MODULES)


def test_py4j_ends_an_interrupted_call_as_the_interrupt_filters_expect(root: Any) -> None:
    # cells/interrupt raises KeyboardInterrupt inside a py4j wait (a streaming query's
    # awaitTermination); py4j then logs through the root logger and closes every pooled
    # connection (driver.interrupting_a_call filters the aftermath) and logs through
    # py4j.clientserver when a socket cannot be shut down (_InterruptedCallLogFilter).
    import inspect

    from py4j import clientserver
    from py4j.java_gateway import GatewayClient

    send = "".join(inspect.getsource(GatewayClient.send_command).split())
    assert 'logging.exception("KeyboardInterruptwhilesendingcommand.")' in send
    assert "next_conn.shutdown_socket(" in send
    shutdown = "".join(inspect.getsource(clientserver.ClientServerConnection).split())
    assert '"Exceptionoccurredwhileshuttingdownconnection"' in shutdown
    # driver.drop_interrupted_connection closes the thread's pinned connection.
    client = root.sparkContext._gateway._gateway_client
    assert isinstance(client, clientserver.JavaClient)
    connection = client.get_thread_connection()
    assert isinstance(connection, clientserver.ClientServerConnection)
    assert connection.socket is not None
    driver.drop_interrupted_connection()
    assert connection.socket is None
    assert root.range(2).count() == 2  # a new connection
    assert client.get_thread_connection() is not connection


def test_the_ui_root_redirect_finds_the_spark_ui_members_it_uses(root: Any) -> None:
    # jss.UiRootRedirect calls SparkContext.ui() and the UI's detach/attachHandler; made
    # here on a context without a UI, it links against them and changes nothing.
    sc = root.sparkContext
    gateway, jvm = sc._gateway, sc._jvm

    def types(*names: str) -> Any:
        array = gateway.new_array(jvm.java.lang.Class, len(names))
        for index, name in enumerate(names):
            array[index] = jvm.java.lang.Class.forName(name)
        return array

    web_ui = jvm.java.lang.Class.forName("org.apache.spark.ui.WebUI")
    assert web_ui.isAssignableFrom(jvm.java.lang.Class.forName("org.apache.spark.ui.SparkUI"))
    web_ui.getMethod("detachHandler", types("java.lang.String"))
    servlet = "jakarta.servlet.http.HttpServlet"
    web_ui.getMethod("attachHandler", types("java.lang.String", servlet, "java.lang.String"))
    jvm.java.lang.Class.forName("org.apache.spark.SparkContext").getMethod("ui", types())
    assert sc._jsc.sc().ui().isEmpty()  # spark.ui.enabled=false
    assert driver_jar.instance(sc, "jss.UiRootRedirect") is not None


def test_the_ended_sessions_sweep_finds_the_spark_members_it_uses(root: Any) -> None:
    # jss.EndedSessionDaemons (on the Connect servers this project starts) reads Spark
    # Connect's session manager and SparkEnv's private map of Python worker factories by
    # reflection; made here (a JVM with the Connect classes but no server), it finds every
    # member, sees no Connect session, leaves this context's own daemon ("default": no
    # session's) alone and stops, at its second look, those of the sessions the tests
    # before made (which ones have a daemon of their own varies with the PySpark).
    sc = root.sparkContext
    root.range(2).rdd.map(lambda x: x).count()  # a daemon of no session in SparkEnv's map
    driver_jar.instance(sc, "jss.CellScope")  # the jar's class loader in this JVM
    loader = driver_jar._loader[1]  # type: ignore[index]
    spark_loader = sc._jvm.java.lang.Class.forName("org.apache.spark.SparkEnv").getClassLoader()
    arguments = sc._gateway.new_array(sc._jvm.java.lang.Object, 1)
    arguments[0] = spark_loader
    sweep = loader.loadClass("jss.EndedSessionDaemons$Sweep").getConstructors()[0]
    sweep = sweep.newInstance(arguments)
    assert sweep.liveSessions().isEmpty()
    before = set(sweep.daemonSessions())
    assert "default" in before
    assert sweep.once() == 0, "stopped a daemon at its first look"
    assert sweep.once() == len(before - {"default"})
    assert set(sweep.daemonSessions()) == {"default"}


def test_grpc_reads_its_fork_support_switch_from_the_variable_we_set() -> None:
    # jupyter_spark_sessions/__init__.py sets GRPC_ENABLE_FORK_SUPPORT=false at
    # %load_ext; gRPC reads it when imported (a fresh process each: it is read once).
    import subprocess

    probe = "from grpc._cython import cygrpc; print(cygrpc.is_fork_support_enabled())"
    seen = {
        value: subprocess.run(
            [sys.executable, "-c", probe],
            env={**os.environ, "GRPC_ENABLE_FORK_SUPPORT": value},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout.strip()
        for value in ("false", "true")
    }
    assert seen == {"false": "False", "true": "True"}, (
        "gRPC no longer reads GRPC_ENABLE_FORK_SUPPORT: see jupyter_spark_sessions/__init__.py"
    )


def test_ipython_shows_each_cells_error_through_the_showtraceback_we_wrap() -> None:
    # ipykernel_internals.wrap_showtraceback replaces the shell's showtraceback, which
    # IPython calls for a cell's error; show_error calls ipykernel's _showtraceback.
    import inspect

    from ipykernel.zmqshell import ZMQInteractiveShell
    from IPython.core.interactiveshell import InteractiveShell

    parameters = inspect.signature(InteractiveShell.showtraceback).parameters
    assert list(parameters)[:2] == ["self", "exc_tuple"] and "exception_only" in parameters
    assert "self.showtraceback(running_compiled_code=True)" in inspect.getsource(
        InteractiveShell.run_code
    )
    assert list(inspect.signature(ZMQInteractiveShell._showtraceback).parameters) == [
        "self",
        "etype",
        "evalue",
        "stb",
    ]


def test_ipykernel_puts_keyboard_interrupt_on_sigint_around_each_request() -> None:
    # cells/interrupt replaces the SIGINT handler during a cell and puts back the one
    # it found: ipykernel's default_int_handler, set around each shell request.
    import inspect
    import signal

    from ipykernel.kernelbase import Kernel

    assert "self.pre_handler_hook()" in inspect.getsource(Kernel.dispatch_shell)
    assert "self.post_handler_hook()" in inspect.getsource(Kernel.dispatch_shell)

    class StandIn:
        saved_sigint_handler: Any = None

    kernel = StandIn()
    before = signal.getsignal(signal.SIGINT)
    try:
        Kernel.pre_handler_hook(kernel)  # type: ignore[arg-type]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a cell's handler meanwhile
        Kernel.post_handler_hook(kernel)  # type: ignore[arg-type]
        assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGINT, before)


def thread_artifact_state_is_empty(sc: Any) -> bool:
    """Whether this thread's jobs run in no session's artifact state (Spark's private
    thread-local, read by reflection: what ``CellScope`` sets)."""
    owner = sc._jvm.java.lang.Class.forName("org.apache.spark.JobArtifactSet$")
    field = owner.getDeclaredField("currentClientSessionState")
    field.setAccessible(True)
    return bool(field.get(owner.getField("MODULE$").get(None)).get().isEmpty())


def test_the_driver_jar_is_built_from_the_java_sources() -> None:
    # `make jar` rebuilds it; a source edited without that would ship the old class.
    sources = sorted((ROOT / "java").rglob("*.java"), key=str)
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()
    with zipfile.ZipFile(driver_jar.JAR) as jar:
        manifest = jar.read("META-INF/MANIFEST.MF").decode().replace("\r\n ", "").replace("\n ", "")
        names = jar.namelist()
    assert f"Source-SHA256: {digest}" in manifest.splitlines(), "run `make jar`"
    classes = {"CellScope", "BoardReader", "KilledTaskWorkers", "FirstRows", "KeeperWatch"}
    classes |= {"EndedSessionDaemons", "EndedSessionDaemons$Sweep"}
    assert {f"jss/{name}.class" for name in classes} <= set(names)


@contextmanager
def py4j_commands(sc: Any) -> Iterator[list[str]]:
    """The py4j calls this process makes to the JVM inside the block (each one is a
    round trip). Not py4j's own releases of objects freed meanwhile ("m" commands),
    which older py4j sends from whichever thread collects them."""
    client = sc._gateway._gateway_client  # private
    sent: list[str] = []
    original = client.send_command

    def recording(command: str, *args: Any, **kwargs: Any) -> Any:
        if not command.startswith("m\n"):
            sent.append(command)
        return original(command, *args, **kwargs)

    client.send_command = recording
    try:
        yield sent
    finally:
        client.send_command = original


def test_first_rows_as_pandas_take_toPandas_batches_without_the_limits_shuffle(
    root: Any,
) -> None:
    # PySpark's toPandas() asks _collect_as_arrow for its batches: first_rows stands in
    # for it on the limited DataFrame (jss.FirstRows takes the rows as collect() does).
    sc = root.sparkContext
    tracker = sc.statusTracker()
    arrow = {
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    }
    for key, value in arrow.items():
        root.conf.set(key, value)
    typed = (
        "SELECT id, id * 2 AS doubled, CAST(id AS STRING) AS s, TIMESTAMP'2026-01-02 03:04:05' "
        "+ make_interval(0, 0, 0, 0, 0, 0, id) AS t, DATE'2026-01-01' AS d, "
        "CAST(id / 3 AS DECIMAL(12, 2)) AS m, map(id, 'x') AS kv, named_struct('i', id) AS st, "
        "IF(id % 7 = 0, NULL, id) AS maybe FROM range(0, 50000, 1, 4) WHERE id % 5 = 0"
    )

    def stages_of(group: str, run: Any) -> tuple[Any, list[int]]:
        sc.setJobGroup(group, group)
        try:
            value = run()
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        jobs = tracker.getJobIdsForGroup(group)
        return value, [len(tracker.getJobInfo(job).stageIds) for job in jobs]

    try:
        frame = root.sql(typed)
        theirs, their_stages = stages_of("limit-topandas", lambda: frame.limit(4001).toPandas())
        first = first_rows.limited(frame, 4001)
        ours, our_stages = stages_of("first-rows", first.toPandas)
        assert first._collect_as_arrow.called, "toPandas no longer asks _collect_as_arrow"
        assert max(their_stages) == 2, their_stages  # the limit's shuffle, as measured
        assert our_stages and max(our_stages) == 1, our_stages
        assert len(ours) == 4001 and ours.equals(theirs), (ours.dtypes, theirs.dtypes)
        assert ours.equals(frame.toPandas().iloc[:4001])
        small = first_rows.as_pandas(frame, 10**6)  # fewer rows than asked for
        assert len(small) == 10000 and small.equals(frame.toPandas())
        # Spark drops a limit it knows to be no limit: PySpark's own way, its one stage.
        whole = root.sql("SELECT id, CAST(id AS STRING) AS s FROM range(0, 100, 1, 4)")
        kept, kept_stages = stages_of("no-limit-left", lambda: first_rows.as_pandas(whole, 1000))
        assert kept.equals(whole.toPandas()) and kept_stages == [1], kept_stages
        # The query's own LIMIT, smaller, read over several waves of partitions (tasks
        # return whole batches: the rows beyond it are cut); with an OFFSET, the driver's way.
        for clause in ("LIMIT 7", "LIMIT 7 OFFSET 2"):
            query = root.sql(f"SELECT id FROM range(0, 40, 1, 8) WHERE id % 2 = 0 {clause}")
            got = first_rows.as_pandas(query, 4001)
            assert got["id"].tolist() == [row.id for row in query.collect()], (clause, got)
        empty = first_rows.as_pandas(root.sql("SELECT id FROM range(10) WHERE id < 0"), 5)
        assert empty.empty and list(empty.columns) == ["id"]
        root.conf.set("spark.sql.limit.initialNumPartitions", "1")  # the user's own
        first_rows.as_pandas(frame, 4001)
        assert root.conf.get("spark.sql.limit.initialNumPartitions") == "1"
        root.conf.unset("spark.sql.limit.initialNumPartitions")
        first_rows.as_pandas(frame, 4001)
        assert root.conf.get("spark.sql.limit.initialNumPartitions", None) is None
    finally:
        for key in arrow:
            root.conf.unset(key)


def test_cell_scope_sets_a_cells_state_in_one_round_trip_and_restores_it(root: Any) -> None:
    from pyspark.sql import SparkSession

    sc = root.sparkContext
    session = classic.new_isolated_session(root, {})
    jclass = SparkSession._get_j_spark_session_class(sc._jvm)
    cell_scope.scope_of(sc)  # made once per context: a few round trips, not per cell
    sc.setLocalProperty("spark.job.interruptOnCancel", "false")  # the user's choice
    sc.addJobTag("users-own")
    active_before = jclass.getActiveSession()
    with py4j_commands(sc) as sent:
        cell_scope.enter(sc, ("jss:x", "jss:x:1"), session._jsparkSession, None, "pool-x")
        entered = len(sent)
        cell_scope.enter(sc, ("jss:y", "jss:y:2"), root._jsparkSession, None)  # nested
        cell_scope.exit(sc)
    assert entered == 1, sent
    assert len(sent) == 3, sent
    assert set(sc.getJobTags()) == {"users-own", "jss:x", "jss:x:1"}
    assert sc.getLocalProperty("spark.job.interruptOnCancel") == "true"
    assert sc.getLocalProperty("spark.scheduler.pool") == "pool-x"  # the nested one kept it
    active = jclass.getActiveSession()
    assert active.isDefined() and active.get().equals(session._jsparkSession)
    cell_scope.exit(sc)
    assert set(sc.getJobTags()) == {"users-own"}
    assert sc.getLocalProperty("spark.job.interruptOnCancel") == "false"
    assert sc.getLocalProperty("spark.scheduler.pool") is None
    assert jclass.getActiveSession().equals(active_before)
    cell_scope.exit(sc)  # an extra exit changes nothing
    assert set(sc.getJobTags()) == {"users-own"}
    sc.removeJobTag("users-own")
    sc.setLocalProperty("spark.job.interruptOnCancel", None)


# Late in the module: it gives two sessions a file of the same name, after which jobs
# without session state on this context would fail (Spark's behaviour).
def test_cell_scope_runs_rdd_jobs_in_a_sessions_files(root: Any, tmp_path: Path) -> None:
    sc = root.sparkContext
    sessions = {}
    for name in ("a", "b"):
        session = classic.new_isolated_session(root, {})
        staged = tmp_path / name / "thread_state.txt"
        staged.parent.mkdir()
        staged.write_text(f"file of {name}")
        classic.add_session_artifact(session, "files/thread_state.txt", str(staged))
        sessions[name] = session
    for name, session in sessions.items():
        state = classic.artifact_state(session)
        assert state is not None
        cell_scope.enter(sc, (), session._jsparkSession, state)
        try:
            read = sc.parallelize(["thread_state.txt"], 1).map(lambda p: Path(p).read_text())
            assert read.collect() == [f"file of {name}"]
        finally:
            cell_scope.exit(sc)
        assert thread_artifact_state_is_empty(sc), "restored"
    assert classic.artifact_state(root) is None, "the root session is not isolated"


def test_a_killed_jvm_is_lost_and_a_new_one_starts_once_it_is_forgotten(root: Any) -> None:
    # Last in this module: it kills the module's JVM (driver_state, forget_lost_driver).
    sc = root.sparkContext
    assert driver.driver_state(sc) == "running" and driver.driver_problem(sc) == ""
    driver.quiet_accumulator_server(sc)
    assert sc._accumulatorServer.handle_error.__name__ == "handle_error"
    assert sc._accumulatorServer._jss_quiet is True
    process = driver.gateway_process()
    assert process is not None
    process.kill()
    process.wait(30)
    assert driver.driver_state(sc) == "lost"
    assert "its JVM exited with signal 9" in driver.driver_problem(sc)
    driver.forget_lost_driver(sc)
    assert driver.active_context() is None
    new = context_start.start_context("local[1]", "after-loss", {"spark.ui.enabled": "false"})
    try:
        assert new.range(3).count() == 3
        assert driver.driver_state(sc) == "lost", "the old context stays lost"
        assert "its JVM" in driver.driver_problem(sc)
        assert driver.driver_state(new.sparkContext) == "running"
    finally:
        new.sparkContext.stop()
    assert driver.driver_state(new.sparkContext) == "stopped"
    # Kernel shutdown then ends the JVM through its stdin (PySpark's gateway server
    # exits on EOF, running Spark's shutdown hooks) and forgets its gateway.
    process = driver.gateway_process()
    assert process is not None and process.poll() is None
    driver.end_jvm(30)
    assert process.returncode == 0, "the JVM exits by itself when its stdin closes"
    assert driver.current_gateway() is None
