"""Spark Connect sessions beside classic ones, through a real kernel (jupyter_client), a
real local Spark Connect server (started by ``--remote local``) and a classic JVM:
isolated files, the board and cancel on the control channel, release on stop, the
standard ``pyspark.sql.functions`` imports (``lit``, ``udf``, ``sum``, Column
expressions, ``pandas_udf``) and Spark's active session following the session the cell
is bound to (a Column or UDF of the other flavour is one line saying so), and a server
that dies mid-query.

A kernel whose sessions are all Connect ones is tested beside the classic masters in
test_session_identity_kernel.py (one test per behaviour, run on every backend)."""

from __future__ import annotations

import os
import re
import signal
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import SharedKernel
from test_job_board_kernel import board, request, wait_for_group

from kernel_driver import Kernel, assert_active, assert_cancelled_in_one_line, assert_session_lost

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

# Connect UDFs come from pyspark.sql.connect.functions: PySpark picks the flavour of
# pyspark.sql.functions per process, and this kernel also runs classic sessions.
UDFS = """
from pyspark.sql.connect.functions import udf as connect_udf
from pyspark.sql.types import LongType, StringType

@connect_udf(returnType=StringType())
def read_lookup(x):
    try:
        return open("lookup.csv").read().strip()
    except FileNotFoundError:
        return "missing"

@connect_udf(returnType=StringType())
def read_packed(x):
    return open("pack/inner.txt").read().strip()

@connect_udf(returnType=StringType())
def helper_says(x):
    import helper
    return helper.WHO

@connect_udf(returnType=LongType())
def sleepy(x):
    import time
    time.sleep(120)
    return x
"""

CONNECT_LONG_CELL = "spark.range(0, 2, 1, 1).select(sleepy('id')).collect()"


# Ordinary user code, as every Spark Connect example has it: the standard imports.
STANDARD_CELL = """
from pyspark.sql.functions import col, lit, pandas_udf, udf, sum as F_sum
from pyspark.sql.types import StringType

@udf(StringType())
def read_lookup(x):
    return open('lookup.csv').read().strip()

@pandas_udf('long')
def plus_one(v):
    return v + 1

_got = [
    [r[0] for r in spark.range(3).select(lit(1)).collect()],
    spark.range(1).select(read_lookup('id')).first()[0],
    spark.range(5).select(F_sum('id')).first()[0],
    spark.range(3).select((col('id') * 2).alias('x')).agg(F_sum('x')).first()[0],
    [r[0] for r in spark.range(3).select(plus_one('id')).collect()],
]
"""


def expected(lookup: str) -> list[Any]:
    return [[1, 1, 1], lookup, 10, 6, [1, 2, 3]]


ACTIVE = """
from pyspark.sql import SparkSession as _SparkSession

def _active():
    '''[getActiveSession(), active()] in this thread, by Connect session id or classic
    session UUID.'''
    def ident(s):
        if s is None:
            return None
        sid = getattr(s, 'session_id', None)
        return sid if sid is not None else s._jsparkSession.sessionUUID()
    try:
        found = ident(_SparkSession.getActiveSession())
    except Exception as exc:
        found = f'raised {type(exc).__name__}: {exc}'[:200]
    try:
        active = ident(_SparkSession.active())
    except Exception as exc:
        active = f'raised {type(exc).__name__}: {exc}'[:200]
    return [found, active]

def _ident(name):
    s = _reg.session(name)
    sid = getattr(s, 'session_id', None)
    return sid if sid is not None else s._jsparkSession.sessionUUID()
"""


def connect_registry(expression: str) -> str:
    return f"__import__('jupyter_spark_sessions').default_registry().{expression}"


@pytest.fixture(scope="module")
def kernel(shared_kernel: SharedKernel) -> Kernel:
    """The run's shared kernel (its configuration has the local Connect server's
    settings: conftest's SPARK_TEST_CONF), reset for this module, with Connect sessions c1
    and c2. Its last test kills the local server: the next ``--remote local`` starts a
    new one, as ``reconnect`` does."""
    k = shared_kernel.reset()
    k.ok("%spark_session create c1 --remote local\n%spark_session create c2 --remote local")
    k.ok(f"{UDFS}\n_reg = __import__('jupyter_spark_sessions').default_registry()\n{ACTIVE}")
    return k


