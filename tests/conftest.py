"""Shared fixtures: a real kernel with the extension loaded, on a real PySpark JVM, and a
real Spark standalone cluster (a master and two workers) started from the installed
PySpark."""

from __future__ import annotations

import json
import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jvm_options
import pytest
from cpu_per_module import CpuPerModule
from process_census import ProcessCensus, summary_line

from kernel_driver import Kernel, start_with_profile

# Executors' Python workers must be this interpreter (it has pyarrow and the package).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def pytest_configure(config: pytest.Config) -> None:
    """Every JVM of the run starts with jvm_options (C1 only, Spark's classes from a
    class-data archive): made once per virtualenv, before any worker starts, so xdist's
    workers inherit the options. CPU seconds are counted per module (cpu_per_module)."""
    config.pluginmanager.register(CpuPerModule(config), "cpu-per-module")
    if "not spark" in (config.getoption("markexpr") or ""):
        return  # `make check`: no JVM
    if "JSS_TEST_JVM_OPTIONS" not in os.environ:
        os.environ["JSS_TEST_JVM_OPTIONS"] = jvm_options.options_for(jvm_options.ensure_archive())
    options, submit = os.environ["JSS_TEST_JVM_OPTIONS"], os.environ.get("SPARK_SUBMIT_OPTS", "")
    if options not in submit:  # a worker inherits the controller's
        os.environ["SPARK_SUBMIT_OPTS"] = f"{submit} {options}".strip()
    # Executors (local-cluster's, a standalone worker's) are started by Spark from the
    # driver's conf: PySpark passes these arguments to every driver's spark-submit.
    # defaultJavaOptions: a test's own extraJavaOptions still apply, after these.
    os.environ.setdefault(
        "PYSPARK_SUBMIT_ARGS",
        f"--conf {shlex.quote('spark.executor.defaultJavaOptions=' + options)} pyspark-shell",
    )


#: The plain test configuration, the shared kernel's. Its local Spark Connect server
#: (``--remote local``: started by the first module that asks, then kept by the kernel
#: like its SparkContext) runs on local[2] without a UI, and a Connect call gives up on an
#: unreachable server after about 3 s.
SPARK_TEST_CONF = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false', "
    "'spark.ui.showConsoleProgress': 'false'}\n"
    "c.SparkSessionsConfig.connect_master = 'local[2]'\n"
    # (Ended sessions' Python daemons looked for every second, not every 30: a test waits.)
    "c.SparkSessionsConfig.connect_conf = {'spark.ui.enabled': 'false', "
    "'spark.jss.endedSessionSweepSeconds': '1'}\n"
    "c.SparkSessionsConfig.connect_retry_seconds = 3.0\n"
)


_census = ProcessCensus()


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    # The controller's census sees its workers' children too: workers count nothing.
    if not _is_xdist_worker(session.config):
        _census.start()


