"""Spark's own failures, through real kernels on real JVMs and a real Spark Connect
server: a cancelled cell ends in one line and leaves no Spark WARN lines for the next
cell (classic and Connect); after the driver JVM is killed (``kill -9``) every magic
answers in one line and ``%spark_session restart`` brings the sessions back with their
settings and files (on local[2]; local-cluster's executor processes getting a session's
files are test_artifacts_kernel's); after ``sparkContext.stop()`` a new context
keeps the master the user chose; a Connect server that is not the kernel's own (started
here, on a fixed port with a token, as a remote one would be) dies: its session's
queries fail in one line naming it and the way out, and when it is back ``reconnect``
makes the session again with its settings and files."""

from __future__ import annotations

import os
import secrets
import signal
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, start_extension_kernel
from test_connect_kernel import CONNECT_LONG_CELL, UDFS
from test_job_board_kernel import LONG_CELL, board, request, wait_for_group
from tiny_wheels import make_wheel

from jupyter_spark_sessions.backends.local_connect_server import LocalConnectServer
from kernel_driver import Kernel, assert_cancelled_in_one_line, assert_session_lost

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"

QUIET_CONF = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false'}\n"
)

#: The one line the JVM itself prints at every start (Spark adds the module).
JVM_START_LINE = "WARNING: Using incubator modules: jdk.incubator.vector"

READ_FILES_CELL = """
from pyspark.sql.functions import udf

@udf("string")
def _read_files(x):
    import helper
    with open("lookup.csv") as f:
        return f.read().strip() + "|" + helper.WHO
spark.range(1).select(_read_files("id")).first()[0]
"""

READ_ARCHIVE_CELL = """
from pyspark.sql.functions import udf

@udf("string")
def _read_archive(x):
    with open("pack/inside.txt") as f:
        return f.read().strip()
spark.range(1).select(_read_archive("id")).first()[0]
"""


PACKAGE_VERSION_CELL = """
from pyspark.sql.functions import udf

@udf("string")
def _package_version(x):
    import jsstiny
    return jsstiny.__version__
spark.range(1).select(_package_version("id")).first()[0]
"""


def one_line(result_text: str) -> bool:
    return result_text.strip().count("\n") == 0


def spark_log_lines(text: str) -> list[str]:
    """Lines of the JVM's log4j output (``26/12/01 12:00:00 WARN Logger: ...``)."""
    return [line for line in text.splitlines() if " WARN " in line or " ERROR " in line]


def driver_pid(kernel: Kernel) -> int:
    pid: int = kernel.value("__import__('pyspark').SparkContext._gateway.proc.pid")
    return pid


class Server:
    """A Connect server that can be killed and started again on the same address."""

    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(8)
        self.log_dir = log_dir
        self.process: LocalConnectServer | None = None

    @property
    def url(self) -> str:
        return f"sc://localhost:{self.port}/;token={self.token}"

    def start(self) -> None:
        conf = {"spark.ui.enabled": "false"}
        self.process = LocalConnectServer(
            "local[2]", conf, self.log_dir, 120.0, port=self.port, token=self.token
        )
        self.process.start()

    def kill(self) -> None:
        assert self.process is not None
        self.process.stop(timeout=0)  # SIGTERM, then SIGKILL at once


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("connect-server"))
    s.start()
    yield s
    if s.process is not None:
        s.process.stop()


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    """A kernel with classic sessions and sessions of the module's Connect server."""
    k = start_extension_kernel(
        tmp_path_factory, QUIET_CONF + "c.SparkSessionsConfig.connect_retry_seconds = 3.0\n"
    )
    k.ok(UDFS)
    yield k
    k.shutdown()


def have_session(kernel: Kernel, name: str, create: str) -> str:
    """Make session ``name`` with ``%spark_session create NAME CREATE`` unless an earlier
    test did; the create's stderr, or "" when it already was there."""
    if name in kernel.value(f"{REGISTRY}.names()"):
        return ""
    return kernel.ok(f"%spark_session create {name} {create}".rstrip()).stderr


#: Per backend: the session the cancelled cell is bound to and its busy cell.
BUSY = {"classic": ("a", LONG_CELL), "connect": ("r", CONNECT_LONG_CELL)}
#: What Spark's own error of the cancel says, per backend (kept for %tb), and how long
#: its full traceback is at least (classic: the Java stack too).
SPARKS_CANCEL = {"classic": ("SPARK_JOB_CANCELLED", 50), "connect": ("OPERATION_CANCELED", 10)}