def in_session(kernel: Kernel, name: str, expression: str) -> Any:
    kernel.ok(f"%%spark_session {name}\n_jss_value = {expression}")
    return kernel.value("_jss_value")


def test_same_name_files_archives_and_pyfiles_stay_in_their_connect_session(
    kernel: Kernel, tmp_path: Path
) -> None:
    for name in ("c1", "c2"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "lookup.csv").write_text(f"lookup of {name}\n")
        with zipfile.ZipFile(folder / "pack.zip", "w") as archive:
            archive.writestr("inner.txt", f"packed for {name}")
        (folder / "helper.py").write_text(f"WHO = {name!r}\n")
        kernel.ok(
            f"%spark_session add_file {name} {folder / 'lookup.csv'}\n"
            f"%spark_session add_archive {name} {folder / 'pack.zip'} --as pack\n"
            f"%spark_session add_pyfile {name} {folder / 'helper.py'}"
        )
    kernel.ok("%spark_session create c3 --remote local")  # adds nothing
    try:
        for name in ("c1", "c2"):
            row = in_session(
                kernel,
                name,
                "[list(r) for r in spark.range(1).select("
                "read_lookup('id'), read_packed('id'), helper_says('id')).collect()]",
            )
            assert row == [[f"lookup of {name}", f"packed for {name}", name]]
            listing = kernel.ok(f"%spark_session files {name}").stdout
            assert "lookup.csv" in listing and "pack" in listing and "helper.py" in listing
        assert in_session(kernel, "c3", "spark.range(1).select(read_lookup('id')).first()[0]") == (
            "missing"
        )
        # Same bad-input rules as classic: one line, nothing registered.
        bad = kernel.execute(f"%spark_session add_file c1 {tmp_path / 'nope.csv'}")
        assert "No such file" in bad.usage_error or "does not exist" in bad.usage_error, bad.stderr
        again = kernel.execute(f"%spark_session add_file c1 {tmp_path / 'c2' / 'lookup.csv'}")
        assert "already has a file named 'lookup.csv'" in again.usage_error
        assert in_session(kernel, "c1", "spark.range(1).select(read_lookup('id')).first()[0]") == (
            "lookup of c1"
        )
    finally:
        kernel.ok("%spark_session stop c3")


def test_list_and_board_show_classic_and_connect_sessions_with_their_backend(
    kernel: Kernel,
) -> None:
    kernel.ok("%spark_session create k1")
    listing = kernel.ok("%spark_session list").stdout
    lines = {line.split()[0]: line for line in listing.splitlines()[2:] if line.strip()}
    assert "connect" in lines["c1"] and "sc://localhost:" in lines["c1"]
    assert "classic" in lines["k1"] and "local[2]" in lines["k1"]
    assert "token" not in listing
    deadline = time.monotonic() + 10
    while "k1" not in (sessions := {s["name"]: s for s in board(kernel)["sessions"]}):
        assert time.monotonic() < deadline, board(kernel)
        time.sleep(0.2)
    assert sessions["c1"]["backend"] == "connect" and sessions["k1"]["backend"] == "classic"
    assert sessions["c1"]["disconnected"] == ""
    # The views list each session's files (the first test added these to c1).
    c1_files = {(f["name"], f["kind"]) for f in sessions["c1"]["files"]}
    assert {("lookup.csv", "file"), ("pack", "archive"), ("helper.py", "pyfile")} <= c1_files
    assert sessions["k1"]["files"] == []
    assert "token" not in str(board(kernel))
    # Their share of the slots: each in its own pool (the local Connect server makes
    # it with weight 1); a client cannot see the server's slots.
    shares = {n: (sessions[n]["share"], sessions[n]["slots"]) for n in ("c1", "k1")}
    assert shares == {"c1": ("weight 1", 0), "k1": ("weight 1", 2)}
    info = kernel.ok("%spark_session info c1").stdout
    assert "scheduling    FAIR on the server, in its own pool (weight 1)" in info