#: Each module's seconds in a recent full run (setup, call and teardown of its tests;
#: written by `python scripts/test_times.py --durations tests/module_seconds.json`).
#: pytest-xdist hands out whole modules (--dist loadfile) in this order, the longest first
#: (--no-loadscope-reorder: by default it orders them by their number of tests, which put
#: the long one-test browser modules last: in a78caa0's fresh-clone run one worker ran
#: them alone for the last 100 s while the other two had nothing left). A module not in
#: the file (a new one) goes first: its length is not known. The order does not change
#: what a module does: each runs whole, in one worker, its tests in their own order.
MODULE_SECONDS: dict[str, float] = json.loads(
    (Path(__file__).resolve().parent / "module_seconds.json").read_text()
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> float:
        return -MODULE_SECONDS.get(item.nodeid.split("::")[0], float("inf"))

    items.sort(key=rank)  # stable: each module keeps its own order


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line of what the run started; with --junitxml, also as JSON beside the XML
    (scripts/test_times.py reads both)."""
    counts = _census.stop()
    terminalreporter.write_line(summary_line(counts))
    xml = terminalreporter.config.getoption("xmlpath", None)
    if xml:
        Path(xml).with_suffix(".census.json").write_text(json.dumps(counts))


#: Markers of the tests that may start kernels, JVMs, Jupyter servers or browsers; `make
#: check` runs the others, so an unmarked test that starts one fails (below).
HEAVY_MARKERS = ("spark", "kernel", "browser")


def heavy_process(args: Any) -> str | None:
    """What ``args`` (a Popen command) would start that only marked tests may: a JVM
    (java, spark-submit, spark-class), a kernel, a Jupyter server or a browser; else None."""
    words = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    text = [os.fsdecode(w) for w in words]
    names = [Path(w).name for w in text]
    if any(n in ("spark-submit", "spark-class") for n in names):
        return "a JVM"
    if names[:1] == ["java"] and not _is_script(text[0]):  # a stand-in script is no JVM
        return "a JVM"
    if any("ipykernel_launcher" in w for w in text):
        return "a kernel"
    if any(n.startswith("jupyter") for n in names[:1]) or text[1:3] == ["-m", "jupyter"]:
        return "a Jupyter server"
    if any("chrom" in n for n in names[:1]):
        return "a browser"
    return None


def _is_script(path: str) -> bool:
    try:
        with open(shutil.which(path) or path, "rb") as file:
            return file.read(2) == b"#!"
    except OSError:
        return False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    """A test without one of HEAVY_MARKERS that starts a kernel, a JVM, a server or a
    browser fails, naming the marker it needs: `make check` must not start one."""
    if any(item.get_closest_marker(m) for m in HEAVY_MARKERS):
        return (yield)
    original = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *more: Any, **options: Any) -> None:
        what = heavy_process(args)
        if what is not None:
            raise AssertionError(
                f"{item.nodeid} starts {what} ({args!r}) but is not marked "
                f"{' / '.join(HEAVY_MARKERS)}: mark it (pytestmark) so `make check` skips it"
            )
        original(self, args, *more, **options)

    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]
    try:
        return (yield)
    finally:
        subprocess.Popen.__init__ = original  # type: ignore[method-assign]


def start_extension_kernel(
    tmp_path_factory: pytest.TempPathFactory,
    config: str,
    env: dict[str, str] | None = None,
    **options: Any,
) -> Kernel:
    """A kernel whose IPython profile holds ``config``, with jupyter_spark_sessions loaded
    (``env``: more environment variables for the kernel; ``options``: more arguments of
    ``Kernel``, such as ``drop_env``)."""
    return start_with_profile(
        tmp_path_factory.mktemp("ipython"),
        config,
        tmp_path_factory.mktemp("cwd"),
        env,
        **options,
    )


def jvm_threads(kernel: Kernel, names: tuple[str, ...] = ("dag-scheduler", "appStatus")) -> str:
    """The stacks of the kernel's JVM threads whose name has one of ``names``, and of
    every BLOCKED thread (jstack): for the message of a test that finds Spark stuck."""
    kernel_pid = kernel.value(
        "__import__('os').getpid()"
    )  # Python only: works when the JVM is stuck
    children = subprocess.run(
        ["pgrep", "-P", str(kernel_pid), "java"], capture_output=True, text=True
    )
    dumps = []
    for pid in children.stdout.split():
        dump = subprocess.run(["jstack", pid], capture_output=True, text=True, timeout=60).stdout
        for block in dump.split("\n\n"):
            if any(n in block.split("\n", 1)[0] for n in names) or "BLOCKED" in block:
                dumps.append("\n".join(block.splitlines()[:14]))
    return "\n\n".join(dumps) or f"no JVM thread found (kernel {kernel_pid}: {children.stdout!r})"


# What a module sharing the run's kernel must find there, checked before it starts (and
# printed on failure): no session, no Spark job, an empty board, the settings as
# configured, no `spark` and nothing else a module defined.
KNOWN_STATE = "_jss_known_state()"

# Defined anew in each reset (a reset removes the user's variables, this one included).
RESET = """
def _jss_reset(settings):
    import time
    from pyspark import SparkContext
    from jupyter_spark_sessions.errors import SparkSessionsError
    registry = __import__('jupyter_spark_sessions').default_registry()
    # Every job ends first, while its session is still registered: the board shows a
    # group's end only for sessions it follows.
    sc = SparkContext._active_spark_context
    if sc is not None:  # jobs of threads and of sessions made outside the registry too
        sc.cancelAllJobs()
    for name in registry.names():
        try:
            session = registry.session(name)
        except SparkSessionsError:  # unusable (a Connect server a module killed): runs nothing
            continue
        if hasattr(session, 'interruptAll') and getattr(session, 'session_id', None):
            session.interruptAll()  # a Spark Connect session's operations
    # Bounded (the cell's timeout is 240 s): a job Spark never ends is reported after it.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (
        any(not g.finished or g.tasks_still_running for g in registry.board.snapshot().groups)
        or (sc is not None and sc.statusTracker().getActiveJobsIds())
    ):
        registry.board.wake_now()
        time.sleep(0.1)
    releases = [registry.stop(name) for name in registry.names()]
    deadline = time.monotonic() + 45
    for release in releases:
        release.wait(max(0.1, deadline - time.monotonic()))
    for name, value in settings.items():
        setattr(registry.config, name, value)
    # The board forgets finished groups beyond retained_groups: with none retained, the
    # next poll empties it.
    registry.config.retained_groups = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and registry.board.snapshot().groups:
        registry.board.wake_now()
        time.sleep(0.1)
    registry.config.retained_groups = settings['retained_groups']
    # What modules defined goes (not with %reset, after which pyspark.sql.connect no
    # longer imports: it reads __main__.__spec__, which %reset deletes).
    shell = get_ipython()
    for name in [n for n in shell.user_ns if n not in shell.user_ns_hidden]:
        if not (name.startswith('__') and name.endswith('__')):
            del shell.user_ns[name]