@pytest.mark.parametrize("backend", ["classic", "connect"])
def test_a_cancelled_cell_is_one_line_and_leaves_no_spark_log_lines(
    quiet: Kernel, server: Server, backend: str
) -> None:
    kernel = quiet
    session, busy_cell = BUSY[backend]
    if backend == "classic":
        created = have_session(kernel, "a", "")
        # Startup noise is the JVM's one line at most: no log4j profile, no native-Hadoop
        # or spark.local.dir warnings.
        assert set(created.splitlines()) <= {JVM_START_LINE}, created
    else:
        have_session(kernel, "r", f"--remote {server.url} --conf spark.sql.shuffle.partitions=5")
    kernel.ok(f"%spark_session use {session}")
    busy = kernel.client.execute(busy_cell)
    group = wait_for_group(
        kernel,
        lambda g: (
            g["session"] == session
            and g["state"] == "running"
            and bool(g["jobs"])
            and (backend == "connect" or g["tasks"]["active"] > 0)
        ),
    )
    reply, _ = request(
        kernel, {"version": 1, "action": "cancel", "groups": [group["id"]], "source": "sidebar"}
    )
    assert reply["cancelling"] == [group["id"]], reply
    result = kernel.collect(busy, timeout=60)
    assert_cancelled_in_one_line(result, group["id"], "from the sidebar")
    assert f"(job {group['jobs'][0]['id']})" in result.error_value, result.error_value
    assert spark_log_lines(result.stderr) == [] and result.stderr == "", result.stderr
    # The killed task's executor and scheduler lines are written by the time Spark counts
    # the task ended (polled): they would reach the cancelled cell's output late, or
    # the next cell's.
    wait_for_group(
        kernel,
        lambda g: (
            g["id"] == group["id"] and g["state"] == "cancelled" and g["tasks_still_running"] == 0
        ),
        timeout=30,
    )
    after = kernel.ok("spark.range(3).count()")
    assert after.result_text == "3"
    assert after.stderr == "", after.stderr
    late = [
        m["content"]["text"]
        for m in kernel.iopub_log
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == busy
    ]
    assert spark_log_lines("".join(late)) == [], late
    # The full traceback stays reachable.
    full = kernel.ok("%tb")
    mark, lines = SPARKS_CANCEL[backend]
    assert mark in full.error_value + "".join(full.traceback)
    assert len("".join(full.traceback).splitlines()) > lines


def test_stop_of_a_session_that_ran_nothing_says_only_that(quiet: Kernel) -> None:
    quiet.ok("%spark_session create idle")
    assert quiet.ok("%spark_session stop idle").stdout == "Stopped session 'idle'.\n"