# Per backend of the cancelled cell: a query of the other backend's session (10 rows x
# 1 s, one task) that runs meanwhile in a thread, and the busy cell's 120 s query.
OTHER_BACKENDS_QUERY = {
    "connect": (
        "k1",
        "from pyspark import InheritableThread\n"
        "def _slow(x):\n"
        "    import time\n"
        "    time.sleep(1)\n"
        "    return x\n"
        "def _run_other(session=spark):\n"
        "    rows = session.sparkContext.parallelize(range(10), 1)\n"
        "    other_result['sum'] = rows.map(_slow).sum()\n"
        "other_thread = InheritableThread(target=_run_other)\n",
    ),
    "classic": (
        "c2",
        "import threading\n"
        "@connect_udf(returnType=LongType())\n"
        "def _slow_c2(x):\n"
        "    import time\n"
        "    time.sleep(1)\n"
        "    return x\n"
        "def _run_other(session=spark):\n"
        "    rows = session.range(0, 10, 1, 1).select(_slow_c2('id').alias('v')).collect()\n"
        "    other_result['sum'] = sum(r.v for r in rows)\n"
        "other_thread = threading.Thread(target=_run_other)\n",
    ),
}
BUSY_CELL = {
    "connect": ("c1", CONNECT_LONG_CELL),
    "classic": (
        "k1",
        "from pyspark.sql.functions import udf\n"
        "@udf('long')\n"
        "def _sleepy_classic(x):\n"
        "    import time\n"
        "    time.sleep(120)\n"
        "    return x\n"
        "spark.range(0, 2, 1, 1).select(_sleepy_classic('id')).collect()",
    ),
}


@pytest.mark.parametrize(
    ("backend", "how"), [("connect", "control"), ("classic", "control"), ("connect", "interrupt")]
)
def test_cancel_a_busy_cell_on_control_leaves_the_other_backends_query_running(
    kernel: Kernel, backend: str, how: str
) -> None:
    """A control-channel cancel of the busy cell's group, or the kernel's Interrupt,
    ends the cell in one line naming its group; the other backend's query runs on."""
    if "k1" not in kernel.value("_reg.names()"):
        kernel.ok("%spark_session create k1")
    other, start_other = OTHER_BACKENDS_QUERY[backend]
    kernel.ok(f"%%spark_session {other}\nother_result = {{}}\n{start_other}other_thread.start()")
    session, busy_cell = BUSY_CELL[backend]
    used = kernel.ok(f"%spark_session use {session}")
    busy = kernel.client.execute(busy_cell)
    # This cell's group (an earlier test's group of the session may still show running).
    assert used.execution_count is not None
    busy_group = f"{session}:{used.execution_count + 1}"
    group = wait_for_group(
        kernel, lambda g: g["id"] == busy_group and g["state"] == "running" and g["jobs"]
    )
    if backend == "connect":
        assert group["jobs"][0]["operation_id"]
        assert group["tasks"]["total"] == 1
    if how == "interrupt":
        assert kernel.manager is not None
        kernel.manager.interrupt_kernel()
        result = kernel.collect(busy, timeout=60)
        assert_cancelled_in_one_line(
            result, group["id"], "by the kernel's Interrupt", error_name="KeyboardInterrupt"
        )
    else:
        reply, seconds = request(
            kernel, {"version": 1, "action": "cancel", "groups": [group["id"]]}
        )
        assert reply["status"] == "ok" and reply["cancelling"] == [group["id"]], reply
        assert seconds < 1.0
        result = kernel.collect(busy, timeout=60)
        assert_cancelled_in_one_line(result, group["id"])
    ended = wait_for_group(kernel, lambda g: g["id"] == group["id"] and g["state"] != "cancelling")
    assert ended["state"] == "cancelled" and ended["jobs"][0]["status"] == "FAILED"
    assert ended["jobs"][0]["state"] == "cancelled"  # in the views' words (issue 28, 6)
    kernel.ok("other_thread.join(120)")
    assert kernel.value("other_result") == {"sum": 45}
    if backend == "classic":
        # The other query ran in Connect session c2 (a plain thread: its background
        # group): once it succeeded, its group shows its final counts (issue 28, 6:
        # they could stay at the client's last report).
        done = wait_for_group(
            kernel, lambda g: g["id"] == "c2:background" and g["state"] == "succeeded"
        )
        assert done["tasks"]["completed"] == done["tasks"]["total"] > 0, done


