"""Releasing sessions the registry gives up: a stopped session once its jobs ended,
every created session at kernel shutdown (bounded by one deadline), a session replaced
by ``reconnect``. Failures are logged, never raised: the kernel is going on (or away).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .. import job_tags

if TYPE_CHECKING:
    from ..backends.base import SessionBackend

log = logging.getLogger(__name__)


class Release:
    """The background release of a stopped session; ``wait`` for it in tests or scripts."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        self.error: BaseException | None = None
        #: The job groups its stop cancelled (none when nothing ran).
        self.cancelled: tuple[str, ...] = ()
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        """True once the session's jobs ended and its resources were released."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until released; False when ``timeout`` passed first."""
        return self._done.wait(timeout)

    def finish(self, error: BaseException | None = None) -> None:
        """Mark it released (``error``: why the release failed)."""
        self.error = error
        self._done.set()


class Releasable(Protocol):
    """What releasing needs of a registry entry (``registry.ManagedSession`` is one)."""

    name: str
    backend: SessionBackend


def wait_for_jobs_to_end(managed: Releasable, timeout: float, quiet: float = 0.0) -> None:
    """Until no job of the session has run for ``quiet`` seconds (a query's next job
    starts a moment after its previous one ends), or ``timeout``."""
    deadline = time.monotonic() + timeout
    idle_since: float | None = None
    while not managed.backend.problem():
        now = time.monotonic()
        if managed.backend.running_jobs():
            idle_since = None
        elif idle_since is None:
            idle_since = now
        if idle_since is not None and now - idle_since >= quiet:
            return
        if now >= deadline:
            log.warning("jobs of session %r still run; releasing it anyway", managed.name)
            return
        time.sleep(0.05)


def cancel_everything(managed: Releasable) -> None:
    # The kernel is going away: also the RDD jobs of the session's cells.
    managed.backend.cancel_session()
    managed.backend.cancel_tag(job_tags.session_tag(managed.name))


def release_at_shutdown(managed: Releasable, deadline: float) -> None:
    def release(m: Releasable) -> None:
        wait_for_jobs_to_end(m, max(0.0, deadline - time.monotonic()))
        m.backend.release(quick=True)

    quietly(managed, "releasing", release)


def quietly(managed: Releasable, what: str, action: Callable[[Releasable], None]) -> None:
    try:
        action(managed)
    except Exception:
        log.warning("%s Spark session %r at shutdown failed", what, managed.name, exc_info=True)


def release_quietly(backend: SessionBackend) -> None:
    try:
        backend.release(quick=True)
    except Exception:  # a lost server: nothing is left to release there
        log.debug("releasing a replaced session failed", exc_info=True)
