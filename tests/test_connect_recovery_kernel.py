"""A Spark Connect server that is not the kernel's own (started here, on a fixed port
with a token, as a remote one would be), through a real kernel: a cancelled Connect
cell ends in one line; when the server dies its session's queries fail in one line
naming it and the way out; when it is back, ``reconnect`` makes the session again with
its settings and files."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SPARK_TEST_CONF, free_port, start_extension_kernel
from test_connect_kernel import CONNECT_LONG_CELL, UDFS
from test_job_board_kernel import board, request, wait_for_group

from jupyter_spark_sessions.backends.connect import LocalConnectServer
from kernel_driver import Kernel, assert_cancelled_in_one_line

pytestmark = [pytest.mark.spark, pytest.mark.kernel]


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
def kernel(tmp_path_factory: pytest.TempPathFactory, server: Server) -> Iterator[Kernel]:
    config = SPARK_TEST_CONF + "c.SparkSessionsConfig.connect_retry_seconds = 3.0\n"
    k = start_extension_kernel(tmp_path_factory, config)
    k.ok(f"%spark_session create r --remote {server.url} --conf spark.sql.shuffle.partitions=5")
    k.ok(UDFS)
    yield k
    k.shutdown()


def in_r(kernel: Kernel, expression: str) -> Any:
    kernel.ok(f"%%spark_session r\n_jss_value = {expression}")
    return kernel.value("_jss_value")


def test_a_cancelled_connect_cell_is_one_line(kernel: Kernel) -> None:
    kernel.ok("%spark_session use r")
    busy = kernel.client.execute(CONNECT_LONG_CELL)
    group = wait_for_group(
        kernel, lambda g: g["session"] == "r" and g["state"] == "running" and g["jobs"]
    )
    reply, _ = request(
        kernel, {"version": 1, "action": "cancel", "groups": [group["id"]], "source": "sidebar"}
    )
    assert reply["cancelling"] == [group["id"]], reply
    result = kernel.collect(busy, timeout=60)
    assert_cancelled_in_one_line(result, group["id"], "from the sidebar")
    assert result.stderr == "", result.stderr
    after = kernel.ok("spark.range(3).count()")
    assert after.result_text == "3" and after.stderr == "", after.stderr


def test_a_lost_server_is_one_line_and_reconnect_brings_the_session_back(
    kernel: Kernel, server: Server, tmp_path: Path
) -> None:
    (tmp_path / "lookup.csv").write_text("lookup of r\n")
    kernel.ok(f"%spark_session add_file r {tmp_path / 'lookup.csv'}")
    assert in_r(kernel, "spark.range(1).select(read_lookup('id')).first()[0]") == "lookup of r"
    where = f"sc://localhost:{server.port}"
    server.kill()

    kernel.ok("%spark_session use r")
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
    # server was down, has not reconnected yet: either way the session must be made again.
    assert forgotten.error_value in [
        f"Session 'r' is unusable: its Spark Connect server {where} {reason}: run "
        "`%spark_session reconnect r` to make it again with its settings and files."
        for reason in (
            "no longer knows this session (it restarted?)",
            "answers again, but this session's connection to it broke",
        )
    ], forgotten.error_value
    # The name is still r's: a new session takes another name.
    kernel.ok(f"%spark_session create r2 --remote {server.url}")

    reconnected = kernel.ok("%spark_session reconnect r").stdout
    assert reconnected == (
        f"Session 'r' made again on Spark Connect {where} with its settings and its 1 file(s) "
        "added again.\n`spark` now refers to the new session.\n"
    )
    assert kernel.value("spark.conf.get('spark.sql.shuffle.partitions')") == "5"
    assert in_r(kernel, "spark.range(1).select(read_lookup('id')).first()[0]") == "lookup of r"
    sessions = {s["name"]: s for s in board(kernel)["sessions"]}
    assert sessions["r"]["disconnected"] == "" and sessions["r2"]["disconnected"] == ""
