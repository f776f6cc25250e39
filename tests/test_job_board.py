"""Pure logic of the job board: parsing Spark's job data, observed group states, cancel
requests, retention and listeners. Spark's data is given as the JSON its status store
produces (the kernel tests prove the real thing)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from board_helpers import FakeSessions, make_board, session_view

from jupyter_spark_sessions.backends import connect_errors
from jupyter_spark_sessions.backends.base import OperationReport
from jupyter_spark_sessions.board.job_board import JobBoard
from jupyter_spark_sessions.board.snapshot import BoardSnapshot, group_state, job_group, parse_job
from jupyter_spark_sessions.config import SparkSessionsConfig
from jupyter_spark_sessions.errors import UnknownGroupError, UnknownSessionError


def job_data(
    job_id: int,
    status: str = "RUNNING",
    tags: tuple[str, ...] = ("jss:a", "jss:a:3"),
    submitted: int = 1_000_000,
    **counts: Any,
) -> dict[str, Any]:
    data = {
        "jobId": job_id,
        "name": f"job {job_id}",
        "status": status,
        "submissionTime": submitted,
        "stageIds": [job_id * 10],
        "jobTags": list(tags),
        "numTasks": 4,
    }
    data.update(counts)
    return data


def pending(board: JobBoard) -> list[tuple[object, ...]]:
    """The queued cancels: (session, "jobs", ids), (session, "session") or
    (session, "tag", tag)."""
    out: list[tuple[object, ...]] = []
    for p in board.take_pending_cancels():
        if p.whole_session:
            out.append((p.session, "session"))
        if p.tag is not None:
            out.append((p.session, "tag", p.tag))
        if p.refs:
            out.append((p.session, "jobs", p.refs))
    return out


SPARK_TAGS = {"spark-session-A": "a", "spark-session-B": "b"}


def feed(board: JobBoard, *jobs: dict[str, Any]) -> BoardSnapshot:
    keys = {d["jobId"]: k for d in jobs if (k := job_group(d, SPARK_TAGS)) is not None}
    return board.update([parse_job(d) for d in jobs if d["jobId"] in keys], keys, 0, [])


def test_parse_job_reads_counts_times_and_kill_reasons() -> None:
    job = parse_job(
        job_data(
            7,
            "FAILED",
            numActiveTasks=1,
            numKilledTasks=2,
            completionTime=1_500_000,
            killedTasksSummary={"Stage cancelled: x": 2},
        )
    )
    assert (job.id, job.status, job.running) == (7, "FAILED", False)
    assert job.tasks.total == 4 and job.tasks.active == 1 and job.tasks.killed == 2
    assert job.submitted_at == 1000.0 and job.completed_at == 1500.0
    assert job.kill_reasons == ("Stage cancelled: x",)


def test_a_jobs_group_is_the_spark_session_that_ran_it_and_the_cell_of_its_thread() -> None:
    # An RDD job (Spark names no session): the session its thread was bound to.
    assert job_group(job_data(1, tags=("jss:a", "jss:a:12")), SPARK_TAGS) == ("a", 12)
    # A SQL job of b run from a cell bound to a: b's, in that cell's group.
    sql_of_b = job_data(
        1, tags=("spark-session-B", "jss:a", "jss:a:12"), sparkSession="spark-session-B"
    )
    assert job_group(sql_of_b, SPARK_TAGS) == ("b", 12)
    # A job of b from a plain thread: b's background group.
    assert job_group(job_data(1, tags=(), sparkSession="spark-session-B"), SPARK_TAGS) == (
        "b",
        None,
    )
    assert job_group(job_data(1, tags=("jss:a",)), SPARK_TAGS) == ("a", None)
    # A session nobody registered, from a cell bound to a: not a's.
    unmanaged = job_data(1, tags=("jss:a", "jss:a:3"), sparkSession="spark-session-X")
    assert job_group(unmanaged, SPARK_TAGS) is None
    assert job_group(job_data(1, tags=("user-tag",)), SPARK_TAGS) is None


@pytest.mark.parametrize(
    ("statuses", "cancel_ids", "kill_reasons", "expected"),
    [
        (["RUNNING"], set(), {}, "running"),
        (["SUCCEEDED", "RUNNING"], {2}, {}, "cancelling"),
        (["RUNNING", "RUNNING"], {1}, {}, "running"),  # job 2 was not aimed at
        (["SUCCEEDED", "SUCCEEDED"], set(), {}, "succeeded"),
        (["SUCCEEDED", "FAILED"], set(), {}, "failed"),
        (["SUCCEEDED", "FAILED"], {2}, {}, "cancelled"),
        # PySpark's Interrupt handler (cancelAllJobs), another's cancelJobGroup: Spark's words.
        (
            ["FAILED"],
            set(),
            {"Stage cancelled: Job 1 cancelled as part of cancellation of all jobs": 1},
            "cancelled",
        ),
        (
            ["FAILED"],
            set(),
            {
                "Stage cancelled: [SPARK_JOB_CANCELLED] Job 4 cancelled part of cancelled "
                "job group g": 1
            },
            "cancelled",
        ),
        # A task failed while another ran: Spark killed that one for the failure.
        (
            ["FAILED"],
            set(),
            {
                "Stage cancelled: [PYTHON_EXCEPTION] An exception was thrown from the "
                "Python worker": 1
            },
            "failed",
        ),
    ],
)
def test_group_state_is_observed_from_spark(
    statuses: list[str], cancel_ids: set[int], kill_reasons: dict[str, int], expected: str
) -> None:
    jobs = [
        parse_job(job_data(i, s, submitted=2_000_000, killedTasksSummary=kill_reasons))
        for i, s in enumerate(statuses, start=1)
    ]
    assert group_state(jobs, frozenset(cancel_ids)) == expected


def test_a_cancel_covers_jobs_submitted_before_it_that_the_board_had_not_seen() -> None:
    early = parse_job(job_data(1, "FAILED", submitted=1_000_000))
    late = parse_job(job_data(2, "RUNNING", submitted=3_000_000))
    assert group_state([early], frozenset(), cancel_requested_at=2000.0) == "cancelled"
    assert group_state([late], frozenset(), cancel_requested_at=2000.0) == "running"


def test_cancel_is_a_request_the_final_state_comes_from_spark() -> None:
    board = make_board("a", "b")
    feed(board, job_data(1), job_data(2, tags=("jss:b", "jss:b:4")))
    outcome = board.request_cancel(["a:3"])
    assert outcome.cancelling == ("a:3",)
    assert board.snapshot().group("a:3").state == "cancelling"  # type: ignore[union-attr]
    assert board.snapshot().group("b:4").state == "running"  # type: ignore[union-attr]
    assert pending(board) == [("a", "jobs", (1,))]  # exactly the job it shows
    assert pending(board) == []
    # Spark has not ended the job yet: still cancelling, not cancelled.
    feed(board, job_data(1), job_data(2, tags=("jss:b", "jss:b:4")))
    assert board.snapshot().group("a:3").state == "cancelling"  # type: ignore[union-attr]
    # Spark reports the end; a task is still winding down on the executor.
    snap = feed(
        board, job_data(1, "FAILED", numActiveTasks=1), job_data(2, tags=("jss:b", "jss:b:4"))
    )
    group = snap.group("a:3")
    assert group is not None and group.state == "cancelled" and group.tasks_still_running == 1
    # Its job is "cancelled" too (Spark says FAILED), in every view's words.
    assert [(j.status, j.state) for j in group.jobs] == [("FAILED", "cancelled")]
    assert snap.group("b:4").jobs[0].state == "running"  # type: ignore[union-attr]
    assert board.settling_job_ids() == [1, 2]  # winding down, and shown running
    group = feed(board, job_data(1, "FAILED")).group("a:3")
    assert group is not None and group.tasks_still_running == 0


def test_the_board_asks_for_fast_polls_while_a_cancel_winds_down_only() -> None:
    board = make_board("a", "b")
    feed(board, job_data(1), job_data(2, tags=("jss:b", "jss:b:4")))
    assert not board.winding_down_cancel()  # running, not cancelled: the usual pace
    board.request_cancel(["a:3"])
    assert board.winding_down_cancel()
    feed(board, job_data(1, "FAILED", numActiveTasks=1), job_data(2, tags=("jss:b", "jss:b:4")))
    assert board.winding_down_cancel()  # ended, but a killed task still holds its slot
    feed(board, job_data(1, "FAILED"), job_data(2, tags=("jss:b", "jss:b:4")))
    assert not board.winding_down_cancel()


def test_cancel_errors_change_nothing() -> None:
    board = make_board("a")
    feed(board, job_data(1))
    with pytest.raises(UnknownGroupError, match="No job group 'a:9' on the board"):
        board.request_cancel(["a:3", "a:9"])
    with pytest.raises(UnknownSessionError):
        board.request_cancel(session="nope")
    assert pending(board) == []
    assert board.snapshot().group("a:3").state == "running"  # type: ignore[union-attr]


def test_cancelling_a_finished_group_is_a_no_op_with_a_message() -> None:
    board = make_board("a")
    feed(board, job_data(1, "SUCCEEDED"))
    outcome = board.request_cancel(["a:3"])
    assert outcome.cancelling == ()
    assert outcome.messages == ("Group a:3 has no running job (succeeded).",)
    assert pending(board) == []


def test_a_group_whose_cell_runs_on_between_two_jobs_is_cancelled_with_its_next_job() -> None:
    # A Cancel clicked after the cell's first job ended and before Spark reported its
    # next one (a Connect operation not started yet, a loop of jobs): the group's cell
    # still runs, so the request is not "no running job"; its tag is cancelled at once
    # and its next job, once seen, is cancelled too.
    board = make_board("a")
    board.cell_started("a", 3, "for n in range(9): spark.range(n).count()")
    feed(board, job_data(1, "SUCCEEDED"))
    outcome = board.request_cancel(["a:3"], source="sidebar")
    assert outcome.cancelling == ("a:3",) and outcome.messages == ()
    assert board.snapshot().group("a:3").state == "cancelling"  # type: ignore[union-attr]
    assert pending(board) == [("a", "tag", "jss:a:3")]
    snapshot = feed(board, job_data(1, "SUCCEEDED"), job_data(2))
    assert pending(board) == [("a", "jobs", (2,))]
    assert snapshot.group("a:3").state == "cancelling"  # type: ignore[union-attr]
    snapshot = feed(board, job_data(1, "SUCCEEDED"), job_data(2, "FAILED"))
    assert snapshot.group("a:3").state == "cancelled"  # type: ignore[union-attr]
    # Its first job, which ended before the request, still reads as it ended.
    assert [j.state for j in snapshot.group("a:3").jobs] == ["succeeded", "cancelled"]  # type: ignore[union-attr]


def test_a_group_whose_cell_ended_with_its_jobs_is_not_cancelled() -> None:
    board = make_board("a")
    board.cell_started("a", 3, "spark.range(9).count()")
    feed(board, job_data(1, "SUCCEEDED"))
    board.cell_finished("a", 3)
    outcome = board.request_cancel(["a:3"])
    assert outcome.cancelling == () and pending(board) == []


def test_cancel_of_a_session_uses_its_tags_and_spares_others() -> None:
    board = make_board("a", "b")
    feed(board, job_data(1), job_data(2, tags=("jss:b", "jss:b:4")))
    outcome = board.request_cancel(session="a")
    assert outcome.cancelling == ("a:3",)
    assert pending(board) == [("a", "jobs", (1,)), ("a", "session")]
    everything = board.request_cancel(everything=True)
    assert set(everything.cancelling) == {"a:3", "b:4"}


def test_a_stopped_sessions_later_jobs_are_cancelled_until_it_is_released() -> None:
    sessions = FakeSessions("a", "b")
    board = JobBoard(sessions, SparkSessionsConfig())  # type: ignore[arg-type]
    thread_job = {"tags": ("jss:a",), "submitted": 1_000_000}  # a's background group
    feed(board, job_data(1, **thread_job), job_data(2, tags=("jss:b", "jss:b:4")))
    board.request_cancel(session="a", source="stop")
    backend = sessions.backend("a")
    board.retire("a", backend)  # type: ignore[arg-type]
    sessions._names.remove("a")  # unregistered, as `stop` does
    assert pending(board) == [("a", "jobs", (1,)), ("a", "session")]
    # The query's first job ended; its next one starts after the stop (a background
    # group's new work is otherwise spared by a group cancel): it is cancelled too.
    late = {"tags": ("jss:a",), "submitted": 2_000_000_000_000}
    feed(board, job_data(1, "SUCCEEDED", **thread_job), job_data(3, **late))
    assert pending(board) == [("a", "jobs", (3,))]
    assert board.retiring() == {"a": backend}
    feed(board, job_data(3, "FAILED", **late))
    assert board.retiring() == {"a": backend}  # not released yet: still followed
    board.released("a")
    assert board.retiring() == {}
    assert board.snapshot().group("b:4").state == "running"  # type: ignore[union-attr]
    assert pending(board) == []


def test_finished_groups_are_kept_up_to_the_bound() -> None:
    board = make_board("a", retained=2)
    for n in range(1, 5):
        feed(board, job_data(n, "SUCCEEDED", tags=("jss:a", f"jss:a:{n}")))
    snap = feed(board, job_data(9, tags=("jss:a", "jss:a:9")))
    assert [g.id for g in snap.groups] == ["a:3", "a:4", "a:9"]


def test_a_group_lists_its_jobs_by_id_whatever_order_spark_reports_them_in() -> None:
    board = make_board("a")
    feed(board, job_data(13, "SUCCEEDED"), job_data(10, "SUCCEEDED"), job_data(11))
    snap = feed(board, job_data(12), job_data(9, "SUCCEEDED"))
    (group,) = snap.groups
    assert [j.id for j in group.jobs] == [9, 10, 11, 12, 13]


def test_cells_without_jobs_leave_no_group_and_running_cells_are_flagged() -> None:
    board = make_board("a")
    board.cell_started("a", 5, "df.count()")
    assert board.busy()
    snap = feed(board, job_data(1, "SUCCEEDED", tags=("jss:a", "jss:a:5")))
    group = snap.group("a:5")
    assert group is not None and group.cell_running and group.description == "df.count()"
    assert not group.finished
    board.cell_finished("a", 5)
    board.cell_started("a", 6, "print(1)")
    board.cell_finished("a", 6)
    snap = feed(board)
    assert [g.id for g in snap.groups] == ["a:5"] and snap.groups[0].finished


def test_unchanged_groups_keep_their_view_and_data_from_poll_to_poll() -> None:
    # At 1,000 retained groups, remaking every view and its data on each poll cost
    # ~25 ms and ~100 ms; only what Spark reported anew is remade.
    board = make_board("a", "b", retained=10)
    board.cell_started("b", 7, "spark.range(9).count()")
    ended = job_data(1, "SUCCEEDED", tags=("jss:a", "jss:a:3"), numCompletedTasks=4)
    first = feed(board, ended, job_data(2, tags=("jss:b", "jss:b:7")))
    # The next poll re-reads the running job only (a new JobView), as the feed does.
    board.update(
        [parse_job(job_data(2, tags=("jss:b", "jss:b:7"), numCompletedTasks=1))],
        {2: ("b", 7)},
        0,
        [],
    )
    second = board.snapshot()
    kept, moved = first.group("a:3"), second.group("a:3")
    assert kept is not None and moved is kept and moved.as_dict is kept.as_dict
    running = second.group("b:7")
    assert running is not None and running != first.group("b:7")
    assert running.tasks.completed == 1
    # The shared data is what asdict makes of the whole board.
    assert second.to_dict() == dataclasses.asdict(second)
    board.cell_finished("b", 7)
    after = feed(board).group("b:7")
    assert after is not None and after.cell_running is False


def test_a_cells_source_is_described_once_its_group_has_jobs() -> None:
    # Parsing a cell costs about a millisecond: not on the cell's thread, and only for
    # cells whose groups are shown.
    board = make_board("a")
    board.cell_started("a", 5, source="import os\n# go\nn = spark.range(3).count()")
    cell = board._cells[5]
    feed(board)
    assert cell.source is not None  # no job yet: not parsed
    snap = feed(board, job_data(1, tags=("jss:a", "jss:a:5")))
    group = snap.group("a:5")
    assert group is not None and group.description == "n = spark.range(3).count()"
    assert cell.source is None


def named(job_id: int, count: int, name: str, status: str = "RUNNING") -> dict[str, Any]:
    """Spark's data of a job of group a:``count`` named by its call site ``name``."""
    return dict(job_data(job_id, status, tags=("jss:a", f"jss:a:{count}")), name=name)


