"""What a notebook user sees of Spark's JVM when nothing is wrong: nothing. Through a
real kernel run as a Jupyter server runs it (``Kernel(server_log=...)``): what the JVM
writes to its stderr shows in the running cell, and the kernel's own stderr is the
server's log.

The kernel's first cell starts the JVM while the Spark UI's port is taken (as when
another kernel runs): its output is its one line, without the JVM's
``WARNING: Using incubator modules`` or Spark's ``Service 'SparkUI' could not bind``;
what the JVM writes that is not one of those still reaches the cell, and Spark's ERROR
for a lost executor is one line on stdout. So does ``restart``'s, which starts a new JVM
after the first was killed. At shutdown the JVM ends before ipykernel terminates its
children, so Spark's shutdown hooks delete their scratch folders without ``Failed to
delete`` stacks in the log, and no folder is left behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import free_port

from kernel_driver import start_with_profile

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"

#: Runs right after the extension's own shutdown hook (observers of ``exit_now`` run in
#: the order they were added), before ipykernel terminates the kernel's children: what
#: became of the JVM by then. Imports nothing at shutdown.
PROBE = """
import json, os, types
from pyspark import SparkContext
def _probe(change, _state=types.SimpleNamespace(proc=SparkContext._gateway.proc),
           json=json, os=os):
    report = {{"jvm_exit_code": _state.proc.poll()}}
    with open({path!r} + ".tmp", "w") as fh:
        json.dump(report, fh)
    os.replace({path!r} + ".tmp", {path!r})
get_ipython().observe(_probe, names="exit_now")
"""


class Quiet:
    """The module's kernel, the port its Spark UI asks for and the files it writes."""

    def __init__(self, tmp: Path) -> None:
        self.sessions = tmp / "sessions"
        self.server_log = tmp / "server.log"
        self.report = tmp / "report.json"
        self.ui_port = free_port()
        self.kernel = start_with_profile(
            tmp / "ipython",
            "c.SparkSessionsConfig.default_master = 'local[2]'\n"
            "c.SparkSessionsConfig.context_conf = {'spark.ui.showConsoleProgress': 'false', "
            f"'spark.ui.port': '{self.ui_port}'}}\n"
            f"c.SparkSessionsConfig.session_root = {str(self.sessions)!r}\n",
            tmp,
            server_log=self.server_log,
        )


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quiet]:
    q = Quiet(tmp_path_factory.mktemp("quiet"))
    yield q
    if q.kernel.manager.is_alive():  # the shutdown test did not run
        q.kernel.shutdown()


def test_the_cell_that_starts_spark_shows_no_stderr_though_the_ui_port_is_taken(
    quiet: Quiet,
) -> None:
    kernel = quiet.kernel
    with socket.socket() as taken:  # another driver's UI on the port this one asks for
        taken.bind(("127.0.0.1", quiet.ui_port))
        taken.listen()
        created = kernel.ok("%spark_session create a")
    assert created.stderr == "", created.stderr
    assert created.stdout.startswith("Created session 'a' on local[2]"), created.stdout
    ui = kernel.value("__import__('pyspark').SparkContext._active_spark_context.uiWebUrl")
    assert not ui.endswith(f":{quiet.ui_port}"), f"the UI did not have to move: {ui}"
    log = quiet.server_log.read_text()  # ipykernel copies a cell's fd 2 output there
    assert "incubator" not in log and "could not bind" not in log, log
    # What the JVM writes that is not known to be harmless still reaches the cell.
    real = kernel.ok(
        "import time\n"
        "jvm = __import__('pyspark').SparkContext._active_spark_context._jvm\n"
        "jvm.System.err.println('a line of the JVM that is no known noise')\n"
        "log = jvm.org.apache.logging.log4j.LogManager.getLogger\n"
        "log('org.apache.spark.Probe').error('a real error')\n"
        # What Spark logs when an executor dies (a test killed one: backends/jvm_stderr).
        "log('org.apache.spark.scheduler.TaskSchedulerImpl').error("
        "'Lost executor 7 on 127.0.0.1: Command exited with code 137')\n"
        "time.sleep(1)"
    )
    assert "a line of the JVM that is no known noise\n" in real.stderr, real.stderr
    assert " ERROR Probe: a real error\n" in real.stderr, real.stderr
    # An executor Spark lost is one line on stdout (not red), saying what Spark does.
    assert "Lost executor" not in real.stderr, real.stderr
    assert real.stdout == (
        "Spark lost executor 7 on 127.0.0.1 (Command exited with code 137); it runs the "
        "executor's tasks again on other executors.\n"
    ), real.stdout


def test_restart_after_a_killed_driver_shows_its_lines_and_no_stderr(quiet: Quiet) -> None:
    kernel = quiet.kernel
    pid = kernel.value("__import__('pyspark').SparkContext._gateway.proc.pid")
    os.kill(pid, signal.SIGKILL)
    # At once, before any view saw the driver die: restart makes the session again all
    # the same (it asked the views' one-second-old state and remade nothing: issue 28).
    restarted = kernel.ok("%spark_session restart")
    assert restarted.stdout.splitlines() == [
        "Started a new Spark driver on local[2].",
        "Session 'a' made again with its settings.",
        "DataFrames, UDFs and columns made before belong to the old driver: run the cells "
        "that made them again.",
    ], restarted.stdout
    assert restarted.stderr == "", restarted.stderr


def test_shutdown_ends_the_jvm_first_and_leaves_no_stack_and_no_folder(quiet: Quiet) -> None:
    kernel = quiet.kernel
    kernel.ok("%spark_session use a")
    assert kernel.ok("spark.range(5).count()").result_text == "5"  # scratch files
    root = Path(kernel.value(f"str({REGISTRY}.config.kernel_root().path())"))
    assert (root / ".spark-scratch").is_dir()
    kernel.ok(PROBE.format(path=str(quiet.report)))
    before = quiet.server_log.stat().st_size
    kernel.shutdown()
    # The JVM exited by itself (closed stdin: PySpark's gateway server exits), not
    # from ipykernel's SIGTERM, which also kills the `rm -rf` of Spark's shutdown hooks.
    assert json.loads(quiet.report.read_text()) == {"jvm_exit_code": 0}
    with open(quiet.server_log, encoding="utf-8", errors="replace") as fh:
        fh.seek(before)
        log = fh.read()  # what the shutdown wrote
    for noise in ("Failed to delete", "Exception", " WARN ", " ERROR ", "\tat "):
        assert noise not in log, log
    assert not root.exists(), sorted(str(p) for p in root.rglob("*"))
    assert list(quiet.sessions.iterdir()) == []
