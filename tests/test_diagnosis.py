"""The diagnosis' rules, the stage rows, the slot chart and their bounds, on figures
made by hand (the kernel tests run the same on real jobs: test_inside_a_job_kernel.py)."""

from __future__ import annotations

from dataclasses import replace

from jupyter_spark_sessions.board.diagnosis import Thresholds, diagnose
from jupyter_spark_sessions.board.group_inside import (
    MAX_ROWS,
    MAX_SAMPLES,
    SlotSampler,
    stage_rows,
)
from jupyter_spark_sessions.board.group_records import GroupRecord
from jupyter_spark_sessions.board.snapshot import (
    MAX_JOB_STAGES,
    JobView,
    StageView,
    TaskCounts,
    parse_job,
)
from jupyter_spark_sessions.board.stage_figures import ExecutorShare, StageFigures
from jupyter_spark_sessions.cells.inside_render import chart_svg, inside_lines

T0 = 1_800_000_000.0


def stage(
    id: int = 3,
    tasks: int = 200,
    seconds: float = 50.0,
    median: float = 0.4,
    slowest: float = 48.0,
    **figures: object,
) -> StageFigures:
    base = StageFigures(
        id=id,
        attempt=0,
        name="groupBy at In [12] line 2",
        status="complete",
        tasks=TaskCounts(total=tasks, completed=tasks),
        submitted_at=T0,
        completed_at=T0 + seconds,
        run_seconds=tasks * median,
        median_task_seconds=median,
        max_task_seconds=slowest,
        slow_tasks=1,
    )
    return replace(base, **figures)  # type: ignore[arg-type]


def test_a_skewed_stage_gets_one_line_naming_it_with_its_figures_and_remedy() -> None:
    (line,) = diagnose([stage()], slots=8, now=T0 + 60, thresholds=Thresholds())
    assert line == (
        "stage 3 (groupBy at In [12] line 2): its slowest task of 200 ran 48.0 s, "
        "median 0.40 s: skewed keys; salt them, or let AQE split skewed joins"
    )


def test_a_stage_a_cancel_cut_short_gets_no_line() -> None:
    cut = stage(tasks=1, median=4.0, slowest=4.0, status="cancelled")
    assert diagnose([cut], slots=8, now=T0 + 60, thresholds=Thresholds()) == ()


def test_a_healthy_stage_gets_no_line() -> None:
    healthy = stage(slowest=0.6, seconds=12.0)
    assert diagnose([healthy], slots=8, now=T0 + 60, thresholds=Thresholds()) == ()


def test_a_wave_of_slow_first_tasks_is_not_called_skewed() -> None:
    # Each of the 2 slots' first task started a Python worker on a loaded machine.
    wave = stage(tasks=16, seconds=12.6, median=0.79, slowest=6.9, slow_tasks=2)
    assert diagnose([wave], slots=2, now=T0 + 60, thresholds=Thresholds()) == ()


def test_a_short_or_small_stage_is_not_called_skewed() -> None:
    short = stage(seconds=2.0, slowest=1.9, median=0.01)
    few = stage(tasks=4)
    assert diagnose([short, few], slots=2, now=T0 + 60, thresholds=Thresholds()) == ()
    # The settings move the line: a 2-second stage counts with min_seconds 1.
    assert diagnose([short], 2, T0 + 60, Thresholds(min_seconds=1.0))


def test_spill_partitions_retries_gc_and_a_straggler_each_get_their_line() -> None:
    spilled = stage(id=4, slowest=0.5, disk_spilled_bytes=3 * 2**20, memory_spilled_bytes=2**30)
    one_task = stage(id=5, tasks=1, median=9.0, slowest=9.0, seconds=9.5)
    retried = replace(
        stage(id=6, slowest=0.5, first_task_failure="ExecutorLostFailure (executor 1 exited)"),
        tasks=TaskCounts(total=200, completed=200, failed=2),
    )
    gc = stage(id=7, slowest=0.5, gc_seconds=40.0, run_seconds=80.0)
    slow_executor = stage(
        id=8, slowest=3.0, median=0.5,
        executors=(ExecutorShare("0", 0, 50, 25.0), ExecutorShare("1", 0, 50, 24.0),
                   ExecutorShare("2", 0, 50, 150.0)),
    )  # fmt: skip
    lines = diagnose([spilled, one_task, retried, gc, slow_executor], 4, T0 + 60, Thresholds())
    assert [line.split(":")[0] for line in lines] == [
        "stage 4 (groupBy at In [12] line 2)",
        "stage 5 (groupBy at In [12] line 2)",
        "stage 6 (groupBy at In [12] line 2)",
        "stage 7 (groupBy at In [12] line 2)",
        "stage 8 (groupBy at In [12] line 2)",
    ]
    assert "spilled 3.0 MiB to disk (1.0 GiB in memory)" in lines[0]
    assert "1 task for 4 task slots over 9.5 s: too few partitions; repartition(4)" in lines[1]
    assert "2 tasks failed and ran again (ExecutorLostFailure (executor 1 exited))" in lines[2]
    assert "GC took 50% of the tasks' time (40.0 s of 80.0 s)" in lines[3]
    assert "executor 2's tasks took 3.0 s on average, the others' 0.49 s" in lines[4]