def test_a_group_is_described_by_the_line_that_ran_its_first_job() -> None:
    # Not the cell's first line (`t = time.time()`): the line the job's call site names,
    # kept as later jobs run (each job's own line is its name).
    board = make_board("a")
    source = "import time\nt = time.time()\nn = spark.range(3).count()\nrows = df.collect()"
    board.cell_started("a", 5, source=source)
    group = feed(board, named(1, 5, "count at In [5] line 3")).group("a:5")
    assert group is not None and group.description == "n = spark.range(3).count()"
    snap = feed(
        board,
        named(1, 5, "count at In [5] line 3", "SUCCEEDED"),
        named(2, 5, "collect at In [5] line 4"),
    )
    assert snap.group("a:5").description == "n = spark.range(3).count()"  # type: ignore[union-attr]


def test_a_group_whose_jobs_name_no_line_of_its_cell_keeps_the_first_line() -> None:
    # A function another cell defined; a description given without the cell's source
    # (a `%%spark_session` body) has no line to take.
    board = make_board("a")
    board.cell_started("a", 5, source="t = time.time()\nhelper()")
    board.cell_started("a", 6, "spark.range(3).count()")
    snap = feed(
        board, named(1, 5, "collect at In [2] line 3"), named(2, 6, "count at In [6] line 2")
    )
    assert snap.group("a:5").description == "t = time.time()"  # type: ignore[union-attr]
    assert snap.group("a:6").description == "spark.range(3).count()"  # type: ignore[union-attr]
    # A later job naming a line of the cell describes it from then on.
    snap = feed(board, named(3, 5, "collect at In [5] line 2"))
    assert snap.group("a:5").description == "helper()"  # type: ignore[union-attr]


