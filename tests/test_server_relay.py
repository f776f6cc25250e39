"""The REST relay (server extension) through a real Jupyter server, a kernel that server
started, and a real JVM: requests reach the kernel's control channel while a cell is
busy, only with the server's token, and bad ones get one-line error replies."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.lab import LabServer
from test_job_board_kernel import LONG_CELL, start_background_job_in_b

from kernel_driver import Kernel, assert_cancelled_in_one_line

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

ROUTE = "/jupyter-spark-sessions/api/kernels/{}/requests"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    base = tmp_path_factory.mktemp("relay")
    (base / "root").mkdir()
    # A runtime directory of its own: the tests attach to the server's kernels through
    # their connection files, as a second frontend would.
    server = LabServer(base / "root", extra_env={"JUPYTER_RUNTIME_DIR": str(base / "runtime")})
    server.runtime_dir = base / "runtime"  # type: ignore[attr-defined]
    yield server
    server.stop()


def start_kernel(lab: LabServer) -> tuple[str, Kernel]:
    """A kernel started by the server (REST), and a client attached to it."""
    kernel_id: str = lab.api("POST", "/api/kernels", {"name": "python3"})["id"]
    connection_file: Path = lab.runtime_dir / f"kernel-{kernel_id}.json"  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while not connection_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return kernel_id, Kernel.attach(str(connection_file))


@pytest.fixture(scope="module")
def sessions(lab: LabServer) -> Iterator[tuple[str, Kernel]]:
    kernel_id, kernel = start_kernel(lab)
    kernel.ok("%load_ext jupyter_spark_sessions\n%spark_session create a\n%spark_session create b")
    yield kernel_id, kernel
    kernel.close()


def relay(
    lab: LabServer, kernel_id: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """POST ``body`` (JSON, or bytes as is) to the relay: (HTTP status, parsed reply)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        lab.url + ROUTE.format(kernel_id),
        data=data,
        method="POST",
        headers={"Authorization": f"token {lab.token}", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text.decode(errors="replace")


def groups(lab: LabServer, kernel_id: str) -> list[dict[str, Any]]:
    status, reply = relay(lab, kernel_id, {"version": 1, "action": "list"})
    assert status == 200 and reply["status"] == "ok", reply
    return list(reply["board"]["groups"])


def wait_for_group(
    lab: LabServer, kernel_id: str, found: Callable[[dict[str, Any]], bool], timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for group in groups(lab, kernel_id):
            if found(group):
                return group
        time.sleep(0.3)
    raise AssertionError(f"no such group within {timeout} s: {groups(lab, kernel_id)}")


def test_relay_cancels_a_busy_cells_group_and_spares_the_other_session(
    lab: LabServer, sessions: tuple[str, Kernel]
) -> None:
    cancel_a_busy_cell_through_the_relay(lab, *sessions)


def cancel_a_busy_cell_through_the_relay(lab: LabServer, kernel_id: str, kernel: Kernel) -> None:
    """While a cell of a is busy, the relay lists its group and cancels it: the cell
    ends in one line, b's background job runs on to its result."""
    start_background_job_in_b(kernel, seconds_per_row=2)
    b_group = wait_for_group(lab, kernel_id, lambda g: g["session"] == "b")
    kernel.ok("%spark_session use a")
    busy = kernel.client.execute(LONG_CELL)
    group = wait_for_group(
        lab,
        kernel_id,
        lambda g: g["session"] == "a" and g["state"] == "running" and g["tasks"]["active"] > 0,
    )

    # The shell is busy with the cell: only the control channel can answer this.
    status, reply = relay(
        lab,
        kernel_id,
        {"version": 1, "action": "cancel", "groups": [group["id"]], "request_id": "r1"},
    )
    assert status == 200, reply
    assert reply["status"] == "ok" and reply["request_id"] == "r1", reply
    assert reply["cancelling"] == [group["id"]]

    result = kernel.collect(busy, timeout=60)
    assert_cancelled_in_one_line(
        result, group["id"], "from the sidebar's Shared driver section or by a script"
    )
    wait_for_group(lab, kernel_id, lambda g: g["id"] == group["id"] and g["state"] == "cancelled")
    kernel.ok("b_thread.join(120)")
    assert kernel.value("b_result") == {"sum": 45}, "b's job is not touched by a's cancel"
    b_done = wait_for_group(
        lab, kernel_id, lambda g: g["id"] == b_group["id"] and g["state"] != "running"
    )
    assert b_done["state"] == "succeeded"


def relayed_query(lab: LabServer, kernel_id: str, name: str) -> dict[str, Any] | None:
    status, reply = relay(lab, kernel_id, {"version": 1, "action": "list"})
    assert status == 200 and reply["status"] == "ok", reply
    found = [q for q in reply["board"]["queries"] if q["name"] == name]
    return found[-1] if found else None


def test_relay_lists_a_streaming_query_and_stops_it(
    lab: LabServer, sessions: tuple[str, Kernel]
) -> None:
    kernel_id, kernel = sessions
    kernel.ok(
        "%%spark_session a\n"
        "q_relayed = spark.readStream.format('rate').load().writeStream.format('memory')"
        ".queryName('relayed').start()"
    )
    shown = relayed_query(lab, kernel_id, "relayed")
    assert shown is not None and shown["session"] == "a" and shown["state"] == "active", shown
    status, reply = relay(
        lab, kernel_id, {"version": 1, "action": "stop_query", "query": "relayed"}
    )
    assert status == 200 and reply["query"]["state"] == "stopping", reply
    deadline = time.monotonic() + 10
    while (shown := relayed_query(lab, kernel_id, "relayed")) and shown["state"] != "stopped":
        assert time.monotonic() < deadline, shown
        time.sleep(0.2)
    assert shown is not None and shown["stop_source"] == "relay", shown
    assert kernel.value("q_relayed.isActive") is False


@pytest.mark.parametrize(
    "headers",
    [{"Authorization": ""}, {"Authorization": "token wrong"}],
    ids=["no-token", "wrong-token"],
)
def test_relay_needs_the_servers_token(
    lab: LabServer, sessions: tuple[str, Kernel], headers: dict[str, str]
) -> None:
    kernel_id, kernel = sessions
    before = kernel.value("sorted(__import__('jupyter_spark_sessions').default_registry().names())")
    status, _ = relay(lab, kernel_id, {"version": 1, "action": "cancel", "all": True}, headers)
    assert status == 403
    after = kernel.value("sorted(__import__('jupyter_spark_sessions').default_registry().names())")
    assert before == after == ["a", "b"]


@pytest.mark.parametrize(
    ("body", "status", "code", "says"),
    [
        (b"{not json", 400, "bad_request", "not JSON"),
        (["a", "list"], 400, "bad_request", "object"),
        ({"version": 1, "action": "explode"}, 400, "unknown_action", "explode"),
        ({"version": 1, "action": "list", "extra": 1}, 400, "bad_request", "extra"),
        (
            {"version": 1, "action": "add", "session": "a", "kind": "file", "path": "x"},
            400,
            "bad_request",
            "not relayed",
        ),
        ({"version": 1, "action": "subscribe", "comm_id": "c"}, 400, "bad_request", "not relayed"),
        # Valid requests the kernel refuses: its one-line error, relayed.
        (
            {"version": 1, "action": "cancel", "groups": ["nope:1"]},
            400,
            "unknown_group",
            "nope:1",
        ),
        ({"version": 1, "action": "cancel", "session": "zz"}, 400, "unknown_session", "zz"),
    ],
)
def test_bad_requests_get_one_line_errors(
    lab: LabServer,
    sessions: tuple[str, Kernel],
    body: Any,
    status: int,
    code: str,
    says: str,
) -> None:
    kernel_id, _ = sessions
    got_status, reply = relay(lab, kernel_id, body)
    assert got_status == status, reply
    assert reply["status"] == "error" and reply["error"]["code"] == code, reply
    message = reply["error"]["message"]
    assert says in message and "\n" not in message, message


def test_unknown_kernel_and_kernel_without_the_extension(lab: LabServer) -> None:
    status, reply = relay(lab, "no-such-kernel", {"version": 1, "action": "list"})
    assert status == 404 and reply["error"]["code"] == "unknown_kernel", reply

    kernel_id, kernel = start_kernel(lab)  # never loads jupyter_spark_sessions
    try:
        status, reply = relay(lab, kernel_id, {"version": 1, "action": "list"})
        assert status == 504, reply
        assert reply["error"]["code"] == "no_reply"
        assert "%load_ext jupyter_spark_sessions" in reply["error"]["message"]
        assert kernel.ok("1 + 1").result_text == "2", "the kernel is unharmed"
    finally:
        kernel.close()
