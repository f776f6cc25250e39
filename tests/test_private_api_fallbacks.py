"""Each private hook the package can do without, removed: the feature falls back to what
still works and says so. The one the core needs (ipykernel's control-channel table) is
missing: ``%load_ext`` fails, in one line."""

from __future__ import annotations

import html
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import comm
import ipykernel
import pytest
from comm import DummyComm

from jupyter_spark_sessions import protocol
from jupyter_spark_sessions.app import SparkSessionsApp
from jupyter_spark_sessions.board.job_board import JobBoard
from jupyter_spark_sessions.board.snapshot import SessionView
from jupyter_spark_sessions.config import SparkSessionsConfig
from jupyter_spark_sessions.kernel import ipykernel_internals
from jupyter_spark_sessions.kernel.channels import KernelChannels
from jupyter_spark_sessions.kernel.request_handler import RequestHandler
from jupyter_spark_sessions.magics.panel import FRONTEND_NOTE, NO_ROUTER_NOTE, BoardPanel
from jupyter_spark_sessions.sessions.registry import SessionRegistry


class RouterlessComm(DummyComm):
    """A comm as ipykernel < 7.4 makes them: no ``_reply_subshell_for``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[Any] = []
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        self.sent.append((msg_type, data))


class RoutedComm(RouterlessComm):
    """A comm as ipykernel >= 7.4 makes them."""

    def _reply_subshell_for(self, data: Any, default: str | None) -> str | None:
        return "main-shell"


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[SessionRegistry]:
    reg = SparkSessionsApp(SparkSessionsConfig(session_root=str(tmp_path / "root"))).registry
    reg.board_poller.stop()
    yield reg


# -- the comm router (optional: ipykernel >= 7.4) -----------------------------------------


def panel_with_a_session(monkeypatch: pytest.MonkeyPatch, comm_class: type) -> BoardPanel:
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: comm_class(*a, **k))

    class Sessions:
        def names(self) -> list[str]:
            return ["a"]

    board = JobBoard(Sessions(), SparkSessionsConfig())  # type: ignore[arg-type]
    panel = BoardPanel(board)
    session = SessionView("a", "created", "classic", "local[2]", "u-1", True, "/tmp/a")
    board.update([], {}, 0, [session])  # renders the session's row and its Cancel button
    assert "a" in panel._session_rows
    return panel


@pytest.mark.parametrize(
    ("version", "clicks_wait"),
    [((7, 4, 0), True), ((8, 0, 0), True), ((7, 1, 0), False), ((7, 3, 0), False)],
)
def test_panel_without_the_comm_router_says_where_a_click_waits_for_the_cell(
    monkeypatch: pytest.MonkeyPatch, version: tuple[int, ...], clicks_wait: bool
) -> None:
    # ipykernel >= 7.4 without the router would run a click only after the busy cell;
    # 7.1 to 7.3 route it to its subshell themselves, so the usual note holds.
    monkeypatch.setattr(ipykernel, "version_info", version)
    panel = panel_with_a_session(monkeypatch, RouterlessComm)
    button_comm = panel._session_rows["a"].cancel.comm
    assert not hasattr(button_comm, "_reply_subshell_for"), "left alone"
    assert panel.clicks_wait_for_the_cell is clicks_wait
    footer = panel.footer.value
    if clicks_wait:
        assert "waits for the running cell" in footer
        assert "sidebar" in footer and "REST relay" in footer and "Interrupt" in footer
    else:
        assert footer == f"<small>{html.escape(FRONTEND_NOTE)}</small>"
    panel.close()


def test_panel_with_the_comm_router_routes_its_buttons_and_keeps_the_usual_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ipykernel, "version_info", (7, 4, 0))
    panel = panel_with_a_session(monkeypatch, RoutedComm)
    button_comm = panel._session_rows["a"].cancel.comm
    assert button_comm._reply_subshell_for(None, "subshell-1") == "subshell-1"
    assert panel.clicks_wait_for_the_cell is False
    assert panel.footer.value == f"<small>{html.escape(FRONTEND_NOTE)}</small>"
    assert html.escape(NO_ROUTER_NOTE) not in panel.footer.value
    panel.close()


def test_panel_click_without_the_router_still_asks_the_board_to_cancel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    panel = panel_with_a_session(monkeypatch, RouterlessComm)
    asked: list[tuple[tuple[str, ...], str | None, str | None]] = []

    def request_cancel(groups: Any, session: str | None = None, source: str | None = None) -> Any:
        asked.append((tuple(groups), session, source))
        return SimpleNamespace(messages=["Cancel requested for a."], cancelling=())

    monkeypatch.setattr(panel.board, "request_cancel", request_cancel)
    panel._session_rows["a"].cancel.click()  # what a click handled on any thread does
    assert asked == [((), "a", "panel")]
    panel.close()


class FakeKernel:
    def __init__(self) -> None:
        self.control_handlers: dict[str, Any] = {}


def test_kernel_comm_without_the_router_still_answers_requests(
    registry: SessionRegistry,
) -> None:
    channels = KernelChannels(FakeKernel(), RequestHandler(registry, registry.board))
    channels.install()
    try:
        opened = RouterlessComm(target_name=protocol.COMM_TARGET, primary=False)
        request = {"version": 1, "action": "list", "request_id": "r1"}
        channels._on_comm_open(opened, {"content": {"data": request}})
        replies = [data for kind, data in opened.sent if kind == "comm_msg"]
        assert replies and replies[-1]["type"] == "reply", opened.sent
        assert replies[-1]["status"] == "ok" and replies[-1]["request_id"] == "r1"
        assert not hasattr(opened, "_reply_subshell_for")
    finally:
        comm.get_comm_manager().unregister_target(protocol.COMM_TARGET, channels._on_comm_open)


# -- the control-channel table (core: cancel while busy, the sidebar, the REST relay) ----

LOAD_EXT = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
class KernelWithoutControlHandlers:
    pass
ip.kernel = KernelWithoutControlHandlers()
result = ip.run_cell("%load_ext jupyter_spark_sessions")
sys.stdout.flush()
print("RESULT " + json.dumps({
    "success": result.success,
    "error": type(result.error_in_exec).__name__,
    "magics": "spark_session" in ip.magics_manager.magics["line"],
}))
"""


