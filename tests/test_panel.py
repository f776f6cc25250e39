"""The notebook panel against a board fed by hand, with ipywidgets' comms replaced by
recording ones (the ipywidgets way): what the frontend would receive, and what a
Cancel click asks of the board."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import comm
import pytest
from comm import DummyComm
from test_streaming_queries import FakeQuery

from jupyter_spark_sessions.backends.base import OperationReport
from jupyter_spark_sessions.board.job_board import JobBoard
from jupyter_spark_sessions.board.snapshot import SessionView, job_group, parse_job
from jupyter_spark_sessions.config import SparkSessionsConfig
from jupyter_spark_sessions.errors import UnknownSessionError
from jupyter_spark_sessions.magics.panel import FRONTEND_NOTE, BoardPanel

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


def feed(
    board: JobBoard, status: str, session: SessionView = SESSION, count: int = 3, job_id: int = 1
) -> None:
    data = {
        "jobId": job_id,
        "name": f"count at In [{count}] line 2",
        "status": status,
        "jobTags": ["jss:a", f"jss:a:{count}"],
        "numTasks": 4,
        "numCompletedTasks": 1,
    }
    key = job_group(data, {})
    assert key is not None
    board.update([parse_job(data)], {job_id: key}, 0, [session])


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
    assert panel.notice.value == "", "the notice goes once the cancel has ended"
    panel.close()


def new_panel() -> tuple[JobBoard, BoardPanel]:
    board = JobBoard(Sessions(), SparkSessionsConfig())  # type: ignore[arg-type]
    return board, BoardPanel(board)


def test_a_disabled_button_is_grey_and_an_enabled_one_red() -> None:
    board, panel = new_panel()
    feed(board, "RUNNING")
    row = panel._group_rows["a:3"]
    session_row = panel._session_rows["a"]
    assert (row.cancel.disabled, row.cancel.button_style) == (False, "danger")
    assert (session_row.cancel.disabled, session_row.cancel.button_style) == (False, "danger")
    feed(board, "SUCCEEDED")
    assert (row.cancel.disabled, row.cancel.button_style) == (True, "")
    assert (session_row.cancel.disabled, session_row.cancel.button_style) == (True, "")
    panel.close()


def test_the_cancel_button_sits_after_fixed_width_parts_so_it_never_moves() -> None:
    board, panel = new_panel()
    feed(board, "RUNNING")
    row = panel._group_rows["a:3"]
    line = row.box.children[0]
    assert line.children[:3] == (row.label, row.bar, row.cancel)
    for part in (row.label, row.bar, row.cancel):
        assert part.layout.width and part.layout.width.endswith("em"), part
        assert part.layout.flex == "0 0 auto"
    panel.close()


def test_groups_are_nested_under_their_session_newest_first() -> None:
    board, panel = new_panel()
    feed(board, "SUCCEEDED", count=3, job_id=1)
    feed(board, "RUNNING", count=5, job_id=2)
    [section] = panel.sessions_box.children
    session_row = panel._session_rows["a"]
    assert section is session_row.box
    assert session_row.groups.children == (
        panel._group_rows["a:5"].box,
        panel._group_rows["a:3"].box,
    )
    assert "1 active group(s)" in session_row.label.value
    panel.close()


def test_each_job_is_listed_by_its_call_site_and_linked_to_sparks_ui_through_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ann/")
    with_ui = SessionView(
        "a", "created", "classic", "local[2]", "u-1", True, "/tmp/a", ui_url="http://10.0.0.5:4041"
    )
    board, panel = new_panel()
    feed(board, "RUNNING", session=with_ui, job_id=7)
    jobs = panel._group_rows["a:3"].jobs.value
    assert 'href="/user/ann/spark-sessions/ui/4041/jobs/job/?id=7"' in jobs, jobs
    assert "count at In [3] line 2" in jobs
    panel.close()

    board, panel = new_panel()
    feed(board, "RUNNING", job_id=7)  # the Spark UI is off: no link
    assert "href" not in panel._group_rows["a:3"].jobs.value
    assert "job 7" in panel._group_rows["a:3"].jobs.value
    panel.close()


def test_the_footnote_names_every_frontend_where_cancel_works_and_the_way_elsewhere() -> None:
    _, panel = new_panel()
    assert "JupyterLab 4.4+ and Notebook 7" in FRONTEND_NOTE
    assert "Interrupt" in FRONTEND_NOTE
    assert "Notebook 7" in panel.footer.value
    panel.close()


def test_a_cancelled_groups_jobs_read_cancelled_and_a_previous_drivers_are_not_linked() -> None:
    with_ui = SessionView(
        "a", "created", "classic", "local[2]", "u-1", True, "/tmp/a", ui_url="http://h:4040"
    )
    board, panel = new_panel()
    feed(board, "RUNNING", session=with_ui, job_id=3)
    board.request_cancel(["a:3"])
    feed(board, "FAILED", session=with_ui, job_id=3)  # how Spark reports a cancelled job
    row = panel._group_rows["a:3"]
    assert "<b>cancelled</b>" in row.label.value
    assert "job 3</a> cancelled ·" in row.jobs.value, row.jobs.value  # not "job 3 failed"
    # A restart: the live driver's job 3 is another job, so the old one has no link.
    board.context_replaced()
    feed(board, "RUNNING", session=with_ui, count=4, job_id=3)
    assert "href" not in row.jobs.value and "job 3 cancelled ·" in row.jobs.value
    assert "href" in panel._group_rows["a:4"].jobs.value
    panel.close()


def test_a_long_cells_earlier_jobs_are_counted_by_state_and_listed_on_a_click() -> None:
    board, panel = new_panel()
    for job_id in range(8):
        feed(board, "SUCCEEDED", job_id=job_id)
    feed(board, "RUNNING", job_id=8)
    row = panel._group_rows["a:3"]
    assert row.earlier.layout.display == ""
    assert row.earlier.description == "▸ 4 earlier jobs: 4 succeeded"
    assert row.jobs.value.count("job ") == 5  # the five newest
    row.earlier.value = True  # the click
    assert row.earlier.description == "▾ 4 earlier jobs: 4 succeeded"
    assert row.jobs.value.count("job ") == 9
    feed(board, "SUCCEEDED", job_id=8)  # listed it stays, through the board's updates
    assert row.jobs.value.count("job ") == 9 and "job 8</a> succeeded" not in row.jobs.value
    assert "job 8 succeeded" in row.jobs.value, row.jobs.value
    row.earlier.value = False
    assert row.jobs.value.count("job ") == 5
    panel.close()


def test_a_short_cell_has_no_earlier_jobs_button() -> None:
    board, panel = new_panel()
    feed(board, "RUNNING", job_id=1)
    row = panel._group_rows["a:3"]
    assert row.earlier.layout.display == "none" and row.jobs.value.count("job ") == 1
    panel.close()


def test_a_sessions_line_shows_its_share_and_own_packages_only_when_it_has_some() -> None:
    board, panel = new_panel()
    feed(board, "RUNNING")
    label = panel._session_rows["a"].label
    assert "packages" not in label.value and "weight" not in label.value, label.value
    own = SessionView(
        "a",
        "created",
        "classic",
        "local[2]",
        "u-1",
        True,
        "/tmp/a",
        share="weight 3, min share 1",
        packages="jsspkg==1.0, x<2, -r req.txt",
    )
    feed(board, "RUNNING", session=own)
    assert label.value.endswith(
        "; weight 3, min share 1; packages: jsspkg==1.0, x&lt;2, -r req.txt"
    ), label.value
    panel.close()


def test_the_header_says_when_the_sessions_spark_is_gone() -> None:
    # Issue 28 (6): after the driver JVM died the views still read "connected".
    board, panel = new_panel()
    feed(board, "RUNNING")
    assert "disconnected" not in panel.header.value
    gone = SessionView(
        "a", "created", "classic", "local[2]", "u-1", True, "/tmp/a", disconnected="driver gone"
    )
    feed(board, "RUNNING", session=gone)
    assert "1 session(s) (<b>1 disconnected</b>)" in panel.header.value, panel.header.value
    panel.close()


def test_a_connect_operation_links_to_its_sessions_operations_on_the_servers_ui() -> None:
    # Issue 28 (9): its number is the board's, not a Spark job id: no job page of its own.
    connect = SessionView(
        "a",
        "created",
        "connect",
        "sc://localhost:15002",
        "s-1",
        True,
        "/tmp/a",
        ui_url="http://127.0.0.1:4045",
        operations_page="connect/session/?id=s-1&userId=ann",
    )
    board, panel = new_panel()
    board.cell_started("a", 3, "spark.range(9).collect()")
    board.record_operation(
        "a",
        OperationReport(
            "op-1",
            frozenset({"jss:a", "jss:a:3"}),
            ((0, 2, 1, False),),
            1,
            False,
            thread_cell=3,
        ),
    )
    board.update([], {}, 0, [connect])
    jobs = panel._group_rows["a:3"].jobs.value
    assert 'href="/spark-sessions/ui/4045/connect/session/?id=s-1&amp;userId=ann"' in jobs, jobs
    panel.close()


def test_a_sessions_streaming_query_has_its_row_and_a_stop_that_returns_at_once() -> None:
    board, panel = new_panel()
    query = FakeQuery("rates")
    query.release.clear()  # Spark takes its time to stop it
    board.queries.started(query, "a", 3)
    for batch, at in ((6, 1_800_000_000.0), (7, 1_800_000_000.1)):  # 10 rows each
        query.report(batch, at, 10)
        board.queries.refresh(force=True)
    feed(board, "SUCCEEDED")
    row = panel._query_rows[query.runId]
    assert "rates" in row.label.value and "active" in row.label.value
    assert row.detail.value.startswith("batch 7 · in 100.0 rows/s (last 30 s)")
    assert "1 streaming query" in panel._session_rows["a"].label.value
    assert not panel._session_rows["a"].cancel.disabled, "Cancel all stops its queries too"

    row.stop.click()  # returns while Spark has not stopped it
    assert query.stop_called.wait(5)
    feed(board, "SUCCEEDED")  # the next poll
    assert "stopping" in row.label.value and row.stop.disabled
    assert "Stopping streaming query &#x27;rates&#x27;." in panel.notice.value
    query.release.set()
    for _ in range(100):
        board.queries.refresh(force=True)
        if board.queries.find("rates").state == "stopped":
            break
        time.sleep(0.05)
    feed(board, "SUCCEEDED")
    assert "stopped" in row.label.value
    assert row.detail.value.startswith("stopped (from the panel) after ")
    panel.close()


def test_a_groups_stages_and_findings_show_under_it_folded_unless_found() -> None:
    from jupyter_spark_sessions.board.group_inside import StagesRead
    from jupyter_spark_sessions.board.stage_figures import parse_stage_figures

    board, panel = new_panel()
    data = {
        "jobId": 1,
        "name": "count at In [3] line 2",
        "status": "SUCCEEDED",
        "jobTags": ["jss:a", "jss:a:3"],
        "numTasks": 16,
        "numCompletedTasks": 16,
        "stageIds": [7],
        "submissionTime": 1_800_000_000_000,
        "completionTime": 1_800_000_010_000,
    }
    stage = {
        "stageId": 7,
        "name": "count at In [3] line 2",
        "status": "COMPLETE",
        "numTasks": 16,
        "numCompleteTasks": 16,
        "submissionTime": 1_800_000_000_000,
        "completionTime": 1_800_000_010_000,
        "medianTaskMs": 100,
        "maxTaskMs": 9000,
        "slowTasks": 1,
    }
    key = job_group(data, {})
    assert key is not None
    figures = StagesRead({7: parse_stage_figures(stage)}, {"driver": 2})
    board.update([parse_job(data)], {1: key}, 0, [SESSION], stages=figures)
    shown = panel._group_rows["a:3"].inside.value
    assert shown.startswith("<details open><summary>1 stage · 1 finding</summary>"), shown
    assert "count at In [3] line 2" in shown and "skewed keys" in shown
    panel.close()
