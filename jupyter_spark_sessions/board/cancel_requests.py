"""What a cancel request made of the board: its answer (``CancelOutcome``) and the
Spark calls it owes (``PendingCancel``), made by the producer's cancel thread so that
a request never waits for the JVM."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..backends.base import JobRef, SessionBackend


@dataclass(frozen=True)
class CancelOutcome:
    """What a cancel request did: groups now cancelling, and why others were not."""

    cancelling: tuple[str, ...]
    messages: tuple[str, ...]


@dataclass(frozen=True)
class PendingCancel:
    """A cancel the producer must make in ``session``: these jobs (``refs``), every
    job Spark names as the session's (``whole_session``), the jobs of a thread tag."""

    session: str
    backend: SessionBackend
    refs: tuple[JobRef, ...] = ()
    whole_session: bool = False
    tag: str | None = None

    def send(self) -> None:
        """Make the Spark calls (the producer's thread)."""
        if self.whole_session:
            self.backend.cancel_session()
        if self.tag is not None:
            self.backend.cancel_tag(self.tag)
        if self.refs:
            self.backend.cancel_jobs(self.refs)
