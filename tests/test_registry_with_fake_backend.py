"""The registry, the job board and its poller driven through a fake backend: every
cancel, tag and release reaches Spark only through ``SessionBackend``."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any

import pytest
from fake_backend import FakeBackend, FakeJobFeed
from test_context_job_feed import LaggingStore

from jupyter_spark_sessions.app import SparkSessionsApp
from jupyter_spark_sessions.backends.classic import ContextJobFeed
from jupyter_spark_sessions.board import poller
from jupyter_spark_sessions.board.snapshot import parse_job
from jupyter_spark_sessions.config import SparkSessionsConfig
from jupyter_spark_sessions.errors import SessionNameError, UnknownSessionError
from jupyter_spark_sessions.sessions.python_envs import Requirements, SessionEnv
from jupyter_spark_sessions.sessions.registry import SessionRegistry


def job(job_id: int, session: str, cell: int, status: str = "RUNNING") -> dict[str, object]:
    tags = [f"spark-session-{session}", f"jss:{session}", f"jss:{session}:{cell}"]
    return {
        "jobId": job_id,
        "status": status,
        "jobTags": tags,
        "sparkSession": tags[0],  # what the classic feed adds: the Spark session's tag
        "numTasks": 2,
        "stageIds": [],
    }


@pytest.fixture
def registry(tmp_path: Path) -> SessionRegistry:
    config = SparkSessionsConfig(session_root=str(tmp_path / "root"), release_timeout=5.0)
    reg = SparkSessionsApp(config).registry
    reg.board_poller.stop()  # the tests poll by hand
    return reg


def poll(registry: SessionRegistry) -> None:
    registry.board_poller.stop()
    registry.board_poller.poll_once()


def test_a_group_cancel_reaches_only_its_sessions_backend(registry: SessionRegistry) -> None:
    feed = FakeJobFeed()
    a, b = FakeBackend("a", feed), FakeBackend("b", feed)
    registry.register("a", a, "created", isolated=True)
    registry.register("b", b, "created", isolated=True)
    feed.jobs = {1: job(1, "a", 3), 2: job(2, "b", 4)}
    poll(registry)
    snapshot = registry.board.snapshot()
    assert [(g.id, g.state) for g in snapshot.groups] == [("a:3", "running"), ("b:4", "running")]
    assert {s.name: s.running_jobs for s in snapshot.sessions} == {"a": 1, "b": 1}

    outcome = registry.board.request_cancel(["a:3"])
    assert outcome.cancelling == ("a:3",)
    assert a.called("cancel") == [] and b.called("cancel") == []  # a request, not a call
    poll(registry)
    assert a.called("cancel") == [("cancel", "jobs", (1,))]
    assert b.called("cancel") == []
    feed.jobs[1] = job(1, "a", 3, status="FAILED")
    poll(registry)
    states = {g.id: g.state for g in registry.board.snapshot().groups}
    assert states == {"a:3": "cancelled", "b:4": "running"}


def test_a_poll_parses_only_the_jobs_spark_reports_changed(
    registry: SessionRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[int] = []

    def counting_parse_job(data: dict[str, Any], stages: tuple[Any, ...] = ()) -> Any:
        parsed.append(int(data["jobId"]))
        return parse_job(data, stages)

    monkeypatch.setattr(poller, "parse_job", counting_parse_job)
    feed = FakeJobFeed()
    registry.register("a", FakeBackend("a", feed), "created", isolated=True)
    feed.jobs = {1: job(1, "a", 3), 2: job(2, "a", 4)}
    poll(registry)
    before = {g.id: g for g in registry.board.snapshot().groups}
    assert sorted(parsed) == [1, 2]
    parsed.clear()
    feed.jobs[2] = {**job(2, "a", 4), "numCompletedTasks": 1}
    poll(registry)
    after = {g.id: g for g in registry.board.snapshot().groups}
    assert parsed == [2]
    assert after["a:3"] is before["a:3"]
    assert after["a:4"].tasks.completed == 1 and before["a:4"].tasks.completed == 0

    # A job of a Spark session not yet registered is no group's; once it is, the job
    # is read again into that session's group, though Spark's data did not change.
    feed.jobs[5] = {**job(5, "a", 6), "sparkSession": "spark-session-b"}
    poll(registry)
    assert "a:6" not in {g.id for g in registry.board.snapshot().groups}
    registry.register("b", FakeBackend("b", feed), "created", isolated=True)
    poll(registry)
    groups = {g.id: [j.id for j in g.jobs] for g in registry.board.snapshot().groups}
    assert groups["b:6"] == [5] and "a:6" not in groups


def test_running_in_tags_the_thread_through_the_backend(registry: SessionRegistry) -> None:
    a = FakeBackend("a")
    registry.register("a", a, "created", isolated=True)
    with registry.running_in("a", 7, "df.count()") as session:
        assert session is a.session
        assert registry.tagger.current_tags() == ("jss:a", "jss:a:7")
    assert a.called("tag") == [("tag", ("jss:a", "jss:a:7"))]
    assert a.called("untag") == [("untag", ("jss:a", "jss:a:7"))]


def test_stop_cancels_then_releases_a_created_session_only(registry: SessionRegistry) -> None:
    created, adopted = FakeBackend("mine"), FakeBackend("theirs")
    registry.register("mine", created, "created", isolated=True)
    registry.register("theirs", adopted, "adopted", isolated=False)
    created.running = 1
    release = registry.stop("mine")
    poll(registry)  # the cancel the stop requested
    assert created.called("cancel") == [("cancel", "session")]
    assert not release.wait(0.3)  # its job still runs: not released yet
    created.running = 0
    assert release.wait(5) and release.error is None
    assert created.called("release") == [("release", False)]
    assert not release.directory.exists()

    registry.stop("theirs").wait(5)
    assert adopted.called("forget") == [("forget",)]
    assert adopted.called("release") == [] and adopted.called("cancel") == []
    assert registry.names() == []


def test_files_go_to_the_backend_and_names_are_not_reused(
    registry: SessionRegistry, tmp_path: Path
) -> None:
    a = FakeBackend("a")
    registry.register("a", a, "created", isolated=True)
    source = tmp_path / "lookup.csv"
    source.write_text("k,v\n")
    result = registry.add_file("a", source)
    assert result.added and a.called("add_artifact") == [("add_artifact", "files/lookup.csv", None)]
    assert [f.name for f in registry.describe("a").files] == ["lookup.csv"]
    with pytest.raises(SessionNameError):
        registry.register("a", FakeBackend("a"), "created", isolated=True)


def test_shutdown_releases_created_sessions_quickly(registry: SessionRegistry) -> None:
    created, adopted = FakeBackend("mine"), FakeBackend("theirs")
    registry.register("mine", created, "created", isolated=True)
    registry.register("theirs", adopted, "adopted", isolated=True)
    registry.shutdown()
    assert created.called("cancel") == [("cancel", "session"), ("cancel", "tag", "jss:mine")]
    assert created.called("release") == [("release", True)]
    assert adopted.called("release") == [] and adopted.called("cancel") == []


def test_describe_shows_a_sessions_own_packages(registry: SessionRegistry) -> None:
    registry.register("plain", FakeBackend("plain"), "created", isolated=True)
    registry.register("pkgs", FakeBackend("pkgs"), "created", isolated=True)
    wanted = Requirements(("jsspkg==1.0", "/wheels/x-1.0-py3-none-any.whl"), ("/src/req.txt",))
    registry.get("pkgs").env = SessionEnv("/envs/k/bin/python", "k", wanted, False, 0.0)
    assert registry.describe("pkgs").packages == ("jsspkg==1.0, x-1.0-py3-none-any.whl, -r req.txt")
    assert registry.describe("plain").packages == ""
    assert {s.name: s.packages for s in registry.list()}["pkgs"].startswith("jsspkg==1.0")


@pytest.mark.parametrize("lost_with", [UnknownSessionError("stopped meanwhile"), OSError("py4j")])
def test_a_poll_lost_after_spark_was_read_leaves_no_job_shown_running(
    registry: SessionRegistry, monkeypatch: pytest.MonkeyPatch, lost_with: Exception
) -> None:
    # The classic feed asks Spark again only for the jobs it last read running: the poll
    # that read a job's end must not be the only one that could show it (seen: a job
    # left "running" for ever when its session was stopped during that poll).
    store = LaggingStore()
    a = FakeBackend("a", ContextJobFeed(object(), store))  # type: ignore[arg-type]
    a.spark_session_tag = f"spark-session-{uuid.uuid4()}"  # Spark's own form
    registry.register("a", a, "created", isolated=True)
    store.total = 1
    store.written[0] = {
        "jobId": 0,
        "status": "RUNNING",
        "jobTags": [a.spark_session_tag, "jss:a", "jss:a:3"],
        "numTasks": 2,
        "stageIds": [],
    }
    poll(registry)
    assert [(g.id, g.state) for g in registry.board.snapshot().groups] == [("a:3", "running")]
    store.written[0]["status"] = "SUCCEEDED"
    describe = registry.describe

    def lost_once(name: str, running_jobs: int | None = None) -> Any:
        monkeypatch.setattr(registry, "describe", describe)
        raise lost_with

    monkeypatch.setattr(registry, "describe", lost_once)
    with contextlib.suppress(OSError):  # the poll loop reports it and polls again
        registry.board_poller.poll_once()
    poll(registry)
    assert [(g.id, g.state) for g in registry.board.snapshot().groups] == [("a:3", "succeeded")]
