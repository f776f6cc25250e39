"""Spark Connect beside classic Spark in one kernel, through a real kernel (jupyter_client)
and a real local Spark Connect server (``--remote local``): the standard
``pyspark.sql.functions`` imports (``lit``, ``udf``, ``sum``, Column expressions,
``pandas_udf``) follow the session the cell is bound to, and so does Spark's active
session; a Column or UDF of the other flavour is one line saying so.

A kernel whose sessions are all Connect ones is tested beside the classic masters in
test_session_identity_kernel.py (one test per behaviour, run on every backend).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import start_extension_kernel

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
