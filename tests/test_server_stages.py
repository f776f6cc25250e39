"""A Connect server's stages as the REST API gives them, turned into the figures the
board shows (backends/server_stages.py): pure functions, on data shaped as Spark 4.3's
``/api/v1/applications/<id>/stages`` answers (the real server's answers are read in
test_inside_a_job_kernel.py's Connect test)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jupyter_spark_sessions.backends import server_stages
from jupyter_spark_sessions.backends.server_stages import (
    QUANTILES,
    ServerStageReader,
    epoch_ms,
    figures_of,
    running_per_executor,
    slow_task_count,
)
from jupyter_spark_sessions.board.stage_figures import parse_stage_figures

ACTIVE = {
    "status": "ACTIVE",
    "stageId": 3,
    "attemptId": 0,
    "numTasks": 16,
    "numActiveTasks": 2,
    "numCompleteTasks": 9,
    "numFailedTasks": 1,
    "numKilledTasks": 0,
    "submissionTime": "2026-12-06T09:04:38.929GMT",
    "executorRunTime": 4000,
    "jvmGcTime": 100,
    "inputBytes": 10,
    "shuffleReadBytes": 20,
    "shuffleWriteBytes": 30,
    "memoryBytesSpilled": 40,
    "diskBytesSpilled": 50,
    "name": 'Spark Connect - session_id: "1b70"\nplan {\n  root {',
    "tasks": {
        "11": {"taskId": 11, "status": "RUNNING", "executorId": "0"},
        "12": {"taskId": 12, "status": "RUNNING", "executorId": "1"},
        "13": {"taskId": 13, "status": "RUNNING", "executorId": "1"},
        "7": {
            "taskId": 7,
            "status": "FAILED",
            "errorMessage": "org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] "
            "An exception was thrown from the Python worker: Traceback (most recent call "
            'last):\n  File "<cell>", line 3, in f\nRuntimeError: planted failure\n\n'
            "\tat org.apache.spark.api.python.BasePythonRunner",
        },
    },
    "executorSummary": {
        "0": {"taskTime": 3000, "succeededTasks": 5, "failedTasks": 1, "killedTasks": 0},
        "1": {"taskTime": 1000, "succeededTasks": 4, "failedTasks": 0, "killedTasks": 0},
    },
}


def test_a_rest_stage_reads_as_the_listeners_figures() -> None:
    summary = {"duration": [100.0, 120.0, 130.0, 150.0, 2000.0, 2000.0, 2000.0]}
    data = figures_of(ACTIVE, running_per_executor(ACTIVE), summary)
    stage = parse_stage_figures(data)
    assert (stage.id, stage.attempt, stage.status) == (3, 0, "active")
    assert stage.name == "", "the server's plan text is no name: its operation's call site is"
    assert (stage.tasks.total, stage.tasks.active, stage.tasks.completed) == (16, 2, 9)
    assert stage.tasks.failed == 1 and stage.first_task_failure == "RuntimeError: planted failure"
    assert stage.submitted_at == epoch_ms("2026-12-06T09:04:38.929GMT") / 1000
    assert (stage.input_bytes, stage.shuffle_read_bytes, stage.shuffle_write_bytes) == (10, 20, 30)
    assert (stage.memory_spilled_bytes, stage.disk_spilled_bytes) == (40, 50)
    assert (stage.run_seconds, stage.gc_seconds) == (4.0, 0.1)
    assert (stage.median_task_seconds, stage.max_task_seconds) == (0.1, 2.0)
    shares = {e.id: (e.running, e.ended, e.task_seconds) for e in stage.executors}
    assert shares == {"0": (1, 6, 3.0), "1": (2, 4, 1.0)}


def test_without_quantiles_yet_the_median_is_unknown_not_zero() -> None:
    stage = parse_stage_figures(figures_of(ACTIVE, {}, None))
    assert stage.median_task_seconds is None and stage.max_task_seconds is None


def test_the_tasks_near_the_slowest_are_counted_from_the_quantiles() -> None:
    # 16 tasks, one of them slow: the quantiles 0.99, 0.999 and 1.0 are all that task.
    one = dict(zip(QUANTILES, [50, 50, 50, 50, 2500, 2500, 2500], strict=True))
    assert slow_task_count(16, one) == 1
    # 16 tasks, two slow (indices 14 and 15: the 0.9 quantile is index 14).
    two = dict(zip(QUANTILES, [50, 50, 2400, 2400, 2500, 2500, 2500], strict=True))
    assert slow_task_count(16, two) == 2
    # All alike: every task is "near the slowest".
    flat = dict(zip(QUANTILES, [50] * 7, strict=True))
    assert slow_task_count(16, flat) == 16
    assert slow_task_count(0, one) == 0
    # 2,000 tasks, one slow: only the slowest quantile is that task.
    last = dict(zip(QUANTILES, [50, 50, 50, 50, 50, 50, 2500], strict=True))
    assert slow_task_count(2000, last) == 1


def test_dates_the_api_writes_and_ones_it_does_not() -> None:
    assert epoch_ms("1970-01-01T00:00:01.500GMT") == 1500
    assert epoch_ms("") is None and epoch_ms(None) is None and epoch_ms("yesterday") is None


class _Clock:
    """time.monotonic for server_stages, moved by the fake server's answers."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    from jupyter_spark_sessions.backends import server_stages

    fake = _Clock()
    monkeypatch.setattr(server_stages, "time", fake)
    return fake


