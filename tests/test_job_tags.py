"""The job tag format and the per-thread tag stack (pure logic, recording context)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from jupyter_spark_sessions.backends import classic
from jupyter_spark_sessions.backends.classic import ClassicBackend
from jupyter_spark_sessions.job_tags import (
    ThreadJobTagger,
    group_id,
    group_tag,
    parse_tag,
    session_tag,
)


class RecordingContext:
    """Records addJobTag/removeJobTag per thread, like Spark's per-thread tags."""

    _jsc = object()  # "running"

    def __init__(self) -> None:
        self.tags: dict[int, set[str]] = {}

    def _mine(self) -> set[str]:
        return self.tags.setdefault(threading.get_ident(), set())

    def addJobTag(self, tag: str) -> None:  # Spark's name
        assert "," not in tag and tag
        self._mine().add(tag)

    def removeJobTag(self, tag: str) -> None:  # Spark's name
        self._mine().discard(tag)

    # Thread-local properties, as SparkContext keeps them.
    properties: dict[int, dict[str, str]]

    def _props(self) -> dict[str, str]:
        if not hasattr(self, "properties"):
            self.properties = {}
        return self.properties.setdefault(threading.get_ident(), {})

    def getLocalProperty(self, key: str) -> str | None:
        return self._props().get(key)

    def setLocalProperty(self, key: str, value: str | None) -> None:
        if value is None:
            self._props().pop(key, None)
        else:
            self._props()[key] = value

    def setInterruptOnCancel(self, flag: bool) -> None:
        self.setLocalProperty("spark.job.interruptOnCancel", str(flag).lower())


@pytest.fixture(autouse=True)
def no_jvm_active_session(monkeypatch: pytest.MonkeyPatch) -> None:
    # Setting Spark's active session needs a JVM (tests/test_private_apis.py has it).
    monkeypatch.setattr(classic, "set_active_session", lambda session: (None, None))
    # The recording context has no py4j gateway: count it as reachable.
    monkeypatch.setattr(classic, "_reachable", lambda sc: True)


def on(sc: RecordingContext) -> ClassicBackend:
    """The classic backend of a session on the recording context (no JVM)."""
    backend = ClassicBackend.__new__(ClassicBackend)  # its __init__ reads the JVM
    backend.session = SimpleNamespace(sparkContext=sc)
    backend._artifact_state = None
    return backend


def test_tags_carry_session_and_execution_count() -> None:
    assert session_tag("etl") == "jss:etl"
    assert group_id("etl", 12) == "etl:12"
    assert group_tag("etl", 12) == "jss:etl:12"


@pytest.mark.parametrize(
    ("tag", "parsed"),
    [
        ("jss:etl", ("etl", None)),
        ("jss:etl:12", ("etl", 12)),
        ("jss:my.run-1:3", ("my.run-1", 3)),
        ("jss:données:4", ("données", 4)),
        ("spark-session-1234", None),
        ("jss:", None),
        ("jss:etl:x", None),
    ],
)
def test_parse_tag_round_trips_and_rejects_foreign_tags(
    tag: str, parsed: tuple[str, int | None] | None
) -> None:
    assert parse_tag(tag) == parsed


def test_push_pop_applies_only_the_top_session() -> None:
    sc = RecordingContext()
    tagger = ThreadJobTagger()
    tagger.push(on(sc), "a", 5)  # type: ignore[arg-type]
    assert sc._mine() == {"jss:a", "jss:a:5"}
    tagger.push(on(sc), "b", 5)  # type: ignore[arg-type]
    assert sc._mine() == {"jss:b", "jss:b:5"}
    tagger.pop()
    assert sc._mine() == {"jss:a", "jss:a:5"}
    tagger.pop()
    assert sc._mine() == set()
    tagger.pop()  # an extra pop is harmless
    assert tagger.current_tags() == ()


def test_tags_are_per_thread() -> None:
    sc = RecordingContext()
    tagger = ThreadJobTagger()
    seen: list[tuple[str, ...]] = []
    with tagger.tagged(on(sc), "a", 1):  # type: ignore[arg-type]

        def other() -> None:
            seen.append(tagger.current_tags())
            with tagger.tagged(on(sc), "b", 2):  # type: ignore[arg-type]
                seen.append(tagger.current_tags())

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert tagger.current_tags() == ("jss:a", "jss:a:1")
    assert seen == [(), ("jss:b", "jss:b:2")]
    assert all(not tags for tags in sc.tags.values())


def test_tagged_block_removes_tags_when_it_raises() -> None:
    sc = RecordingContext()
    tagger = ThreadJobTagger()
    with pytest.raises(ValueError), tagger.tagged(on(sc), "a", 1):  # type: ignore[arg-type]
        raise ValueError("boom")
    assert sc._mine() == set()


def test_tagged_cells_interrupt_running_tasks_on_cancel_and_restore_the_setting() -> None:
    # RDD jobs leave running tasks alone on cancel unless interruptOnCancel is set.
    sc = RecordingContext()
    tagger = ThreadJobTagger()
    sc.setLocalProperty("spark.job.interruptOnCancel", "false")  # the user's choice
    tagger.push(on(sc), "a", 1)  # type: ignore[arg-type]
    assert sc.getLocalProperty("spark.job.interruptOnCancel") == "true"
    tagger.pop()
    assert sc.getLocalProperty("spark.job.interruptOnCancel") == "false"
    fresh = RecordingContext()
    with tagger.tagged(on(fresh), "a", 2):  # type: ignore[arg-type]
        assert fresh.getLocalProperty("spark.job.interruptOnCancel") == "true"
    assert fresh.getLocalProperty("spark.job.interruptOnCancel") is None