def test_after_context_stop_a_new_context_keeps_the_master_the_user_chose(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    kernel = start_extension_kernel(tmp_path_factory, QUIET_CONF)  # default: local[2]
    try:
        kernel.ok("%spark_session create a --master local[1] --conf spark.sql.shuffle.partitions=3")
        kernel.ok("%spark_session use a")
        kernel.ok("spark.sparkContext.stop()")
        assert_session_lost(
            kernel.execute("spark.range(2).count()"),
            "Session 'a' is unusable: its SparkContext was stopped outside "
            "jupyter_spark_sessions (spark.stop()?): run `%spark_session restart` to start a "
            "new one on local[1] with your sessions and their files.",
        )
        created = kernel.ok("%spark_session create q")
        assert "Created session 'q' on local[1]" in created.stdout
        assert kernel.value(f"{REGISTRY}.session('q').sparkContext.master") == "local[1]"
        # Naming the master it runs on is no mistake.
        kernel.ok("%spark_session create q2 --master local[1]")
        restarted = kernel.ok("%spark_session restart").stdout
        assert restarted.splitlines() == [
            "The Spark driver runs on local[1].",
            "Session 'a' made again with its settings.",
            "`spark` now refers to the new session.",
            "DataFrames, UDFs and columns made before belong to the stopped SparkContext: run "
            "the cells that made them again.",
        ]
        used = kernel.ok("spark.range(5).count()")
        assert used.result_text == "5" and not used.stderr, used.stderr
        assert kernel.value("spark.conf.get('spark.sql.shuffle.partitions')") == "3"
        # Cells of either kind are tagged on the new context as on the first (the
        # project's JVM classes are made anew in the same JVM: issue 28).
        cell = kernel.ok("%%spark_session q\nspark.range(4).count()")
        assert cell.result_text == "4" and not cell.stderr, cell.stderr

        # The board shows the cell's group once it polled after the cell (the magic
        # `jobs` reads a poll that starts after its call: the same here).
        # Spark's listener writes an ended job to its status store a moment later: under
        # load a poll right after the cell may not see it yet (CI saw that once).
        def shown_groups() -> dict[str, str]:
            return {
                g: s
                for g, s in kernel.value(
                    f"[(g.id, g.session) for g in {REGISTRY}.board_poller.fresh_snapshot()"
                    ".groups if g.jobs]"
                )
            }

        deadline = time.monotonic() + 10
        while (groups := shown_groups()).get(f"q:{cell.execution_count}") != "q":
            assert time.monotonic() < deadline, groups
        nothing = kernel.execute("%spark_session restart")
        assert "every session is usable: nothing to restart" in nothing.usage_error
    finally:
        kernel.shutdown()


def make_files(folder: Path) -> None:
    (folder / "lookup.csv").write_text("from-a\n")
    (folder / "helper.py").write_text("WHO = 'helper-of-a'\n")
    with zipfile.ZipFile(folder / "pack.zip", "w") as archive:
        archive.writestr("inside.txt", "in-b's-archive\n")


@pytest.mark.parametrize("master", ["local[2]"])
def test_a_killed_driver_answers_in_one_line_and_restart_brings_back_sessions_and_files(
    tmp_path_factory: pytest.TempPathFactory, master: str
) -> None:
    kernel = start_extension_kernel(tmp_path_factory, QUIET_CONF)
    try:
        cwd = Path(kernel.value("__import__('os').getcwd()"))
        make_files(cwd)
        wheel = make_wheel(cwd, "jsstiny", "1.0")
        kernel.ok(f"{REGISTRY}.config.env_cache_dir = {str(cwd / 'envs')!r}")
        kernel.ok(
            f"%spark_session create a --master {master} --conf spark.sql.shuffle.partitions=3\n"
            "%spark_session add_file a lookup.csv\n"
            "%spark_session add_pyfile a helper.py\n"
            f"%spark_session create b --pip ./{wheel.name}\n"
            "%spark_session add_archive b pack.zip\n"
            "%spark_session create c\n"
            "from pyspark.sql import SparkSession\n"
            "mine = SparkSession.builder.getOrCreate().newSession()\n"
            "%spark_session adopt mine mine"
        )
        kernel.ok("%spark_session use a")
        assert kernel.ok(READ_FILES_CELL).result_text == "'from-a|helper-of-a'"
        # A streaming query of b: lost with the driver, and the restart says so.
        kernel.ok(
            "%%spark_session b\n"
            "spark.readStream.format('rate').load().writeStream.format('memory')"
            ".queryName('rates_b').start()"
        )
        # Objects of the driver about to die: a DataFrame, and a UDF the JVM knows.
        kernel.ok("old_df = spark.range(4)\nold_df.select(_read_files('id')).count()")
        pid = driver_pid(kernel)  # read before: the shell is busy from here
        busy = kernel.client.execute(LONG_CELL)
        group = wait_for_group(
            kernel, lambda g: g["session"] == "a" and g["state"] == "running" and g["jobs"]
        )
        os.kill(pid, signal.SIGKILL)

        lost_line = (
            "the Spark driver of this kernel is gone (its JVM exited with signal 9): run "
            f"`%spark_session restart` to start a new one on {master} with your sessions and "
            "their files"
        )
        cell = kernel.collect(busy, timeout=60)
        assert_session_lost(cell, f"Session 'a' is unusable: {lost_line}.")
        assert cell.stderr == "", cell.stderr

        # The board ends the running group as lost (within a poll or two).
        ended = wait_for_group(kernel, lambda g: g["id"] == group["id"] and g["state"] == "lost")
        assert all(j["status"] == "LOST" for j in ended["jobs"])
        sessions = {s["name"]: s for s in board(kernel)["sessions"]}
        assert sessions["a"]["disconnected"] == lost_line

        # Every magic answers in one line, without a traceback.
        listing = kernel.ok("%spark_session list")
        assert f"Session 'a' is unusable: {lost_line}." in listing.stdout
        assert "Traceback" not in listing.stdout + listing.stderr
        info = kernel.ok("%spark_session info a").stdout
        assert f"state         {lost_line}" in info
        jobs = kernel.ok("%spark_session jobs").stdout
        assert f"{group['id']}" in jobs and " lost " in jobs
        for line in ("%spark_session use b", "%spark_session add_file a lookup.csv"):
            failed = kernel.execute(line)
            assert failed.usage_error.startswith("Session '") and lost_line in failed.usage_error
            assert one_line(failed.stderr), failed.stderr
        query = kernel.execute("spark.range(3).count()")
        assert query.error_name == "SessionLostError" and len(query.traceback) == 1
        assert kernel.ok("%spark_session stop c").stdout == "Stopped session 'c'.\n"

        # One command brings the kernel back: same master and settings, same names,
        # the files added again from the session directories; the adopted one dropped.
        restarted = kernel.ok("%spark_session restart", timeout=180)
        assert restarted.stdout.splitlines() == [
            f"Started a new Spark driver on {master}.",
            "Session 'a' made again with its settings and its 2 file(s) added again.",
            "`spark` now refers to the new session.",
            "Session 'b' made again with its settings and its 1 file(s) added again.",
            "Streaming queries lost with the old driver (start them again): 'rates_b' of b.",
            "DataFrames, UDFs and columns made before belong to the old driver: run the cells "
            "that made them again.",
            "Adopted session 'mine' was dropped (its SparkContext is gone): make it again, "
            "then `%spark_session adopt mine VARIABLE`.",
        ]
        assert spark_log_lines(restarted.stderr) == []
        assert kernel.value(f"{REGISTRY}.names()") == ["a", "b"]
        assert kernel.value("spark.sparkContext.master") == master
        assert kernel.value("spark.conf.get('spark.sql.shuffle.partitions')") == "3"
        # What was made on the dead driver says so in one line, with what to do.
        for stale_cell, line in [
            (
                "old_df.count()",
                "This DataFrame belongs to session 'a' as it was before `%spark_session "
                "restart` (its SparkContext is gone): run the cells that made it again.",
            ),
            (
                "spark.range(2).select(_read_files('id')).count()",
                "This object was made on a Spark driver that is gone (`%spark_session restart` "
                "started a new one): run the cells that made it again (DataFrames, UDFs, "
                "columns and the variables holding them).",
            ),
        ]:
            assert_session_lost(kernel.execute(stale_cell), line)
        assert kernel.ok(READ_FILES_CELL).result_text == "'from-a|helper-of-a'"
        kernel.ok("%spark_session use b")
        assert kernel.ok(READ_ARCHIVE_CELL).result_text == '"in-b\'s-archive"'
        # b's UDFs run in its own Python environment again.
        assert kernel.ok(PACKAGE_VERSION_CELL).result_text == "'1.0'"
        # The old context's jobs stay on the board as they ended; new ones are new.
        wait_for_group(kernel, lambda g: g["session"] == "b" and g["state"] == "succeeded")
        final = {g["id"]: g for g in board(kernel)["groups"]}
        assert final[group["id"]]["state"] == "lost"
        # The new driver's job ids start again at 0: the old jobs are marked, and no
        # view links them to the live driver's UI (issue 28, 9); the new ones are not.
        assert [j["previous_driver"] for j in final[group["id"]]["jobs"]] == [True], final
        new_jobs = [j for g in final.values() if g["session"] == "b" for j in g["jobs"]]
        assert new_jobs and not any(j["previous_driver"] for j in new_jobs), new_jobs
    finally:
        kernel.shutdown()


def in_r(kernel: Kernel, expression: str) -> Any:
    kernel.ok(f"%%spark_session r\n_jss_value = {expression}")
    return kernel.value("_jss_value")


def test_a_lost_server_is_one_line_and_reconnect_brings_the_session_back(
    quiet: Kernel, server: Server, tmp_path: Path
) -> None:
    kernel = quiet
    have_session(kernel, "r", f"--remote {server.url} --conf spark.sql.shuffle.partitions=5")
    (tmp_path / "lookup.csv").write_text("lookup of r\n")
    kernel.ok(f"%spark_session add_file r {tmp_path / 'lookup.csv'}")
    assert in_r(kernel, "spark.range(1).select(read_lookup('id')).first()[0]") == "lookup of r"
    # Its own package: a server elsewhere gets it as the session's archive (auto).
    wheel = make_wheel(tmp_path, "jsstiny", "7.0")
    kernel.ok(f"{REGISTRY}.config.env_cache_dir = {str(tmp_path / 'envs')!r}")
    added = kernel.ok(f"%spark_session pip r {wheel}").stdout
    assert "Its executors get it as the session's archive 'python-env-" in added, added
    kernel.ok("r_package = connect_udf(lambda x: __import__('jsstiny').__version__, StringType())")
    assert in_r(kernel, "spark.range(1).select(r_package('id')).first()[0]") == "7.0"
    where = f"sc://localhost:{server.port}"
    # Bound before the kill: once the board's next poll finds the server gone, `use r`
    # is refused (in one line, the way out included).
    kernel.ok("%spark_session use r\nold_r = spark.range(3)")
    server.kill()

    started = time.monotonic()
    down = kernel.execute("spark.range(3).count()")
    assert time.monotonic() - started < 30
    assert down.error_name == "SessionLostError" and len(down.traceback) == 1
    assert down.error_value.startswith(
        f"Session 'r' is unusable: its Spark Connect server {server.url.split('/;')[0]} cannot "
        "be reached ("
    ), down.error_value
    assert down.error_value.endswith(
        "): when it is back, run `%spark_session reconnect r` to make it again with its "
        "settings and files."
    )
    assert server.token not in down.error_value + down.stderr
    assert "RETRIES_EXCEEDED" not in down.stderr
    listing = kernel.ok("%spark_session list").stdout
    assert f"Session 'r' is unusable: its Spark Connect server {where} cannot be reached" in (
        listing
    )
    # A second session on the dead server: one line, nothing registered.
    refused = kernel.execute(f"%spark_session create r2 --remote {server.url}")
    assert f"No Spark Connect server answers at {where}" in refused.usage_error
    # Reconnect while the server is still down: one line, the session kept as it was.
    early = kernel.execute("%spark_session reconnect r")
    assert f"No Spark Connect server answers at {where}" in early.usage_error

    server.start()  # the same address, a new server that does not know the session
    forgotten = kernel.execute("spark.range(3).count()")
    assert forgotten.error_name == "SessionLostError", forgotten.error_value
    # The server knows no such session; or gRPC's channel, which backed off while the
    # server was down, has not reconnected yet (it may even still find it unreachable, a
    # loaded machine's CI saw it): either way the session must be made again.
    assert forgotten.error_value in [
        f"Session 'r' is unusable: its Spark Connect server {where} {reason}: run "
        "`%spark_session reconnect r` to make it again with its settings and files."
        for reason in (
            "no longer knows this session (it restarted?)",
            "answers again, but this session's connection to it broke",
        )
    ] or (
        forgotten.error_value.startswith(
            f"Session 'r' is unusable: its Spark Connect server {where} cannot be reached ("
        )
        and forgotten.error_value.endswith(down.error_value.split("): ", 1)[1])
    ), forgotten.error_value
    # The name is still r's: a new session takes another name.
    kernel.ok(f"%spark_session create r2 --remote {server.url}")

    reconnected = kernel.ok("%spark_session reconnect r").stdout
    assert reconnected == (
        f"Session 'r' made again on Spark Connect {where} with its settings and its 2 file(s) "
        "added again.\nDataFrames, UDFs and columns made before belong to the old session: run "
        "the cells that made them again.\n`spark` now refers to the new session.\n"
    )
    assert_session_lost(
        kernel.execute("old_r.count()"),
        "This DataFrame belongs to session 'r' as it was before `%spark_session reconnect`: "
        "run the cells that made it again.",
    )
    assert kernel.value("spark.conf.get('spark.sql.shuffle.partitions')") == "5"
    assert in_r(kernel, "spark.range(1).select(read_lookup('id')).first()[0]") == "lookup of r"
    assert in_r(kernel, "spark.range(1).select(r_package('id')).first()[0]") == "7.0"
    sessions = {s["name"]: s for s in board(kernel)["sessions"]}
    assert sessions["r"]["disconnected"] == "" and sessions["r2"]["disconnected"] == ""
