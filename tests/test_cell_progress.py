"""The in-cell progress view's renderings (pure): what a running cell and an ended one
show in each mime type, and that the rich data follows protocol.schema.json."""

from __future__ import annotations

import dataclasses
from typing import Any

from board_helpers import session_view
from test_protocol_schema import errors, wire

from jupyter_spark_sessions.board.snapshot import (
    BoardSnapshot,
    GroupView,
    JobView,
    SessionView,
    StageView,
    TaskCounts,
)
from jupyter_spark_sessions.cells.progress import (
    INTERRUPT_HINT,
    MIME_TYPE,
    cell_groups,
    render,
)

NOW = 1_000.0


def job(job_id: int, status: str, done: int, total: int, active: int = 0) -> JobView:
    stages = (
        (StageView(id=job_id * 10, name="count", attempt=0, tasks=TaskCounts(total, active, done)),)
        if status == "RUNNING"
        else ()
    )
    return JobView(
        id=job_id,
        name=f"count at In [4] line {job_id + 2}",
        status=status,
        submitted_at=NOW - 12,
        completed_at=None if status == "RUNNING" else NOW - 1,
        tasks=TaskCounts(total=total, active=active, completed=done),
        stage_ids=(job_id * 10,),
        stages=stages,
    )


def group(jobs: tuple[JobView, ...], state: str, cell_running: bool, count: int = 4) -> GroupView:
    tasks = TaskCounts()
    for j in jobs:
        tasks = tasks + j.tasks
    ended = not any(j.running for j in jobs)
    return GroupView(
        id=f"a:{count}",
        session="a",
        execution_count=count,
        description="spark.range(20000).count()",
        state=state,  # type: ignore[arg-type]
        cell_running=cell_running,
        submitted_at=NOW - 12,
        completed_at=NOW - 1 if ended else None,
        cancel_requested_at=None,
        tasks=tasks,
        tasks_still_running=0,
        jobs=jobs,
    )


def session() -> SessionView:
    return session_view("a", session_id="s-1", directory="/tmp/a", ui_url="http://127.0.0.1:4040")


def snapshot(*groups: GroupView) -> BoardSnapshot:
    return BoardSnapshot(seq=1, updated_at=NOW, sessions=(session(),), groups=groups)


def bundle(g: GroupView, final: bool) -> dict[str, Any]:
    return render(4, [g], snapshot(g), final, NOW)


def test_a_running_cell_shows_its_job_stage_tasks_and_how_to_cancel() -> None:
    running = group((job(0, "SUCCEEDED", 8, 8), job(1, "RUNNING", 1200, 20000, 2)), "running", True)
    shown = bundle(running, final=False)
    assert shown["text/plain"] == (
        "a:4 running · 1 job done · job 1 count at In [4] line 3 · stage 10 1,200/20,000 · "
        "1,200/20,000 tasks (2 running) · 12 s\n" + INTERRUPT_HINT
    )
    assert '<progress value="1200" max="20000"></progress>' in shown["text/html"]
    data = shown[MIME_TYPE]
    assert data["final"] is False and data["cell"] == 4
    (entry,) = data["groups"]
    assert entry["cancellable"] and entry["jobs_done"] == 1
    assert entry["job"] == {
        "id": 1,
        "name": "count at In [4] line 3",
        "tasks": {"total": 20000, "done": 1200, "active": 2, "failed": 0},
    }
    assert entry["stage"] == {"id": 10, "name": "count", "total": 20000, "done": 1200, "active": 2}
    assert entry["ui_url"] == "http://127.0.0.1:4040"
    assert errors(wire(data), "CellProgress") == []


def test_a_cell_running_jobs_in_a_loop_shows_jobs_done_and_the_running_jobs_own_progress() -> None:
    # Issue 28 (9): the total over the jobs seen so far grew with each job (10/12 tasks),
    # so the bar sat near its end the whole time.
    done = tuple(job(i, "SUCCEEDED", 1, 1) for i in range(10))
    running = group((*done, job(10, "RUNNING", 0, 2, 2)), "running", True)
    shown = bundle(running, final=False)
    assert shown["text/plain"].startswith(
        "a:4 running · 10 jobs done · job 10 count at In [4] line 12 · stage 100 0/2 · "
        "0/2 tasks (2 running) · 12 s"
    )
    assert '<progress value="0" max="2"></progress>' in shown["text/html"]
    # Between two of its jobs: the jobs done, a bar that says "at work" without a figure.
    between = bundle(group(done, "succeeded", True), final=False)
    assert between["text/plain"].startswith("a:4 running · 10 jobs done · 11 s")
    assert "<progress></progress>" in between["text/html"]
    assert errors(wire(between[MIME_TYPE]), "CellProgress") == []