_jss_reset(_jss_settings)
"""

STATE = """
def _jss_known_state():
    from pyspark import SparkContext
    registry = __import__('jupyter_spark_sessions').default_registry()
    sc = SparkContext._active_spark_context
    return {
        'sessions': registry.names(),
        'board groups': [
            f'{g.id} ({g.state}, {g.tasks_still_running} tasks still running)'
            for g in registry.board.snapshot().groups
        ],
        'board error': registry.board.snapshot().error,
        'running Spark jobs': list(sc.statusTracker().getActiveJobsIds()) if sc else [],
        'user variables': sorted(
            n for n in get_ipython().user_ns if not n.startswith('_')
            and n not in get_ipython().user_ns_hidden
        ),
    }
"""


#: The known state (see KNOWN_STATE).
EXPECTED_STATE = {
    "sessions": [],
    "board groups": [],
    "board error": "",
    "running Spark jobs": [],
    "user variables": [],
}


class SharedKernel:
    """A kernel shared by the test modules of one configuration, put back to a known
    state (``reset``) before each of them."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.tmp_path_factory = tmp_path_factory
        self.kernel = self._start()

    def _start(self) -> Kernel:
        kernel = start_extension_kernel(self.tmp_path_factory, SPARK_TEST_CONF)
        kernel.ok(f"{STATE}\nimport pyspark")  # pyspark: the checks read its context
        self.settings = kernel.value(
            "{n: getattr(c, n) for c in [__import__('jupyter_spark_sessions')"
            ".default_registry().config] for n in c.trait_names(config=True)}"
        )
        return kernel

    def reset(self) -> Kernel:
        """Stop every session, cancel every job, empty the board, restore the settings
        and remove the user's variables; fail unless that left the known state.

        A Spark job that an earlier module's test left and that cancelAllJobs never
        ends (seen rarely under load on PySpark 4.1: Spark's status store still lists it
        as running) is not this module's failure: it is reported as a warning, with
        Spark's state and the JVM's scheduler threads, and the module gets a new kernel."""
        state = self._reset(self.kernel)
        stuck = {"board groups", "running Spark jobs"}
        if state != EXPECTED_STATE and all(
            state[key] == value for key, value in EXPECTED_STATE.items() if key not in stuck
        ):
            warnings.warn(
                "The shared kernel kept Spark jobs that no cancel ended; the module gets a new "
                f"kernel. Its state: {state}. Its JVM's scheduler threads:\n"
                f"{jvm_threads(self.kernel)}",
                stacklevel=1,
            )
            self.kernel.shutdown()
            self.kernel = self._start()
            state = self._reset(self.kernel)
        assert state == EXPECTED_STATE, f"the shared kernel is not back to its known state: {state}"
        return self.kernel

    def _reset(self, k: Kernel) -> dict[str, Any]:
        k.ok(f"_jss_settings = {self.settings!r}\n{RESET}", timeout=240)
        k.ok(f"{STATE}")
        state: dict[str, Any] = k.value(KNOWN_STATE)
        return state


@pytest.fixture(scope="session")
def shared_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedKernel]:
    """The run's kernel of the plain test configuration (SPARK_TEST_CONF): one kernel and
    one JVM for every module that needs nothing else."""
    shared = SharedKernel(tmp_path_factory)
    yield shared
    shared.kernel.shutdown()


@pytest.fixture(scope="module")
def kernel(shared_kernel: SharedKernel) -> Kernel:
    """A kernel with jupyter_spark_sessions loaded, in the known state (no sessions, an
    empty board, no user variables): the run's shared one, reset for this module."""
    return shared_kernel.reset()


