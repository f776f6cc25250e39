"""The notebook panel against a board fed by hand, with ipywidgets' comms replaced by
recording ones (the ipywidgets way): what the frontend would receive, and what a
Cancel click asks of the board."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import comm
import pytest
from comm import DummyComm

from jupyter_spark_sessions.board import JobBoard
from jupyter_spark_sessions.config import SparkSessionsConfig
from jupyter_spark_sessions.errors import UnknownSessionError
from jupyter_spark_sessions.panel import BoardPanel
from jupyter_spark_sessions.snapshot import SessionView, job_group, parse_job

SENT: list[dict[str, Any]] = []


class RecordingComm(DummyComm):
    def publish_msg(self, msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        SENT.append({"msg_type": msg_type, "comm_id": self.comm_id, "data": data})


@pytest.fixture(autouse=True)
def recording_comms(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: RecordingComm(*a, **k))
    SENT.clear()
    yield


class Sessions:
    def names(self) -> list[str]:
        return ["a"]

    def backend(self, name: str) -> object:
        if name != "a":
            raise UnknownSessionError(name)
        return object()

    def describe(self, name: str, running_jobs: int | None = None) -> SessionView:
        raise AssertionError("not used")


SESSION = SessionView("a", "created", "classic", "local[2]", "u-1", True, "/tmp/a")


def feed(board: JobBoard, status: str) -> None:
    data = {"jobId": 1, "status": status, "jobTags": ["jss:a", "jss:a:3"], "numTasks": 4}
    data["numCompletedTasks"] = 1
    key = job_group(data, {})
    assert key is not None
    board.update([parse_job(data)], {1: key}, 0, [SESSION])


def sent_states(widget_comm_id: str) -> list[dict[str, Any]]:
    return [
        m["data"]["state"]
        for m in SENT
        if m["comm_id"] == widget_comm_id and m["data"].get("method") == "update"
    ]


def test_panel_shows_a_running_group_and_its_cancel_records_a_request() -> None:
    board = JobBoard(Sessions(), SparkSessionsConfig())  # type: ignore[arg-type]
    panel = BoardPanel(board)
    feed(board, "RUNNING")  # the panel is a listener: the producer renders it
    row = panel._group_rows["a:3"]
    assert "a:3" in row.label.value and "running" in row.label.value
    assert row.bar.value == 0.25 and not row.cancel.disabled
    # The frontend was told: an update with the new label went out on the label's comm.
    assert any("running" in s.get("value", "") for s in sent_states(row.label.comm.comm_id))

    row.cancel.click()  # what a click handled on any thread does
    assert [(p.session, p.refs) for p in board.take_pending_cancels()] == [("a", (1,))]
    feed(board, "RUNNING")
    assert "cancelling" in row.label.value and row.cancel.disabled
    assert "Cancel requested: a:3" in panel.notice.value

    feed(board, "FAILED")
    assert "cancelled" in row.label.value
    panel.close()