def test_listeners_hear_changes_once_and_fresh_ones_at_once() -> None:
    board = make_board("a")
    heard: list[int] = []
    board.subscribe(lambda s: heard.append(len(s.groups)))
    feed(board)  # a fresh listener gets the first snapshot even without a change
    feed(board)  # nothing changed: not called
    feed(board, job_data(1))
    assert heard == [0, 1]
    unsubscribe = board.subscribe(lambda s: 1 / 0)  # a broken listener
    feed(board, job_data(1, "SUCCEEDED"))
    assert heard == [0, 1, 1]
    unsubscribe()


def _report(
    board: JobBoard,
    op: str,
    done: bool = False,
    error: BaseException | None = None,
    key: tuple[str, int] | None = ("c", 4),
    completed: int = 0,
) -> BoardSnapshot:
    # What ConnectBackend reports for one progress callback of the client.
    board.record_operation(
        "c",
        OperationReport(
            operation_id=op,
            thread_tags=frozenset({"jss:c", f"jss:{key[0]}:{key[1]}"} if key else {"jss:c"}),
            thread_cell=key[1] if key else None,
            stages=((7, 4, completed, done),),
            inflight_tasks=0 if done else 2,
            done=done,
            failed=error is not None,
            cancel_reason=(
                connect_errors.error_line(error) if connect_errors.is_cancellation(error) else ""
            ),
        ),
    )
    return board.update([], {}, 0, [])