def test_stop_releases_the_session_on_the_server_and_spares_the_others(kernel: Kernel) -> None:
    kernel.ok("%spark_session create gone --remote local")
    session_id = kernel.value(connect_registry("get('gone').session_id"))
    kernel.ok("%%spark_session gone\ngone_df = spark.range(3)")
    kernel.ok("%spark_session stop gone")
    kernel.ok(
        f"_jss_gone_release = {connect_registry('_releases')}['gone']\n"
        "assert _jss_gone_release.wait(30) and _jss_gone_release.error is None"
    )
    # An object the released session made: one line saying whose it was. (Before the
    # release ends, its query would be cancelled as the stop's: "... by `stop`".)
    assert_session_lost(
        kernel.execute("gone_df.count()"),
        "This DataFrame belongs to session 'gone', which `%spark_session stop` ended: run the "
        "cells that made it again.",
    )
    # A new client asking the server for that session id: the server released it.
    reattach = kernel.execute(
        "from pyspark.sql.connect.session import SparkSession as _ConnectSession\n"
        f"_url = {connect_registry('local_connect_server.endpoint.url')}\n"
        f"_again = _ConnectSession.builder.remote(_url + ';session_id={session_id}').create()\n"
        "_again.range(1).count()"
    )
    assert reattach.status == "error"
    assert "SESSION_CLOSED" in reattach.error_value + "".join(reattach.traceback)
    # A client of this test's own, stopped: at exit PySpark's client says goodbye to its
    # server, and retries for minutes once a later test killed that server.
    kernel.ok("_again.stop()")
    assert in_session(kernel, "c1", "spark.range(5).count()") == 5


SERVER_DAEMONS = (
    "import psutil as _psutil\n"
    "def _server_daemons():  # the daemons, not the workers they fork\n"
    "    found = 0\n"
    "    for child in _psutil.Process({registry}.pid).children(recursive=True):\n"
    "        try:\n"
    "            daemon = 'pyspark.daemon' in ' '.join(child.cmdline())\n"
    "            found += daemon and 'pyspark.daemon' not in ' '.join(child.parent().cmdline())\n"
    "        except (_psutil.Error, AttributeError):  # a zombie, gone meanwhile\n"
    "            pass\n"
    "    return found"
).format(registry=connect_registry("local_connect_server"))


def test_a_stopped_sessions_python_daemon_ends_on_the_server_and_the_others_run_on(
    kernel: Kernel,
) -> None:
    # Spark keeps a Python worker daemon per Connect session that ran Python, for the
    # server's life; jss.EndedSessionDaemons stops an ended session's (looking every
    # second here: conftest's connect_conf).
    kernel.ok(SERVER_DAEMONS)
    udf_cell = "%%spark_session {}\nspark.range(4).select(read_lookup('id')).collect()"
    kernel.ok("%spark_session create d1 --remote local\n%spark_session create d2 --remote local")
    before = kernel.value("_server_daemons()")
    for name in ("d1", "d2", "c1"):
        kernel.ok(udf_cell.format(name))
    assert kernel.value("_server_daemons()") >= before + 2  # d1's and d2's at least
    # The server's workers import the installed PySpark, not Spark's zip of it
    # (backends/spark_daemon.py; a compiled copy: each worker starts cheaper).
    kernel.ok(
        "%%spark_session d1\nfrom pyspark.sql.functions import udf as _udf\n"
        "_where = spark.range(1).select(_udf(lambda _: __import__('pyspark').__file__, "
        "'string')('id')).first()[0]"
    )
    assert kernel.value("_where") == kernel.value("__import__('pyspark').__file__")
    with_both = kernel.value("_server_daemons()")
    kernel.ok("%spark_session stop d1")
    kernel.ok(
        "import time as _time\n_deadline = _time.monotonic() + 30\n"
        f"while _server_daemons() > {with_both - 1} and _time.monotonic() < _deadline:\n"
        "    _time.sleep(0.5)"
    )
    assert kernel.value("_server_daemons()") == with_both - 1
    # The live sessions' workers still serve them; d2 ended later ends its own too.
    assert (
        "[Row"
        in kernel.ok(udf_cell.format("d2")).stdout
        + kernel.ok(
            "%%spark_session c1\nprint(spark.range(2).select(read_lookup('id')).collect())"
        ).stdout
    )
    kernel.ok("%spark_session stop d2")


