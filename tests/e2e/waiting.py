"""Waiting for the servers the tests start (JupyterLab, Notebook 7, the Kernel Gateway,
``jupyter server``) and stopping them: one loop for all."""

from __future__ import annotations

import http.client
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, Protocol, TypeVar


def wait_until(condition: Callable[[], bool], timeout: float, interval: float) -> bool:
    """Call ``condition`` every ``interval`` seconds until it is true (True), or until
    ``timeout`` seconds have passed (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def wait_for_server(
    process: subprocess.Popen[Any],
    answers: Callable[[], bool],
    name: str,
    log: object,
    timeout: float,
    interval: float,
) -> None:
    """Wait until the server ``process`` answers (``answers()`` is true; an OSError,
    such as a refused connection, counts as not yet). RuntimeError if it exits first,
    TimeoutError if it does not answer within ``timeout`` s; both name ``log``."""

    def up() -> bool:
        if process.poll() is not None:
            if "is not available" in _text_of(log):
                raise PortTakenError(f"{name} lost its port to another process: see {log}")
            raise RuntimeError(f"{name} exited: see {log}")
        try:
            return answers()
        except (OSError, http.client.HTTPException):
            # Not up yet, or (before it gave up) another process that took its port.
            return False

    if not wait_until(up, timeout, interval):
        raise TimeoutError(f"{name} did not start: see {log}")


class PortTakenError(RuntimeError):
    """A Jupyter server started with ``--ServerApp.port_retries=0`` found its port
    taken: another process (a Spark JVM binds ephemeral ports) got it between
    ``free_port()`` and the server's start."""


#: Jupyter servers exit when their port is taken rather than move to another one,
#: which the test would not know: it would talk to whatever took the port.
NO_PORT_RETRIES = "--ServerApp.port_retries=0"


def start_on_a_free_port(start: Callable[[], None], tries: int = 3) -> None:
    """Call ``start`` (which picks a free port and waits for its server) again when
    its server lost that port to another process, up to ``tries`` times."""
    for attempt in range(tries):
        try:
            start()
            return
        except PortTakenError:
            if attempt == tries - 1:
                raise


def _text_of(log: object) -> str:
    # ``log``: a path, or the file object a server writes (its ``name``).
    path = log if isinstance(log, str | os.PathLike) else getattr(log, "name", "")
    try:
        with open(path, errors="replace") as file:
            return file.read()
    except OSError:
        return ""


def stop_process(process: subprocess.Popen[Any], log: IO[str]) -> None:
    """Terminate a server ``process`` (killed if it has not exited within 30 s), then
    close the ``log`` it writes to."""
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


class Stoppable(Protocol):
    def stop(self) -> None: ...


S = TypeVar("S", bound=Stoppable)


@contextmanager
def running(server: S) -> Iterator[S]:
    """``server`` (started), stopped when the block ends: a fixture's
    ``with running(Server(...)) as server: yield server``."""
    try:
        yield server
    finally:
        server.stop()
