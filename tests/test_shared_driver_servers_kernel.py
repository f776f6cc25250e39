"""One user's Jupyter servers and the shared driver (issue 50, points 2 and 3), through
real Jupyter servers that share a runtime directory: a notebook of each server joins
the one shared Spark Connect server (one JVM), and each server's Shared driver route
lists both notebooks, marking its own; when every Jupyter server stops and one starts
again within the restart grace, its notebook joins the running driver (no second
one); once none comes back, the driver stops and leaves no process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from shared_driver_processes import kill_recorded_server, server_jvms
from test_shared_driver_kernel import _open_notebook
from test_spark_ui_proxy import JupyterServer

from jupyter_spark_sessions.shared_driver.rendezvous import Rendezvous, ServerRecord

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

CONFIG = (
    "c.SparkSessionsConfig.shared_driver_master = 'local[2]'\n"
    "c.SparkSessionsConfig.shared_driver_restart_grace = 20.0\n"
)
ROUTE = "jupyter-spark-sessions/api/shared-driver"
COUNT = "__import__('jupyter_spark_sessions').default_registry().session('{}').range(7).count()"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("shared-runtime")
    yield folder
    kill_recorded_server(folder)


def _server(tmp_path: Path, name: str, runtime: Path) -> JupyterServer:
    (tmp_path / name).mkdir()
    return JupyterServer(tmp_path / name, kernel_config=CONFIG, runtime_dir=runtime)


def test_two_jupyter_servers_share_the_driver_and_each_sees_both_notebooks(
    tmp_path: Path, runtime: Path
) -> None:
    servers = [_server(tmp_path, "lab", runtime)]
    servers.append(_server(tmp_path, "nb7", runtime))
    lab, classic = servers
    try:
        lab_id, one = _open_notebook(lab, "one.ipynb")
        classic_id, two = _open_notebook(classic, "two.ipynb")
        assert "Starting the shared" in one.ok("%spark_session create a --remote shared").stdout
        joined = two.ok("%spark_session create b --remote shared").stdout
        assert "Starting" not in joined, joined
        assert one.value(COUNT.format("a")) == 7 and two.value(COUNT.format("b")) == 7
        record = Rendezvous(runtime).read()
        assert record is not None
        assert [p.pid for p in server_jvms(runtime)] == [record.server_pid]
        for server, own in ((lab, lab_id), (classic, classic_id)):
            state = server.api("GET", ROUTE)
            seen = {n["kernel_id"]: n for n in state["notebooks"]}
            assert set(seen) == {lab_id, classic_id}, state
            assert [k for k, n in seen.items() if n["this_server"]] == [own], state
            assert {s["name"] for n in seen.values() for s in n["sessions"]} == {"a", "b"}
        one.close()
        two.close()
    finally:
        for server in servers:
            server.stop()


def test_a_restarted_jupyter_servers_notebook_joins_the_running_driver(
    tmp_path: Path, runtime: Path
) -> None:
    # Both Jupyter servers stopped (previous test): the driver waits for the grace.
    record = Rendezvous(runtime).read()
    assert record is not None and record.keeper.alive(), "stopped without the grace"
    again = _server(tmp_path, "lab-again", runtime)
    try:
        _, three = _open_notebook(again, "three.ipynb")
        try:
            out = three.ok("%spark_session create c --remote shared").stdout
            assert "Starting" not in out, out  # joined the running driver
            assert three.value(COUNT.format("c")) == 7
            now = Rendezvous(runtime).read()
            assert now is not None and now.id == record.id
            assert [p.pid for p in server_jvms(runtime)] == [record.server_pid]
        finally:
            three.close()
    finally:
        again.stop()
    # No Jupyter server comes back: the driver stops after the grace, nothing left.
    keeper, java = psutil.Process(record.keeper.pid), psutil.Process(record.server_pid)
    _, alive = psutil.wait_procs([keeper, java], timeout=60)
    assert alive == [], alive
    assert Rendezvous(runtime).read() is None and server_jvms(runtime) == []
    assert not isinstance(Rendezvous(runtime).read(), ServerRecord)