def test_adopted_connect_session_is_listed_and_never_released(kernel: Kernel) -> None:
    url = connect_registry("local_connect_server.endpoint.url")
    kernel.ok(
        "from pyspark.sql.connect.session import SparkSession as _ConnectSession\n"
        f"mine = _ConnectSession.builder.remote({url}).create()"
    )
    kernel.ok("%spark_session adopt yours mine")
    listing = kernel.ok("%spark_session list").stdout
    assert re.search(r"yours\s+adopted\s+connect\s+sc://localhost:\d+", listing), listing
    kernel.ok("%%spark_session yours\n_jss_adopted = spark.range(3).count()")
    assert kernel.value("_jss_adopted") == 3
    kernel.ok("%spark_session stop yours")
    assert kernel.value("mine.range(2).count()") == 2  # only unregistered, still usable
    kernel.ok("mine.stop()")  # the user's to stop (see _again above)


def test_bad_remotes_are_one_line_errors_within_a_bound(kernel: Kernel) -> None:
    started = time.monotonic()
    for command, message in [
        ("create x --remote sc://localhost:1", "No Spark Connect server answers at"),
        ("create x --remote http://localhost:15002", "--remote takes sc://HOST:PORT"),
        ("create x --remote local --master local[1]", "--master and --remote"),
    ]:
        result = kernel.execute(f"%spark_session {command}")
        assert message in result.usage_error, (command, result.stderr)
    assert time.monotonic() - started < 15
    assert "x" not in [s["name"] for s in board(kernel)["sessions"]]


# -- classic and Connect sessions side by side in cells -------------------------------


@pytest.fixture
def mixed(kernel: Kernel) -> Kernel:
    """The kernel with a classic session k and a Connect session c (made by the first
    test that needs them)."""
    names = kernel.value("_reg.names()")
    if "k" not in names:
        kernel.ok("%spark_session create k")
    if "c" not in names:
        kernel.ok("%spark_session create c --remote local")
    return kernel


def test_standard_imports_follow_the_bound_session_in_a_mixed_kernel(
    mixed: Kernel, tmp_path: Path
) -> None:
    kernel = mixed
    for name in ("c", "k"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "lookup.csv").write_text(f"lookup of {name}\n")
        kernel.ok(f"%spark_session add_file {name} {tmp_path / name / 'lookup.csv'}")
    # c, then k, then c again: the flavour follows each cell's session.
    for name in ("c", "k", "c"):
        ran = kernel.execute(f"%%spark_session {name}\n{STANDARD_CELL}")
        assert ran.status == "ok", f"in {name}: {ran.error_name}: {ran.error_value[:300]}"
        assert kernel.value("_got") == expected(f"lookup of {name}"), f"in {name}"
    kernel.ok("%spark_session use k")
    ran = kernel.execute(STANDARD_CELL)
    assert ran.status == "ok", f"use k: {ran.error_name}: {ran.error_value[:300]}"
    kernel.ok("%spark_session use c")
    ran = kernel.execute(STANDARD_CELL)
    assert ran.status == "ok", f"use c: {ran.error_name}: {ran.error_value[:300]}"
    assert kernel.value("_got") == expected("lookup of c")


def test_active_session_follows_the_binding_in_a_mixed_kernel(mixed: Kernel) -> None:
    kernel = mixed
    c, k = kernel.value("_ident('c')"), kernel.value("_ident('k')")
    kernel.ok("%%spark_session c\n_in_c = _active()")
    kernel.ok("%%spark_session k\n_in_k = _active()")
    assert_active(kernel, c, "inside %%spark_session c", "_in_c")
    assert_active(kernel, k, "inside %%spark_session k", "_in_k")
    kernel.ok("%spark_session use k")
    assert_active(kernel, k, "after use k")
    kernel.ok("with _reg.running_in('c', execution_count=9501):\n    _in_block = _active()")
    assert_active(kernel, c, "inside running_in('c')", "_in_block")
    assert_active(kernel, k, "after running_in('c')")