def fake_reader(
    clock: _Clock, answer: Callable[[str, int], object], cost: float = 0.0
) -> tuple[ServerStageReader, list[str]]:
    """A reader of a fake server whose every answer takes ``cost`` seconds: it names its
    application and one executor of two slots; ``answer(path, n)`` answers the stage
    requests (``n``: how many came before). The paths of those requests, in order."""
    asked: list[str] = []

    class FakeServer(ServerStageReader):
        def _get(self, path: str) -> object:
            clock.now += cost
            if path == "":
                return [{"id": "app-1"}]
            if path.endswith("/executors"):
                return [{"id": "driver", "totalCores": 2}]
            asked.append(path)
            return answer(path, len(asked) - 1)

    return FakeServer("http://127.0.0.1:4040", ""), asked


def test_the_reads_of_a_slow_server_space_out_to_a_small_share_of_it(clock: _Clock) -> None:
    # A server whose answers take 0.2 s (a stage of many thousand tasks): the next read
    # waits 0.2 / READ_SHARE (5 s), not READ_SECONDS; a new stage is read at once.
    def answer(path: str, _: int) -> object:
        if "/stages?status=active" in path:
            return [{**ACTIVE, "numCompleteTasks": 0}, {**ACTIVE, "stageId": 4}]
        return {"duration": [1.0] * len(QUANTILES)}

    reader, asked = fake_reader(clock, answer, cost=0.2)
    reader.refresh([3])
    reads = len(asked)
    assert any("/stages?status=active" in path for path in asked)
    cost = reader._read_cost
    assert cost >= 0.4  # the app, the executors, the stages
    for wait in (1.0, 3.0, cost / server_stages.READ_SHARE - 1.0):
        clock.now = reader._read_at + wait
        reader.refresh([3])
        assert len(asked) == reads, (wait, asked[reads:])
    clock.now = reader._read_at + cost / server_stages.READ_SHARE + 0.01
    reader.refresh([3])
    assert len(asked) > reads
    reads = len(asked)
    reader.refresh([3, 4])  # a new stage: read at once
    assert len(asked) > reads


def test_an_ended_stage_the_servers_store_still_has_running_is_asked_again_until_it_ended(
    clock: _Clock,
) -> None:
    # The operation returned, but the server's status store (its listener runs behind)
    # still says the stage is active: asked again a moment later, not given up at once,
    # and left alone once its end was read.
    ended_after = 3  # the store has the stage's end from the third ask on

    def answer(_: str, before: int) -> object:
        if before + 1 < ended_after:
            return [{**ACTIVE, "numActiveTasks": 2, "numCompleteTasks": 2, "numTasks": 4}]
        return [
            {
                **ACTIVE,
                "status": "COMPLETE",
                "numActiveTasks": 0,
                "numCompleteTasks": 4,
                "numTasks": 4,
                "completionTime": "2026-12-06T09:04:40.000GMT",
            }
        ]

    reader, asked = fake_reader(clock, answer)
    reader.refresh([], [3])
    assert len(asked) == 1 and reader.stage_figures() == {}  # active: not kept as its end
    reader.refresh([], [3])  # at once again: not due yet
    assert len(asked) == 1
    for _ in range(20):
        clock.now += 0.25
        reader.refresh([], [3])
    assert len(asked) == ended_after, asked
    figures = parse_stage_figures(reader.stage_figures()[3])
    assert (figures.status, figures.tasks.completed, figures.tasks.total) == ("complete", 4, 4)


def test_a_stage_the_server_never_ends_is_asked_a_bounded_number_of_times(clock: _Clock) -> None:
    reader, asked = fake_reader(clock, lambda _, __: [{**ACTIVE, "status": "PENDING"}])
    for _ in range(200):  # 50 s of polls, four a second
        reader.refresh([], [3])
        clock.now += 0.25
    assert len(asked) == server_stages.MAX_TRIES
    # Spread over the seconds a busy server's store may lag, not asked all at once.
    assert sum(server_stages.RETRY_AFTER_SECONDS) >= 5.0