def test_rows_are_bounded_running_and_longest_first_in_stage_order() -> None:
    many = [(1, stage(id=i, seconds=float(i))) for i in range(30)]
    running = (1, stage(id=2, status="active", completed_at=None))
    rows, more = stage_rows([*many[:2], running, *many[3:]], now=T0 + 100)
    assert len(rows) == MAX_ROWS and more == 30 - MAX_ROWS
    assert [r.id for r in rows] == [2, *range(21, 30)]
    assert rows[0].status == "active" and rows[0].elapsed == 100.0


def test_the_chart_stays_bounded_and_keeps_each_executors_lane() -> None:
    sampler = SlotSampler()

    def running(first: int, second: int) -> StageFigures:
        shares = (ExecutorShare("0", first, 0, 0.0), ExecutorShare("1", second, 0, 0.0))
        return stage(status="active", executors=shares)

    for second in range(1000):
        sampler.sample(T0 + second, [running(second % 2, 2)], {"0": 2, "1": 2, "driver": 0})
    chart = sampler.chart(T0, T0 + 1000, [running(0, 2)])
    assert chart is not None
    assert chart.executors == ("0", "1") and chart.slots == (2, 2)
    assert MAX_SAMPLES // 2 <= len(chart.samples) <= MAX_SAMPLES
    # Merged neighbours hold their mean; the latest are still as sampled.
    assert chart.samples[0] == (T0, (0.5, 2.0))
    assert {counts for _, counts in chart.samples} <= {(0.0, 2.0), (0.5, 2.0), (1.0, 2.0)}
    assert chart.stage_marks == ((T0, 3),)
    svg = chart_svg(chart.__dict__)
    assert svg.count("<polygon") == 2 and "0: 2 slots" in svg and "1: 2 slots" in svg


def test_a_steady_group_adds_no_sample_so_its_view_does_not_change() -> None:
    sampler = SlotSampler()
    steady = stage(status="active", executors=(ExecutorShare("0", 1, 0, 0.0),))
    for tenth in range(40):
        sampler.sample(T0 + tenth / 10, [steady], {"0": 2})
    assert len(sampler.samples) == 1 and sampler.version == 1
    sampler.sample(T0 + 5, [steady], {"0": 2})  # but it moves on every few seconds
    assert len(sampler.samples) == 2


def test_the_text_rendering_has_the_rows_and_the_findings() -> None:
    rows, more = stage_rows([(1, stage())], now=T0 + 60)
    inside = {
        "stages": [r.__dict__ for r in rows],
        "more_stages": more,
        "skipped_stages": 2,
        "unknown_stages": 0,
        "chart": None,
        "findings": ["stage 3 (...): skewed"],
    }
    assert inside_lines(inside) == [
        "  stage 3 groupBy at In [12] line 2 · 200/200 tasks · 50.0 s · "
        "slowest task 48.0 s, median 0.40 s",
        "  2 skipped (their output was there already)",
        "  ! stage 3 (...): skewed",
    ]


def test_a_group_keeps_its_first_stages_figures_after_spark_let_them_go() -> None:
    ids = tuple(range(30))
    figures = {i: stage(id=i, tasks=2, slowest=0.5, seconds=1.0) for i in ids}

    def job(status: str) -> JobView:
        return JobView(1, "count at In [1] line 1", status, T0, None, TaskCounts(60), ids)

    group = GroupRecord("a", 1)
    running = group.inside_now((job("RUNNING"),), figures, Thresholds(), cell_running=True)
    assert running is not None and running.more_stages == 20
    # Spark kept only its last 10 ended stages when the group ended: the group did not.
    latest = {i: f for i, f in figures.items() if i >= 20}
    ended = group.inside_now((job("SUCCEEDED"),), latest, Thresholds(), cell_running=False)
    assert ended is not None and ended.unknown_stages == 0 and ended.more_stages == 20
    # Once ended, its picture is kept and its figures let go.
    assert group.seen == {}
    assert group.inside_now((job("SUCCEEDED"),), {}, Thresholds(), False) is ended


def test_a_job_of_many_running_stages_carries_only_its_busiest() -> None:
    running = tuple(
        StageView(i, "", 0, TaskCounts(total=4, active=1 if i % 100 else 3)) for i in range(2000)
    )
    job = parse_job({"jobId": 1, "status": "RUNNING", "stageIds": list(range(2000))}, running)
    assert len(job.stages) == MAX_JOB_STAGES
    busiest = [s.id for s in job.stages]
    assert busiest == [0, 100, 200, 300, 400, 500, 600, 700, 800, 900]  # 3 tasks each
    assert len(job.stage_ids) == 2000  # the stage rows still count every stage
