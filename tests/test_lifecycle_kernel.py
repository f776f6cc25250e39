"""Who may stop what, through real kernels that really shut down.

Each test runs its own kernel, because kernel shutdown is what it observes. A probe
that observes the shell's ``exit_now`` *after* the extension loaded runs right after the
extension's own shutdown hook (traitlets call observers in order), while Spark's JVM is
still alive, and writes down what it found.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil
import pytest

from jupyter_spark_sessions.magics import spark_ui
from kernel_driver import Kernel, start_with_profile

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"

PROBE = """
import json, os, types
from pyspark import SparkContext
# What the probe watches lives on the probe itself, and it imports nothing at shutdown:
# by the time exit_now fires, the user namespace may already be cleared.
def _probe(change, _state=types.SimpleNamespace(dirs=[], session=None), json=json, os=os,
           SparkContext=SparkContext):
    sc = SparkContext._active_spark_context
    report = {{
        "context_stopped": sc is None or sc._jsc is None,
        "dirs_left": [d for d in _state.dirs if os.path.exists(d)],
    }}
    if _state.session is not None:
        report["user_session_works"] = _state.session.range(3).count() == 3
    # Written whole or not at all: a kernel killed while writing leaves no half report.
    with open({path!r} + ".tmp", "w") as fh:
        json.dump(report, fh)
    os.replace({path!r} + ".tmp", {path!r})
_watched = _probe.__defaults__[0]
get_ipython().observe(_probe, names="exit_now")
"""


def start_kernel(tmp_path: Path, report: Path) -> Kernel:
    """This test's own kernel, with the probe that writes ``report``."""
    kernel = start_with_profile(
        tmp_path / "ipython",
        "c.SparkSessionsConfig.default_master = 'local[2]'\n"
        "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false'}\n"
        f"c.SparkSessionsConfig.session_root = {str(tmp_path / 'sessions')!r}\n",
        tmp_path,
    )
    kernel.ok(PROBE.format(path=str(report)))
    return kernel