def test_connect_operations_form_the_cells_group_and_end_as_the_client_saw() -> None:
    board = make_board("c")
    board.cell_started("c", 4, "spark.range(9).collect()")
    snapshot = _report(board, "op-1", completed=1)
    group = snapshot.group("c:4")
    assert group is not None and group.state == "running"
    (job,) = group.jobs
    assert job.operation_id == "op-1" and job.tasks.total == 4 and job.tasks.active == 2
    assert [s.id for s in job.stages] == [7]
    snapshot = _report(board, "op-1", done=True, completed=4)
    assert snapshot.group("c:4").state == "succeeded"  # type: ignore[union-attr]
    # A second operation of the cell, interrupted on the server: cancelled, observed.
    _report(board, "op-2")
    outcome = board.request_cancel(["c:4"])
    assert outcome.cancelling == ("c:4",)
    assert pending(board) == [("c", "jobs", ("op-2",))]
    canceled = RuntimeError("[OPERATION_CANCELED] Operation has been canceled.")
    snapshot = _report(board, "op-2", done=True, error=canceled)
    group = snapshot.group("c:4")
    assert group is not None and group.state == "cancelled"
    assert [j.id for j in group.jobs] == [1, 2]  # distinct numbers, in order
    assert group.jobs[1].kill_reasons and group.jobs[1].status == "FAILED"
    assert group.jobs[1].state == "cancelled"
    # The client's last report came before the last tasks ended: a succeeded operation
    # shows its final counts, not stale ones (issue 28, point 6).
    board.cell_started("c", 5, "spark.range(9).collect()")
    _report(board, "op-0", key=("c", 5), completed=1)
    stale = _report(board, "op-0", key=("c", 5), done=True, completed=1).group("c:5")
    assert stale is not None and stale.state == "succeeded"
    assert (stale.tasks.completed, stale.tasks.total) == (4, 4)


