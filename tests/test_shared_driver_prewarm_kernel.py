"""The shared driver's warm start (issue 50, point 4), through real Jupyter servers
started with ``c.SparkSessionsConfig.shared_driver_prewarm = True``: the server starts
the shared Spark Connect server before any notebook asks, the sidebar's route says it
is warm and idle, the first notebook joins it (no JVM of its own) and has its first
result at once; after the idle time it stops, and a kernel that starts warms it again.
A master that cannot work never blocks the Jupyter server: its log says why, and so
does the first `create`, in one line."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psutil
import pytest
from e2e.waiting import wait_until
from test_shared_driver_kernel import _open_notebook
from test_spark_ui_proxy import JupyterServer

from jupyter_spark_sessions.shared_driver.rendezvous import Rendezvous, ServerRecord

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

PREWARM = (
    "c.SparkSessionsConfig.shared_driver_prewarm = True\n"
    "c.SparkSessionsConfig.shared_driver_master = 'local[2]'\n"
    "c.SparkSessionsConfig.shared_driver_idle_timeout = {idle}\n"
)
ROUTE = "jupyter-spark-sessions/api/shared-driver"


def _running(rendezvous: Rendezvous) -> ServerRecord | None:
    record = rendezvous.read()
    return record if record is not None and record.state == "running" else None


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    # The kernels' settings (their IPython profile) say what the server pre-warms.
    base = tmp_path_factory.mktemp("prewarm")
    server = JupyterServer(base, kernel_config=PREWARM.format(idle=30.0))
    try:
        yield server
    finally:
        record = Rendezvous(server.runtime_dir).read()
        if server.process.poll() is None:
            server.stop()
        if record is not None:
            for pid in (record.server_pid, record.keeper.pid):
                if pid and psutil.pid_exists(pid):
                    psutil.Process(pid).kill()


def test_the_first_notebook_joins_the_warm_driver_and_has_its_result_at_once(
    warm: JupyterServer,
) -> None:
    rendezvous = Rendezvous(warm.runtime_dir)
    assert wait_until(lambda: _running(rendezvous) is not None, 120, 0.3), (
        warm.log_path.read_text()[-2000:]
    )
    record = _running(rendezvous)
    assert record is not None and record.keeper.alive()
    assert wait_until(
        lambda: "The shared Spark driver is warm" in warm.log_path.read_text(), 10, 0.2
    )
    # The sidebar's section: warm, no notebook yet, and when it stops.
    state = warm.api("GET", ROUTE)
    assert state["notebooks"] == [] and state["server"]["idle_stop_s"] == 30.0, state
    # Its first query ran before it was said to run (the warm-up's session released).
    log = rendezvous.server_folder(record) / "keeper.log"
    assert "Warmed up in" in log.read_text(), log.read_text()
    _, kernel = _open_notebook(warm, "first.ipynb")
    try:
        began = time.monotonic()
        out = kernel.ok("%spark_session create a --remote shared").stdout
        assert (
            kernel.value(
                "__import__('jupyter_spark_sessions').default_registry()"
                ".session('a').range(10).count()"
            )
            == 10
        )
        took = time.monotonic() - began
        assert "Starting the shared Spark driver" not in out, out  # joined the warm one
        assert rendezvous.read() == record or rendezvous.read().id == record.id
        # How fast is benchmarks/shared_driver_prewarm.py's to say, not a timed test's
        # (2.14 s once under CI's load); that it joined the warm driver is the point.
        print(f"first result {took:.2f} s after create")
    finally:
        kernel.close()


def test_it_stops_after_the_idle_time_and_a_new_kernel_warms_it_again(
    warm: JupyterServer,
) -> None:
    rendezvous = Rendezvous(warm.runtime_dir)
    first = _running(rendezvous)
    assert first is not None
    for kernel in warm.api("GET", "api/kernels"):
        warm.api("DELETE", f"api/kernels/{kernel['id']}")
    # No session left: it stops after the idle time (30 s here), its JVM with it.
    java = psutil.Process(first.server_pid)
    assert wait_until(lambda: rendezvous.read() is None, 60, 0.5), rendezvous.read()
    _, alive = psutil.wait_procs([java], timeout=20)
    assert alive == []
    # A kernel starts: the Jupyter server warms it again, before any create.
    _, kernel = _open_notebook(warm, "second.ipynb")
    try:
        assert wait_until(lambda: _running(rendezvous) is not None, 120, 0.3)
        again = _running(rendezvous)
        assert again is not None and again.id != first.id
    finally:
        kernel.close()


def test_a_master_that_cannot_work_is_said_in_the_log_and_in_the_first_create(
    tmp_path,
) -> None:
    broken = PREWARM.format(idle=20.0).replace("'local[2]'", "'nosuch://nowhere'")
    server = JupyterServer(tmp_path, kernel_config=broken)
    try:
        # The Jupyter server answered at once (its start waits for nothing of ours).
        assert wait_until(
            lambda: "The shared Spark driver did not start" in server.log_path.read_text(),
            90,
            0.3,
        ), server.log_path.read_text()[-2000:]
        _, kernel = _open_notebook(server, "broken.ipynb")
        try:
            failed = kernel.execute("%spark_session create a --remote shared")
            assert failed.status == "error"
            # One line (a usage error: nothing of the kernel's to trace), with Spark's why.
            lines = [line for line in failed.stderr.splitlines() if line.strip()]
            assert len(lines) == 1, lines
            assert lines[0].startswith("UsageError: The shared Spark driver did not start: "), lines
            assert "Master must either be yarn or start with spark" in lines[0], lines
            assert "Exception in thread" not in lines[0] and lines[0].count("(log: ") == 1, lines
        finally:
            kernel.close()
    finally:
        server.stop()