def test_between_two_jobs_of_a_running_cell_the_group_still_reads_running() -> None:
    between = group((job(0, "SUCCEEDED", 8, 8),), "succeeded", cell_running=True)
    shown = bundle(between, final=False)
    (entry,) = shown[MIME_TYPE]["groups"]
    assert entry["state"] == "running" and entry["cancellable"]
    assert shown["text/plain"].startswith("a:4 running · 1 job done · 11 s")


def test_the_end_is_one_summary_line_per_group_without_bar_or_hint() -> None:
    ended = group(
        (job(0, "SUCCEEDED", 8, 8), job(1, "SUCCEEDED", 20000, 20000)), "succeeded", False
    )
    shown = bundle(ended, final=True)
    assert shown["text/plain"] == "a:4 succeeded · 2 jobs · 20,008/20,008 tasks · 11.0 s"
    assert "<progress" not in shown["text/html"] and INTERRUPT_HINT not in shown["text/html"]
    (entry,) = shown[MIME_TYPE]["groups"]
    assert not entry["cancellable"] and shown[MIME_TYPE]["final"] is True
    assert errors(wire(shown[MIME_TYPE]), "CellProgress") == []


def test_a_cancelled_group_says_so_and_a_thread_still_running_is_named() -> None:
    cancelled = group((job(0, "FAILED", 3, 8),), "cancelled", False)
    assert bundle(cancelled, final=True)["text/plain"].startswith("a:4 cancelled · 1 job · 3/8")
    # Spark ended the job; its task still winds down on an executor: not "running".
    stopping = group((job(0, "FAILED", 0, 1, active=1),), "cancelled", False)
    assert bundle(stopping, final=True)["text/plain"].startswith(
        "a:4 cancelled · 1 job · 0/1 tasks · "
    )
    still = group((job(0, "RUNNING", 3, 8, 1),), "running", False)
    assert bundle(still, final=True)["text/plain"].endswith(
        "still running after the cell (the sidebar follows it)"
    )


def test_only_the_cells_own_groups_with_jobs_are_shown() -> None:
    mine = group((job(0, "RUNNING", 1, 8, 1),), "running", True, count=4)
    other = group((job(1, "RUNNING", 1, 8, 1),), "running", True, count=5)
    empty = group((), "running", True, count=4)
    board = snapshot(mine, other, empty)
    assert [g.id for g in cell_groups(board, 4)] == ["a:4"]


def test_the_jobs_magic_says_the_same_of_a_cancelled_group_with_a_task_stopping() -> None:
    from jupyter_spark_sessions.magics.session_magics import _group_row

    stopping = group((job(0, "FAILED", 0, 1, active=1),), "cancelled", False)
    stopping = dataclasses.replace(stopping, tasks_still_running=1)
    row = _group_row(stopping, NOW)
    assert row[1] == "cancelled" and row[3] == "0/1 (1 still stopping)", row


def test_an_ended_group_whose_stage_still_reads_active_is_waited_for_a_moment_only() -> None:
    # A Connect server's UI may say a stage is active a moment after the operation
    # returned: the cell's summary (and the board's fast polls) wait for its end, for
    # a few seconds at most.
    import time

    from jupyter_spark_sessions.board.inside_views import GroupInside, StageRow
    from jupyter_spark_sessions.board.snapshot import STAGE_END_LAG_SECONDS

    def row(status: str, done: int) -> StageRow:
        return StageRow(
            id=17,
            attempt=0,
            job=6,
            name="collect at In [13] line 2",
            status=status,
            total=4,
            done=done,
            active=4 - done,
            failed=0,
            killed=0,
            elapsed=1.0,
            input_bytes=0,
            shuffle_read_bytes=0,
            shuffle_write_bytes=0,
            memory_spilled_bytes=0,
            disk_spilled_bytes=0,
            median_task_seconds=None,
            max_task_seconds=None,
        )

    def inside(status: str, done: int) -> GroupInside:
        return GroupInside(
            stages=(row(status, done),),
            more_stages=0,
            skipped_stages=0,
            unknown_stages=0,
            chart=None,
            findings=(),
        )

    now = time.time()
    ended = dataclasses.replace(
        group((job(1, "SUCCEEDED", 4, 4),), "succeeded", False), completed_at=now - 0.5
    )
    assert dataclasses.replace(ended, inside=inside("active", 2)).stage_still_active
    assert not dataclasses.replace(ended, inside=inside("complete", 4)).stage_still_active
    assert not ended.stage_still_active  # nothing known inside
    long_ago = dataclasses.replace(ended, completed_at=now - STAGE_END_LAG_SECONDS - 1)
    assert not dataclasses.replace(long_ago, inside=inside("active", 2)).stage_still_active
    running = group((job(1, "RUNNING", 2, 4, 2),), "running", True)
    assert not dataclasses.replace(running, inside=inside("active", 2)).stage_still_active