def test_connect_failures_and_lost_servers_are_told_apart() -> None:
    board = make_board("c")
    _report(board, "op-1")
    failure = ValueError("[DIVIDE_BY_ZERO] boom")
    snapshot = _report(board, "op-1", done=True, error=failure)
    assert snapshot.group("c:4").state == "failed"  # type: ignore[union-attr]
    assert connect_errors.problem_after(failure, "") == ""  # a failed query: the server is fine
    snapshot = _report(board, "op-2", key=None)  # outside any managed cell
    group = snapshot.group("c:background")
    assert group is not None and group.state == "running" and not group.cell_running
    unavailable = RuntimeError("<_MultiThreadedRendezvous>\n status = StatusCode.UNAVAILABLE")
    snapshot = _report(board, "op-2", done=True, error=unavailable, key=None)
    assert snapshot.group("c:background").state == "failed"  # type: ignore[union-attr]
    problem = connect_errors.problem_after(unavailable, "")
    assert "UNAVAILABLE" in problem
    assert connect_errors.problem_after(failure, problem) == problem  # still unknown: kept
    assert connect_errors.problem_after(None, problem) == ""  # a query that went through again
    lost = RuntimeError("[INVALID_HANDLE.SESSION_NOT_FOUND] gone")
    assert "no longer knows this session" in connect_errors.problem_after(lost, "")