def test_a_column_or_udf_of_the_other_flavour_is_one_line_saying_so(mixed: Kernel) -> None:
    kernel = mixed
    kernel.ok(
        "%%spark_session k\nfrom pyspark.sql.functions import lit, udf\n"
        "_classic_col = lit(1)\n_classic_udf = udf(lambda x: x, 'long')"
    )
    kernel.ok("%%spark_session c\n_connect_col = lit(2)")
    for cell in (
        "%%spark_session c\nspark.range(2).select(_classic_col).collect()",
        "%%spark_session c\nspark.range(2).select(_classic_udf('id')).collect()",
        "%%spark_session k\nspark.range(2).select(_connect_col).collect()",
    ):
        result = kernel.execute(cell)
        assert result.status == "error"
        assert len(result.traceback) == 1, result.traceback
        assert "mixes PySpark's classic and Spark Connect APIs" in result.traceback[0]
    assert kernel.ok("%%spark_session c\nspark.range(2).select(lit(3)).collect()[0][0]")


def test_local_server_killed_mid_query_then_reconnect_brings_the_session_back(
    kernel: Kernel,
) -> None:
    pid = kernel.value(connect_registry("local_connect_server.pid"))
    kernel.ok("%spark_session use c1")
    busy = kernel.client.execute(CONNECT_LONG_CELL)
    group = wait_for_group(kernel, lambda g: g["session"] == "c1" and g["state"] == "running")
    os.kill(pid, signal.SIGKILL)  # from here: the kernel's main shell is busy
    started = time.monotonic()
    result = kernel.collect(busy, timeout=120)
    assert result.error_name == "SessionLostError" and len(result.traceback) == 1
    assert re.fullmatch(
        r"Session 'c1' is unusable: its Spark Connect server sc://localhost:\d+ cannot be "
        r"reached \(.+\): when it is back, run `%spark_session reconnect c1` to "
        r"make it again with its settings and files\.",
        result.error_value,
    ), result.error_value
    assert "RETRIES_EXCEEDED" not in result.stderr and "debug_error_string" not in result.stderr
    assert time.monotonic() - started < 30
    ended = wait_for_group(kernel, lambda g: g["id"] == group["id"] and g["state"] == "lost")
    sessions = {s["name"]: s for s in board(kernel)["sessions"]}
    assert "reconnect c1" in sessions["c1"]["disconnected"]
    assert ended["jobs"][0]["status"] == "LOST"
    # The kernel and its classic session keep working.
    assert in_session(kernel, "k1", "spark.range(4).count()") == 4
    # A call on the dead server is a bounded, one-line error, not a hang.
    started = time.monotonic()
    dead = kernel.execute("%spark_session add_file c1 /etc/hostname")
    assert "reconnect c1" in dead.usage_error and time.monotonic() - started < 30, dead.stderr
    # Without restarting the kernel: our server died, so reconnect starts a new one and
    # makes c1 again there with its files.
    reconnected = kernel.ok("%spark_session reconnect c1", timeout=180).stdout
    assert re.match(
        r"Session 'c1' made again on Spark Connect sc://localhost:\d+ with its settings and its "
        r"3 file\(s\) added again\.\nDataFrames, UDFs and columns made before belong to the old "
        r"session: run the cells that made them again\.\n"
        r"`spark` now refers to the new session\.\n$",
        reconnected,
    ), reconnected
    row = in_session(
        kernel,
        "c1",
        "[list(r) for r in spark.range(1).select("
        "read_lookup('id'), read_packed('id'), helper_says('id')).collect()]",
    )
    assert row == [["lookup of c1", "packed for c1", "c1"]]
    assert "c1" not in [s["name"] for s in board(kernel)["sessions"] if s["disconnected"]]
    # c2 lost the same server: it says so until it is reconnected (or stopped).
    assert "reconnect c2" in kernel.execute("%spark_session use c2").usage_error
    kernel.ok("%spark_session stop c2")
    kernel.ok("%spark_session create c5 --remote local")
    assert in_session(kernel, "c5", "spark.range(6).count()") == 6
