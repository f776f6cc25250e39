"""Pure checks of artifacts.py that a real kernel cannot exercise here: the tests run as
root, for whom no file is unreadable; and a Spark refusal mid-way."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from jupyter_spark_sessions.errors import ArtifactError
from jupyter_spark_sessions.files.artifacts import SessionArtifacts


def test_an_unreadable_file_is_one_line_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("x")
    session_dir = tmp_path / "session"
    session_dir.mkdir()
    real_open = builtins.open

    def deny(file: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(file) == secret:
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", deny)
    store = SessionArtifacts("a", session_dir, lambda *args: None)
    with pytest.raises(ArtifactError, match=r"^Cannot read .*secret.csv: Permission denied$"):
        store.add_file(secret)
    assert list(session_dir.iterdir()) == [] and store.list() == []


def test_a_spark_refusal_leaves_no_copy_and_no_record(tmp_path: Path) -> None:
    source = tmp_path / "lookup.csv"
    source.write_text("data")
    session_dir = tmp_path / "session"
    session_dir.mkdir()
    staged: list[Path] = []

    def refuse(remote: str, path: Path, fragment: str | None) -> None:
        staged.append(path)
        raise RuntimeError("DUPLICATED_ARTIFACT something\nat the JVM")

    store = SessionArtifacts("a", session_dir, refuse)
    with pytest.raises(ArtifactError, match=r"^Spark did not accept 'files/lookup.csv': DUPL"):
        store.add_file(source)
    assert list(session_dir.iterdir()) == [] and store.list() == []
    assert staged and not staged[0].exists()
    assert source.read_text() == "data"


def test_what_spark_is_given(tmp_path: Path) -> None:
    calls: list[tuple[str, str, str | None]] = []

    def register(remote: str, path: Path, fragment: str | None) -> None:
        calls.append((remote, path.read_text(), fragment))
        path.unlink()  # Spark moves the staged file away

    source = tmp_path / "lookup.csv"
    source.write_text("data")
    session_dir = tmp_path / "session"
    session_dir.mkdir()
    store = SessionArtifacts("a", session_dir, register)
    result = store.add_file(source, "renamed.csv")
    assert result.added and calls == [("files/renamed.csv", "data", None)]
    assert Path(result.artifact.path).read_text() == "data"
    assert sorted(p.name for p in session_dir.iterdir()) == ["renamed.csv"]