def test_a_threads_first_job_after_its_cell_ended_keeps_the_cells_description() -> None:
    board = make_board("b")
    board.cell_started("b", 3, "start_thread()")
    board.cell_finished("b", 3)
    feed(board)  # the cell ran no job itself: no group yet
    snap = feed(board, job_data(1, tags=("jss:b", "jss:b:3")))  # the thread's job
    assert snap.group("b:3").description == "start_thread()"  # type: ignore[union-attr]


def _view(name: str, disconnected: str = "") -> Any:
    return session_view(name, session_id="x", directory="/tmp/x", disconnected=disconnected)


def test_a_lost_driver_ends_its_sessions_running_groups_as_lost() -> None:
    board = make_board("a", "b")
    board.cell_started("a", 3, "a's cell")
    keys = {1: ("a", 3), 2: ("b", 3)}
    jobs = [parse_job(job_data(1, numActiveTasks=2)), parse_job(job_data(2))]
    board.update(jobs, keys, 0, [_view("a"), _view("b")])
    snapshot = board.update([], {}, 0, [_view("a", "the Spark driver is gone"), _view("b")])
    lost = snapshot.group("a:3")
    assert lost is not None and lost.state == "lost" and lost.finished is False  # cell runs
    assert lost.jobs[0].status == "LOST" and lost.tasks.active == 0
    assert snapshot.group("b:3").state == "running"  # type: ignore[union-attr]
    assert group_state(lost.jobs) == "lost"


