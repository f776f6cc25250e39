"""Building a real ``JobBoard`` and its views without Spark, for the pure tests of the
board, the protocol and the in-cell progress view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_spark_sessions.board.job_board import JobBoard
from jupyter_spark_sessions.board.snapshot import SessionView
from jupyter_spark_sessions.config import SparkSessionsConfig
from jupyter_spark_sessions.errors import UnknownSessionError


@dataclass(frozen=True)
class _Backend:
    name: str


class FakeSessions:
    """The board's ``SessionSource``: names and (inert) backends."""

    def __init__(self, *names: str) -> None:
        self._names = list(names)

    def names(self) -> list[str]:
        return list(self._names)

    def backend(self, name: str) -> _Backend:
        if name not in self._names:
            raise UnknownSessionError(f"No session named '{name}'.")
        return _Backend(name)

    def describe(self, name: str, running_jobs: int | None = None) -> Any:
        raise AssertionError("the board itself never describes sessions")


def make_board(*names: str, retained: int = 50) -> JobBoard:
    """A board over fake sessions ``names``, keeping ``retained`` finished groups."""
    return JobBoard(FakeSessions(*names), SparkSessionsConfig(retained_groups=retained))  # type: ignore[arg-type]


def session_view(name: str, session_id: str, directory: str, **fields: Any) -> SessionView:
    """The board's view of session ``name``: created, classic on local[2] and isolated
    unless ``fields`` say otherwise."""
    values: dict[str, Any] = {
        "origin": "created",
        "backend": "classic",
        "master": "local[2]",
        "isolated": True,
    }
    values.update(fields)
    return SessionView(name=name, session_id=session_id, directory=directory, **values)