def test_shutdown_releases_created_sessions_and_stops_its_own_context(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    kernel = start_kernel(tmp_path, report)
    kernel.ok("%spark_session create a\n%spark_session create b")
    kernel.ok(f"_watched.dirs += [str({REGISTRY}.get(n).directory) for n in ('a', 'b')]")
    assert kernel.value(f"{REGISTRY}.owns_context") is True
    kernel.shutdown()
    found = json.loads(report.read_text())
    assert found == {"context_stopped": True, "dirs_left": []}
    # ipykernel re-signals its children for ~30 s until none is left; the killed JVM
    # must be reaped, not linger as a zombie it keeps waiting for.
    assert kernel.shutdown_seconds < 15, f"shutdown took {kernel.shutdown_seconds:.0f} s"


def test_a_users_own_connect_client_on_the_local_server_lets_the_kernel_exit(
    tmp_path: Path,
) -> None:
    """A Spark Connect client the user made on the local server (not the project's) says
    goodbye to it at exit, in PySpark's own exit hook, which retries for minutes against a
    server already gone: the server stops after it, so the kernel exits by itself (it
    was signalled after 30 s), and no server is left."""
    kernel = start_kernel(tmp_path, tmp_path / "report.json")
    server = f"{REGISTRY}.connect_endpoints.local_server"
    kernel.ok("%spark_session create c --remote local")
    kernel.ok(
        "from pyspark.sql.connect.session import SparkSession as _ConnectSession\n"
        f"mine = _ConnectSession.builder.remote({server}.endpoint.url).create()\n"
        "assert mine.range(2).count() == 2"
    )
    server_pid = kernel.value(f"{server}.pid")
    kernel.shutdown()
    assert kernel.exit_code == 0, f"ended by a signal after {kernel.shutdown_seconds:.0f} s"
    assert not psutil.pid_exists(server_pid), "the local Connect server outlived the kernel"


def test_adopted_session_and_user_context_survive_every_stop_and_shutdown(
    tmp_path: Path,
) -> None:
    report = tmp_path / "report.json"
    kernel = start_kernel(tmp_path, report)
    kernel.ok(
        "from pyspark.sql import SparkSession\n"
        "mine = SparkSession.builder.master('local[2]').config('spark.ui.enabled', 'false')"
        ".getOrCreate()\n"
        "_watched.session = mine"
    )
    kernel.ok("%spark_session adopt main mine")
    kernel.ok("%spark_session create a\n%spark_session create b")
    assert kernel.value(f"{REGISTRY}.owns_context") is False
    kernel.ok(f"_watched.dirs += [str({REGISTRY}.get(n).directory) for n in ('a', 'b')]")
    kernel.ok(
        f"_ra = {REGISTRY}.stop('a'); _rb = {REGISTRY}.stop('b')\n"
        "assert _ra.wait(60) and _rb.wait(60)"
    )
    assert kernel.ok("mine.range(5).count()").result_text == "5"
    listing = kernel.ok("%spark_session list").stdout
    assert "main" in listing and "adopted" in listing
    kernel.shutdown()
    found = json.loads(report.read_text())
    assert found == {"context_stopped": False, "dirs_left": [], "user_session_works": True}


def test_stop_of_an_adopted_session_only_unregisters_it(tmp_path: Path) -> None:
    kernel = start_kernel(tmp_path, tmp_path / "report.json")
    try:
        kernel.ok(
            "from pyspark.sql import SparkSession\n"
            "mine = SparkSession.builder.master('local[1]').getOrCreate()"
        )
        missing = kernel.execute("%spark_session adopt")
        assert "the following arguments are required: NAME" in missing.usage_error
        kernel.ok("%spark_session adopt mine")  # no variable: the active session
        # The user's context has no UI secret: `info` says who can read its UI.
        info = kernel.ok("%spark_session info mine").stdout.splitlines()
        assert f"ui access     {spark_ui.UNPROTECTED_NOTE}" in info, info
        assert kernel.value(f"{REGISTRY}.session('mine') is mine") is True
        kernel.ok("%spark_session use mine")
        assert "Unregistered adopted session 'mine'" in kernel.ok("%spark_session stop mine").stdout
        assert kernel.value("spark is mine") is True, "`spark` stays bound to the user's session"
        assert kernel.ok("mine.range(2).count()").result_text == "2"
    finally:
        kernel.shutdown()


def test_context_stopped_behind_the_projects_back_is_one_line_with_the_way_out(
    tmp_path: Path,
) -> None:
    kernel = start_kernel(tmp_path, tmp_path / "report.json")
    try:
        kernel.ok("%spark_session create a\n%spark_session use a")
        kernel.ok("spark.sparkContext.stop()")
        before = kernel.value(f"{REGISTRY}.names()")
        result = kernel.execute("%spark_session use a")
        assert "its SparkContext was stopped outside jupyter_spark_sessions" in result.usage_error
        assert "run `%spark_session restart`" in result.usage_error
        assert result.stderr.strip().count("\n") == 0
        assert kernel.value(f"{REGISTRY}.names()") == before
        assert "stopped outside" in kernel.ok("%spark_session info a").stdout
        dead = kernel.execute("%spark_session adopt zombie spark")
        assert "SparkContext is stopped: there is nothing to adopt" in dead.usage_error
        assert kernel.value(f"{REGISTRY}.names()") == before
        # The way out works: drop the dead session, create a new one on a new context.
        kernel.ok("%spark_session stop a")
        kernel.ok("%spark_session create a\n%spark_session use a")
        assert kernel.ok("spark.range(7).count()").result_text == "7"
    finally:
        kernel.shutdown()


def test_missing_java_is_one_line_naming_the_java_needed(tmp_path: Path) -> None:
    kernel = Kernel(
        env={"PATH": str(Path(sys.executable).parent)},
        drop_env=("JAVA_HOME",),
        cwd=str(tmp_path),
    )
    try:
        kernel.ok("%load_ext jupyter_spark_sessions")
        result = kernel.execute("%spark_session create a")
        assert "Spark needs Java 17 or 21 and none was found" in result.usage_error
        assert result.stderr.strip().count("\n") == 0
        assert kernel.value(f"{REGISTRY}.names()") == []
    finally:
        kernel.shutdown()