def test_load_ext_without_the_control_channel_table_fails_in_one_line() -> None:
    # A fresh interpreter: loading the extension registers process-wide state.
    run = subprocess.run(
        [sys.executable, "-c", LOAD_EXT], capture_output=True, text=True, timeout=120
    )
    line = next(ln for ln in run.stdout.splitlines() if ln.startswith("RESULT "))
    result = json.loads(line[len("RESULT ") :])
    output = (run.stdout.replace(line, "") + run.stderr).strip()
    assert result["success"] is False
    assert "Traceback" not in output and "---->" not in output, output
    assert output.count("\n") == 0, output  # one line
    assert output.startswith("UsageError: ") and "control" in output, output
    assert result["magics"] is False, "a failed load leaves no half-loaded extension"


def test_add_control_handler_refuses_a_kernel_without_the_table() -> None:
    with pytest.raises(Exception, match="control_handlers"):  # names what is missing
        ipykernel_internals.add_control_handler(object(), "x_request", lambda *a: None)


# -- PySpark's JVM process handle (optional: the JVM reaper at shutdown) ----------------


def test_gateway_process_without_pysparks_private_handle_is_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pyspark import SparkContext

    from jupyter_spark_sessions.backends import driver
    from jupyter_spark_sessions.backends.jvm_reaper import reap_when_it_exits

    monkeypatch.setattr(SparkContext, "_gateway", object())  # a gateway without .proc
    assert driver.gateway_process() is None
    monkeypatch.setattr(SparkContext, "_gateway", None)  # no JVM started
    assert driver.gateway_process() is None
    before = threading.active_count()
    reap_when_it_exits(None)  # shutdown then has nothing to reap: no thread, no error
    assert threading.active_count() == before