def test_a_new_context_keeps_the_old_jobs_but_not_their_ids() -> None:
    board = make_board("a")
    keys = {0: ("a", 3)}
    board.update([parse_job(job_data(0, "SUCCEEDED"))], keys, 0, [_view("a")])
    board.update([parse_job(job_data(1))], {1: ("a", 3)}, 0, [_view("a")])
    board.context_replaced()
    # The new context's job 0 is a new job of a new group, not the old group's.
    snapshot = board.update([parse_job(job_data(0))], {0: ("a", 5)}, 0, [_view("a")])
    old, new = snapshot.group("a:3"), snapshot.group("a:5")
    assert old is not None and new is not None
    assert [j.status for j in old.jobs] == ["SUCCEEDED", "LOST"] and old.state == "lost"
    assert [j.state for j in old.jobs] == ["succeeded", "lost"]
    # The new driver has its own job 0: the old jobs are not linked to its UI.
    assert [j.previous_driver for j in old.jobs] == [True, True]
    assert [j.status for j in new.jobs] == ["RUNNING"] and not new.jobs[0].previous_driver
    assert board.settling_job_ids() == [0]  # the new context's job 0, none of the old ones


def test_an_operation_that_ended_with_its_server_is_lost() -> None:
    board = make_board("c")
    board.record_operation(
        "c", OperationReport("op-9", frozenset(), ((0, 1, 0, False),), 1, False, thread_cell=4)
    )
    board.record_operation(
        "c",
        OperationReport(
            "op-9", frozenset(), ((0, 1, 0, False),), 0, True, failed=True, thread_cell=4, lost=True
        ),
    )
    snapshot = board.update([], {}, 0, [])
    group = snapshot.group("c:4")
    assert group is not None and group.state == "lost" and group.jobs[0].status == "LOST"


def test_cells_wake_the_producer_for_a_fast_poll_and_requests_for_one_at_once() -> None:
    board = make_board("etl")
    board.cell_started("etl", 1, "df.count()")
    assert board.wake.is_set()
    assert board.take_wake() is False, "a cell: poll at the fast rate, not at once"
    assert not board.wake.is_set()
    board.cell_finished("etl", 1)
    board.wake_now()  # e.g. a new session, a subscription
    assert board.take_wake() is True
    board.clear_wake()
    assert not board.wake.is_set() and board.take_wake() is False


@pytest.mark.parametrize(
    ("reason", "line"),
    [
        (
            "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most "
            'recent call last):\n  File "<ipython-input-3>", line 8, in f\n    return 1 // x\n'
            "           ~~^^~~\nZeroDivisionError: integer division or modulo by zero\n"
            " SQLSTATE: 38000",
            "ZeroDivisionError: integer division or modulo by zero",
        ),
        (
            "[ARITHMETIC_OVERFLOW] overflow. Use 'try_add' to tolerate overflow. SQLSTATE: 22003\n"
            "== SQL (line 1, position 1) ==\ncast(id + 1 as long) * 2 as x\n^^^^^\n",
            "[ARITHMETIC_OVERFLOW] overflow. Use 'try_add' to tolerate overflow.",
        ),
        ("[USER_RAISED_EXCEPTION] bad row 2 SQLSTATE: P0001", "[USER_RAISED_EXCEPTION] bad row 2"),
    ],
)
def test_a_failed_job_reads_the_first_line_of_its_cause(reason: str, line: str) -> None:
    job = parse_job(job_data(1, "FAILED", submitted=2_000_000, failureReason=reason))
    assert job.error == line
    assert parse_job(job_data(1, "SUCCEEDED", submitted=2_000_000)).error == ""