# -- a real Spark standalone cluster ---------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pyspark_home() -> Path:
    """The installed PySpark's folder (it holds bin/spark-class and jars/)."""
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class StandaloneCluster:
    """A running standalone master with its workers, all on 127.0.0.1."""

    url: str  # spark://127.0.0.1:PORT, the master URL drivers use
    webui_url: str  # http://127.0.0.1:PORT, the master's web UI
    log_dir: Path
    #: Seconds from launching the master until it listed every worker ALIVE.
    start_seconds: float = 0.0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        """The master's state as its web UI's JSON reports it (workers, applications)."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as reply:
            data: dict[str, Any] = json.load(reply)
            return data

    def alive_workers(self) -> list[dict[str, Any]]:
        try:
            workers = self.status().get("workers", [])
        except OSError:
            return []
        return [w for w in workers if w.get("state") == "ALIVE"]

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of every process's log, to explain a failure."""
        parts = []
        for name in self.processes:
            path = self.log_dir / f"{name}.log"
            text = path.read_text(errors="replace") if path.exists() else "(no log)"
            exit_code = self.processes[name].poll()
            state = "running" if exit_code is None else f"exited with {exit_code}"
            tail = "\n".join(text.splitlines()[-lines:])
            parts.append(f"--- {name} ({state}), {path}:\n{tail}")
        return "\n".join(parts)


def _stop_process(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    # Each daemon was started in its own session: its process group holds the JVM and,
    # for a worker, the executor JVMs it launched. Only these groups are signalled.
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    except ProcessLookupError:
        pass


@contextmanager
def standalone_cluster_running(
    base: Path, workers: int = 2, timeout: float = 180
) -> Iterator[StandaloneCluster]:
    """Start ``bin/spark-class ...Master`` and ``workers`` ``...Worker`` daemons (two cores,
    2 GiB each: room for two applications' one-core executors; their own SPARK_WORKER_DIR
    under ``base``, logs in ``base``/logs), wait until the master lists them ALIVE, and
    stop them all afterwards. Fails with the logs' tails when they do not come up within
    ``timeout``."""
    spark_class = pyspark_home() / "bin" / "spark-class"
    log_dir = base / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    port, webui_port = free_port(), free_port()
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(pyspark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(log_dir),
        PYSPARK_PYTHON=env.get("PYSPARK_PYTHON", sys.executable),
        SPARK_DAEMON_JAVA_OPTS=os.environ.get("JSS_TEST_JVM_OPTIONS", ""),
    )
    cluster = StandaloneCluster(
        url=f"spark://127.0.0.1:{port}",
        webui_url=f"http://127.0.0.1:{webui_port}",
        log_dir=log_dir,
    )

    def launch(name: str, args: list[str], extra_env: dict[str, str]) -> None:
        with open(log_dir / f"{name}.log", "wb") as log:
            cluster.processes[name] = subprocess.Popen(
                ["bash", str(spark_class), *args],
                env={**env, **extra_env},
                cwd=base,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    started = time.monotonic()
    try:
        launch(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(webui_port),
            ],
            {},
        )
        for number in range(1, workers + 1):
            work_dir = base / f"worker{number}"
            work_dir.mkdir(exist_ok=True)
            launch(
                f"worker{number}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    cluster.url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(work_dir),
                ],
                {"SPARK_WORKER_DIR": str(work_dir)},
            )
        deadline = started + timeout
        while len(cluster.alive_workers()) < workers:
            exited = [n for n, p in cluster.processes.items() if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                why = f"{', '.join(exited)} exited" if exited else f"not up within {timeout} s"
                pytest.fail(
                    f"Standalone cluster {cluster.url}: {why}; ALIVE workers: "
                    f"{len(cluster.alive_workers())} of {workers}.\n{cluster.log_tail()}",
                    pytrace=False,
                )
            time.sleep(0.5)
        cluster.start_seconds = time.monotonic() - started
        yield cluster
    finally:
        for name in reversed(list(cluster.processes)):  # workers first, then the master
            _stop_process(cluster.processes[name])


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A real standalone cluster (a master, two two-core workers) for the whole test run;
    started the first time a test asks for it."""
    with standalone_cluster_running(tmp_path_factory.mktemp("standalone")) as cluster:
        yield cluster


#: The second, unprivileged user the privacy tests act as.
OTHER_USER = "jss-other"


@pytest.fixture(scope="session")
def other_user() -> str:
    """A second, unprivileged user of this machine (made once if it does not exist)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to create a second user and run steps as that user")
    if not (shutil.which("useradd") and shutil.which("runuser")):
        pytest.fail(
            "running as root, but useradd or runuser is missing (Debian: passwd, util-linux)"
        )
    try:
        pwd.getpwnam(OTHER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
            check=True,
        )
    return OTHER_USER
