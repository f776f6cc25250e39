"""Spark Connect sessions as Spark sees them, through a real kernel (jupyter_client) and
a real local Spark Connect server (``--remote local``):

- the standard ``pyspark.sql.functions`` imports (``lit``, ``udf``, ``sum``, Column
  expressions, ``pandas_udf``) work in a kernel whose only session is a Connect one, and
  in a kernel that mixes classic and Connect sessions, where the flavour follows the
  session the cell is bound to; a UDF reads its session's file;
- binding a session (``use``, ``%%spark_session``, ``running_in``) makes it the one
  ``SparkSession.getActiveSession()`` and ``SparkSession.active()`` return in that
  thread, and the previous one after;
- stopping one Connect session leaves the next UDF of another working;
- an operation belongs to the session it was sent on: a cell bound to r1 that queries
  r2 shows an r2 group; operations outside any managed cell are the session's
  ``<session>:background`` group, cancelled without touching another session's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import start_extension_kernel
from test_job_board_kernel import board
from test_job_board_kernel import request as protocol_request

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

CONF = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false', "
    "'spark.ui.showConsoleProgress': 'false'}\n"
    "c.SparkSessionsConfig.connect_master = 'local[2]'\n"
    "c.SparkSessionsConfig.connect_conf = {'spark.ui.enabled': 'false'}\n"
    "c.SparkSessionsConfig.connect_retry_seconds = 3.0\n"
)

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"

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


def start_kernel(tmp_path_factory: pytest.TempPathFactory) -> Kernel:
    kernel = start_extension_kernel(tmp_path_factory, CONF)
    kernel.ok(f"_reg = {REGISTRY}\n{ACTIVE}")
    return kernel


def have_sessions(kernel: Kernel, *names: str) -> None:
    """Connect sessions ``names``, created unless an earlier test made them."""
    for name in names:
        if name not in kernel.value("_reg.names()"):
            kernel.ok(f"%spark_session create {name} --remote local")


def groups(kernel: Kernel) -> dict[str, dict[str, Any]]:
    return {g["id"]: g for g in board(kernel)["groups"]}


def wait_until(
    kernel: Kernel, what: str, found: Callable[[dict[str, dict[str, Any]]], bool], timeout: float
) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        now = groups(kernel)
        if found(now):
            return now
        if time.monotonic() > deadline:
            shown = {
                g: (v["session"], v["state"], [j["status"] for j in v["jobs"]])
                for g, v in now.items()
            }
            raise AssertionError(f"{what}: not within {timeout} s; board groups: {shown}")
        time.sleep(0.2)


def running(group: dict[str, Any] | None) -> bool:
    return group is not None and any(j["status"] == "RUNNING" for j in group["jobs"])


# -- a kernel whose sessions are all Spark Connect ones -------------------------------


@pytest.fixture(scope="module")
def connect_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    kernel = start_kernel(tmp_path_factory)
    yield kernel
    kernel.shutdown()


def test_standard_imports_work_in_a_kernel_whose_only_session_is_connect(
    connect_only: Kernel,
) -> None:
    kernel = connect_only
    have_sessions(kernel, "c")
    assert kernel.value("_reg.names()") == ["c"]
    kernel.ok("%spark_session use c")
    kernel.ok("open('lookup.csv', 'w').write('lookup of c\\n')")  # in the kernel's cwd
    kernel.ok("%spark_session add_file c lookup.csv")
    ran = kernel.execute(STANDARD_CELL)
    assert ran.status == "ok", f"{ran.error_name}: {ran.error_value[:300]}"
    assert kernel.value("_got") == expected("lookup of c")
    # No classic SparkContext was started for that.
    assert kernel.value("__import__('pyspark').SparkContext._active_spark_context is None")
    shown = wait_until(
        kernel,
        f"c:{ran.execution_count} with the cell's operations",
        lambda g: bool(g.get(f"c:{ran.execution_count}", {}).get("jobs")),
        timeout=30,
    )
    assert shown[f"c:{ran.execution_count}"]["session"] == "c"


def test_binding_makes_the_connect_session_sparks_active_one(connect_only: Kernel) -> None:
    kernel = connect_only
    have_sessions(kernel, "r1", "r2")
    r1, r2 = kernel.value("_ident('r1')"), kernel.value("_ident('r2')")
    assert r1 != r2
    kernel.ok("%spark_session use r1")
    assert kernel.value("_active()") == [r1, r1], "after use r1"
    kernel.ok("%spark_session use r2")
    assert kernel.value("_active()") == [r2, r2], "after use r2"

    kernel.ok("%%spark_session r1\n_inside = _active()")
    assert kernel.value("_inside") == [r1, r1], "inside %%spark_session r1"
    assert kernel.value("_active()") == [r2, r2], "after the %%spark_session r1 cell"

    kernel.ok(
        "with _reg.running_in('r1', execution_count=9401):\n"
        "    _in_block = _active()\n"
        "_after_block = _active()"
    )
    assert kernel.value("_in_block") == [r1, r1], "inside running_in('r1')"
    assert kernel.value("_after_block") == [r2, r2], "after running_in('r1')"

    kernel.ok(
        "import threading\n"
        "_probe, _hold, _entered = {}, threading.Event(), threading.Event()\n"
        "def _in_thread():\n"
        "    with _reg.running_in('r1', execution_count=9402):\n"
        "        _probe['in'] = _active()\n"
        "        _entered.set()\n"
        "        _hold.wait(30)\n"
        "_t = threading.Thread(target=_in_thread)\n"
        "_t.start()\n"
        "_entered.wait(30)"
    )
    assert kernel.value("_probe['in']") == [r1, r1], "a thread's running_in('r1')"
    assert kernel.value("_active()") == [r2, r2], "the main thread while the thread is in r1"
    kernel.ok("_hold.set(); _t.join(30)")


def test_an_operation_sent_on_r2_from_a_cell_bound_to_r1_is_filed_under_r2(
    connect_only: Kernel,
) -> None:
    kernel = connect_only
    have_sessions(kernel, "r1", "r2")
    kernel.ok("%spark_session use r1\nr2_s = _reg.session('r2')")
    ran = kernel.ok("r2_s.range(0, 4, 1, 2).selectExpr('sum(id)').collect()[0][0]")
    assert ran.result_text == "6"
    count = ran.execution_count
    shown = wait_until(
        kernel,
        f"the operation in r2:{count}",
        lambda g: bool(g.get(f"r2:{count}", {}).get("jobs")),
        timeout=30,
    )
    assert shown[f"r2:{count}"]["session"] == "r2"
    assert not shown.get(f"r1:{count}", {}).get("jobs"), shown.get(f"r1:{count}")


def test_connect_operations_outside_managed_cells_are_each_sessions_background_group(
    connect_only: Kernel,
) -> None:
    kernel = connect_only
    have_sessions(kernel, "r1", "r2")
    kernel.ok(
        "import threading\n"
        "from pyspark.sql.connect.functions import udf as _connect_udf\n"
        "from pyspark.sql.types import LongType\n"
        "@_connect_udf(LongType())\n"
        "def _slow1(x):\n"
        "    import time; time.sleep(1); return x\n"
        "@_connect_udf(LongType())\n"
        "def _slow60(x):\n"
        "    import time; time.sleep(60); return x\n"
        "_bg = {}\n"
        "def _bg_run(key, job):\n"
        "    try:\n"
        "        _bg[key] = job()\n"
        "    except BaseException as exc:\n"
        "        _bg[key] = 'error: ' + str(exc)[:500]\n"
        "r1_s, r2_s = _reg.session('r1'), _reg.session('r2')\n"
        # Plain threads with captured sessions: no managed cell started these.
        "_t2 = threading.Thread(target=_bg_run, args=('r2', lambda: "
        "r2_s.range(0, 1, 1, 1).select(_slow60('id')).collect()))\n"
        "_t1 = threading.Thread(target=_bg_run, args=('r1', lambda: "
        "sum(r.v for r in r1_s.range(0, 5, 1, 1).select(_slow1('id').alias('v')).collect())))\n"
        "_t2.start(); _t1.start()"
    )
    try:
        check_background_groups(kernel)
    finally:  # nothing of this test may hold the server's slots for the next one
        kernel.ok("r1_s.interruptAll(); r2_s.interruptAll(); _t2.join(60); _t1.join(60)")


def check_background_groups(kernel: Kernel) -> None:
    shown = wait_until(
        kernel,
        "r2:background and r1:background running",
        lambda g: running(g.get("r2:background")) and running(g.get("r1:background")),
        timeout=30,
    )
    assert shown["r2:background"]["session"] == "r2"
    assert shown["r1:background"]["session"] == "r1"
    reply, _ = protocol_request(
        kernel, {"version": 1, "action": "cancel", "groups": ["r2:background"]}
    )
    assert reply["status"] == "ok" and reply["cancelling"] == ["r2:background"], reply
    kernel.ok("_t2.join(60); _t1.join(120)")
    assert "OPERATION_CANCELED" in str(kernel.value("_bg['r2']"))
    assert kernel.value("_bg['r1']") == 10, "r1's background query runs on to its result"


def test_stopping_one_connect_session_leaves_the_next_udf_of_another_working(
    connect_only: Kernel,
) -> None:
    """Connect's ``udf()`` reads settings from the active session: a UDF made in a cell
    bound to r2 takes r2's (its Arrow setting says which), and still works after the
    session that was active before is stopped."""
    kernel = connect_only
    have_sessions(kernel, "c", "r1", "r2")
    kernel.ok(
        "%%spark_session r2\nspark.conf.set('spark.sql.execution.pythonUDF.arrow.enabled', 'true')"
    )
    udf_cell = (
        "from pyspark.sql.connect.functions import udf as _cudf\n"
        "from pyspark.sql.types import LongType\n"
        "@_cudf(LongType())\n"
        "def _twice(x):\n"
        "    return 2 * x\n"
        "_rows = spark.range(4).select(_twice('id')).collect()\n"
        "_made = [_twice.evalType, sum(r[0] for r in _rows)]"
    )
    arrow, plain = 101, 100  # PythonEvalType.SQL_ARROW_BATCHED_UDF, SQL_BATCHED_UDF
    # r1, then c: the session PySpark itself made active (the first one created), which
    # a binding must not leave in charge either.
    for victim in ("r1", "c"):
        kernel.ok(
            f"%%spark_session {victim}\n"
            "spark.conf.set('spark.sql.execution.pythonUDF.arrow.enabled', 'false')"
        )
        kernel.ok(f"%spark_session use {victim}\n{udf_cell}")
        assert kernel.value("_made") == [plain, 12], f"a UDF of {victim}"
        kernel.ok(f"%%spark_session r2\n{udf_cell}")
        assert kernel.value("_made") == [arrow, 12], "a UDF of r2 takes r2's settings"
        kernel.ok(f"%spark_session stop {victim}")
        kernel.ok(f"assert _reg._releases[{victim!r}].wait(30)")
        for how in ("%%spark_session r2\n", "%spark_session use r2\n"):
            ran = kernel.execute(how + udf_cell)
            assert ran.status == "ok", (
                f"after stop {victim}, {how.strip()}: {ran.error_name}: {ran.error_value[:300]}"
            )
            assert kernel.value("_made") == [arrow, 12], f"after stop {victim}, {how.strip()}"


# -- a kernel that mixes classic and Spark Connect sessions ----------------------------


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    kernel = start_kernel(tmp_path_factory)
    kernel.ok("%spark_session create k\n%spark_session create c --remote local")
    yield kernel
    kernel.shutdown()


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
    assert kernel.value("_in_c") == [c, c], "inside %%spark_session c"
    assert kernel.value("_in_k") == [k, k], "inside %%spark_session k"
    kernel.ok("%spark_session use k")
    assert kernel.value("_active()") == [k, k], "after use k"
    kernel.ok("with _reg.running_in('c', execution_count=9501):\n    _in_block = _active()")
    assert kernel.value("_in_block") == [c, c], "inside running_in('c')"
    assert kernel.value("_active()") == [k, k], "after running_in('c')"


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
