"""The job tag format and the per-thread tag stack (pure logic, recording context)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from jupyter_spark_sessions.backends import classic
from jupyter_spark_sessions.backends.classic import ClassicBackend
from jupyter_spark_sessions.job_tags import group_id, group_tag, parse_tag, session_tag
from jupyter_spark_sessions.sessions.thread_tagger import ThreadJobTagger


class RecordingContext:
    """Records, per thread, what ``cell_scope.enter``/``exit`` would set in the JVM (the
    real scope is tested on a real JVM in tests/test_private_apis.py)."""

    _jsc = object()  # "running"

    def __init__(self) -> None:
        self.tags: dict[int, set[str]] = {}
        self.entered: dict[int, list[tuple[str, ...]]] = {}

    def _mine(self) -> set[str]:
        return self.tags.setdefault(threading.get_ident(), set())

    def enter(self, tags: tuple[str, ...]) -> None:
        assert all("," not in tag and tag for tag in tags)
        self.entered.setdefault(threading.get_ident(), []).append(tags)
        self._mine().update(tags)

    def exit(self) -> None:
        stack = self.entered.get(threading.get_ident())
        if stack:
            self._mine().difference_update(stack.pop())


@pytest.fixture(autouse=True)
def recorded_cell_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        classic.cell_scope, "enter", lambda sc, tags, jsession, state, pool: sc.enter(tags)
    )
    monkeypatch.setattr(classic.cell_scope, "exit", lambda sc: sc.exit())
    # The recording context has no py4j gateway: count it as reachable.
    monkeypatch.setattr(classic, "reachable", lambda sc: True)


def on(sc: RecordingContext) -> ClassicBackend:
    """The classic backend of a session on the recording context (no JVM)."""
    backend = ClassicBackend.__new__(ClassicBackend)  # its __init__ reads the JVM
    backend.session = SimpleNamespace(sparkContext=sc, _jsparkSession=None)
    backend._artifact_state = None
    backend.pool = None
    backend.name = "recorded"  # bound for getOrCreate (builder_binding) as it tags
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


def test_the_same_cell_pushed_again_keeps_its_tags_on_without_a_round_trip() -> None:
    # A `%%spark_sql a` cell bound to a: the magic pushes the cell the hook pushed.
    sc = RecordingContext()
    tagger, backend = ThreadJobTagger(), on(sc)
    tagger.push(backend, "a", 5)  # type: ignore[arg-type]
    tagger.push(backend, "a", 5)  # type: ignore[arg-type]
    assert sc.entered[threading.get_ident()] == [("jss:a", "jss:a:5")]  # entered once
    with tagger.suspended():  # (a stream started in the magic's block)
        assert sc._mine() == set()
    assert sc._mine() == {"jss:a", "jss:a:5"}
    with tagger.suspended():  # tags off: pushing the cell again puts them on
        tagger.push(backend, "a", 5)  # type: ignore[arg-type]
        assert sc._mine() == {"jss:a", "jss:a:5"}
        tagger.pop()
    tagger.pop()
    assert sc._mine() == {"jss:a", "jss:a:5"} and tagger.current_cell() == ("a", 5)
    tagger.push(backend, "b", 5)  # type: ignore[arg-type]
    assert sc._mine() == {"jss:b", "jss:b:5"}
    tagger.pop()
    tagger.pop()
    assert sc._mine() == set() and tagger.current_cell() is None


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
