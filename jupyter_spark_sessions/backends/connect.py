"""Spark Connect sessions: the local server this project may start, opening and
releasing sessions, tags and interrupts, artifacts, and operation progress.

Everything that touches the Connect client goes through here; the client's retry
policy and progress hooks are not documented API, so ``tests/test_private_apis.py``
calls each wrapper against the installed PySpark.

Unlike classic mode, Connect isolates sessions upstream (SPARK-44290): each session has
its own artifacts on the server, and ``interruptTag`` cancels operations whatever client
thread started them.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import ConnectError, NotASparkSessionError
from ..session_root import open_private
from .classic import local_master_defaults, local_master_env

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

#: ``--remote local``: a server this project starts (and stops at kernel shutdown).
LOCAL = "local"

_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

#: Settings of a local server this project starts (the user's ``connect_conf`` wins):
#: progress reports often enough for the job board, killed tasks' Python workers
#: stopped at once (as for a classic context this project starts).
LOCAL_SERVER_DEFAULTS = {
    "spark.connect.progress.reportInterval": "250ms",
    "spark.python.task.killTimeout": "0s",
    "spark.ui.showConsoleProgress": "false",
    "spark.ui.killEnabled": "false",  # as for a classic context (see classic.py)
}


def is_connect_session(obj: object) -> bool:
    """True for a Spark Connect SparkSession."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # pragma: no cover - pyspark[connect] is a dependency
        return False
    return isinstance(obj, ConnectSession)


def require_session(obj: Any, what: str) -> ConnectSession:
    """Return ``obj`` as a Connect SparkSession, or raise NotASparkSessionError."""
    if not is_connect_session(obj):
        kind = type(obj).__module__ + "." + type(obj).__qualname__
        raise NotASparkSessionError(f"{what} is a {kind}, not a Spark Connect SparkSession.")
    session: ConnectSession = obj
    return session


# -- addresses ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """Where a Connect server listens; ``url`` may carry a token, ``display`` never does."""

    url: str
    host: str
    port: int

    @property
    def display(self) -> str:
        return f"sc://{self.host}:{self.port}"


def parse_remote(url: str) -> Endpoint:
    """Check an ``sc://host:port[/;param=value...]`` URL; ConnectError when it is not one."""
    parts = urlsplit(url)
    if parts.scheme != "sc" or not parts.hostname:
        raise ConnectError(
            f"--remote takes sc://HOST:PORT (or 'local' for a server started here), "
            f"not {redact(url)!r}."
        )
    try:
        port = parts.port or 15002
    except ValueError:
        raise ConnectError(f"Invalid port in --remote {redact(url)!r}.") from None
    return Endpoint(url=url, host=parts.hostname, port=port)


def redact(url: str) -> str:
    """``url`` without parameters (a token must never reach output or logs)."""
    return url.split(";", 1)[0].rstrip("/")


def reachable(endpoint: Endpoint, timeout: float = 1.0) -> str:
    """ "" when something accepts TCP connections at the endpoint, else why not."""
    try:
        socket.create_connection((endpoint.host, endpoint.port), timeout).close()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return ""


# -- the local server ---------------------------------------------------------------------


class LocalConnectServer:
    """A Spark Connect server in a child process, on localhost, with a random token.

    It listens on 127.0.0.1 only and refuses clients without the token, which only
    this kernel knows (passed in the environment, not on the command line)."""

    def __init__(
        self, master: str, conf: Mapping[str, str], log_dir: Path, start_timeout: float
    ) -> None:
        self.master = master
        scratch = str(log_dir / ".connect-scratch")
        self._conf = {**LOCAL_SERVER_DEFAULTS, **local_master_defaults(master, scratch), **conf}
        self._log_path = log_dir / "connect-server.log"
        self._start_timeout = start_timeout
        self._token = secrets.token_hex(24)
        self._process: subprocess.Popen[bytes] | None = None
        self.endpoint: Endpoint | None = None

    def start(self) -> Endpoint:
        """Start the server and wait until it accepts connections."""
        import pyspark

        spark_home = os.path.dirname(pyspark.__file__)
        port = _free_port()
        conf = {
            **self._conf,
            "spark.connect.grpc.binding.address": "localhost",
            "spark.connect.grpc.binding.port": str(port),
        }
        command = [os.path.join(spark_home, "bin", "spark-submit"), "--class", _SERVER_CLASS]
        command += ["--master", self.master, "--name", "jupyter_spark_sessions Connect"]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        env = {
            **os.environ,
            "SPARK_HOME": spark_home,
            "SPARK_CONNECT_AUTHENTICATE_TOKEN": self._token,
            **local_master_env(self.master),  # its UI on loopback too
            # The server's Python workers run UDFs: use this interpreter (pyarrow, the
            # user's packages), unless the user chose one.
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        }
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        with open_private(self._log_path) as log_file:  # in the kernel's folder: no link
            self._process = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # an Interrupt of the kernel must not reach it
                preexec_fn=_die_with_parent_hook(),
            )
        endpoint = Endpoint(f"sc://localhost:{port}/;token={self._token}", "localhost", port)
        deadline = time.monotonic() + self._start_timeout
        while reachable(endpoint, 0.5):
            if self._process.poll() is not None:
                raise ConnectError(
                    f"The local Spark Connect server exited (code {self._process.returncode})"
                    f" while starting: {_last_line(self._log_path)} (log: {self._log_path})."
                )
            if time.monotonic() > deadline:
                self.stop()
                raise ConnectError(
                    f"The local Spark Connect server did not listen within "
                    f"{self._start_timeout:.0f} s (log: {self._log_path})."
                )
            time.sleep(0.2)
        self.endpoint = endpoint
        return endpoint

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A pre-exec hook (Linux) giving the server SIGTERM when the kernel dies, even
    when killed outright (its own process group keeps it out of the kernel's group
    signals otherwise). libc is loaded here, in the parent: the child of a threaded
    process must not import anything between fork and exec."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    errors = [line for line in lines if "Exception" in line or "Error" in line]
    return (errors or lines or ["(empty log)"])[-1].strip()[:300]


# -- sessions -----------------------------------------------------------------------------


def open_session(endpoint: Endpoint, retry_seconds: float) -> ConnectSession:
    """A new Connect session on the server at ``endpoint``, checked to answer.

    The client's default retry policy waits up to 10 minutes for a server that does
    not answer; ``retry_seconds`` bounds it, so a dead server is an error, not a hang."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    why = reachable(endpoint)
    if why:
        raise ConnectError(f"No Spark Connect server answers at {endpoint.display}: {why}.")
    session = ConnectSession.builder.remote(endpoint.url).create()
    bound_retries(session, retry_seconds)
    try:
        _ = session.version  # one round trip: is it a Connect server, is the token right?
    except Exception as exc:
        release(session)
        raise ConnectError(
            f"The Spark Connect server at {endpoint.display} refused the session: {error_line(exc)}"
        ) from None
    return session


def bound_retries(session: ConnectSession, seconds: float) -> None:
    """Give up on an unreachable server after about ``seconds`` of retries."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    # Backoffs 50, 200, 800 ms, ... capped at a quarter of the budget.
    policy = DefaultPolicy(
        max_retries=max(1, int(seconds // max(0.2, seconds / 4)) + 3),
        max_backoff=int(seconds * 250),
        max_server_retry_delay=int(seconds * 1000),
    )
    session.client.set_retry_policies([policy])


def session_endpoint(session: ConnectSession) -> Endpoint:
    """Where an (adopted) session's server is."""
    builder: Any = session.client._builder  # private: the client's connection settings
    host = str(builder.host).strip("[]")
    port = int(builder._port)  # private
    return Endpoint(url=f"sc://{host}:{port}", host=host, port=port)


def session_id(session: ConnectSession) -> str:
    return str(session.session_id)


def is_stopped(session: ConnectSession) -> bool:
    return bool(session.is_stopped)


def release(session: ConnectSession) -> None:
    """Release the session on the server and close its channel (best effort: the
    server may be gone). Other sessions on the same server are untouched."""
    session.stop()


def add_tags(session: ConnectSession, tags: Iterable[str]) -> None:
    """Tag the operations the current thread starts in ``session``."""
    for tag in tags:
        session.addTag(tag)


def remove_tags(session: ConnectSession, tags: Iterable[str]) -> None:
    for tag in tags:
        session.removeTag(tag)


def current_tags(session: ConnectSession) -> set[str]:
    """The tags of the current thread in ``session``."""
    return set(session.getTags())


def interrupt(session: ConnectSession, tags: Iterable[str] | None) -> list[str]:
    """Interrupt the operations carrying any of ``tags`` (None: all the session's);
    returns the ids of the operations the server interrupted."""
    if tags is None:
        return list(session.interruptAll())
    interrupted: list[str] = []
    for tag in tags:
        interrupted += session.interruptTag(tag)
    return interrupted


def add_artifact(
    session: ConnectSession, remote_path: str, staged: Path, fragment: str | None
) -> None:
    """Upload a staged file as the session's artifact ``remote_path`` (``files/<name>``,
    ``archives/<name>`` unpacked into ``<fragment>/``, or ``pyfiles/<name>``).

    The upload takes its name from the local file, so the staged file is linked under
    that name in a private temporary folder first."""
    kind, _, name = remote_path.partition("/")
    with tempfile.TemporaryDirectory(dir=staged.parent, prefix=".jss-upload-") as folder:
        named = Path(folder) / name
        try:
            os.link(staged, named)
        except OSError:
            shutil.copyfile(staged, named)
        target = str(named) + (f"#{fragment}" if fragment else "")
        before = list(sys.path)
        try:
            session.addArtifacts(
                target, file=kind == "files", archive=kind == "archives", pyfile=kind == "pyfiles"
            )
        finally:
            # The client puts an added .zip/.egg on this kernel's sys.path too: that
            # would be global and point at a temporary file.
            sys.path[:] = before


def register_progress(
    session: ConnectSession,
    on_progress: Callable[[str, set[str], list[tuple[int, int, int, bool]], int, bool], None],
) -> Any:
    """Call ``on_progress(operation_id, thread_tags, stages, inflight_tasks, done)`` for
    every progress report of the session's operations, in the thread running them.
    ``stages`` are (stage id, tasks, completed tasks, done). Returns the handler."""
    from pyspark.sql.connect.shell.progress import ProgressHandler

    class _Handler(ProgressHandler):
        def __call__(
            self,
            stages: Iterable[Any] | None,
            inflight_tasks: int,
            operation_id: str | None,
            done: bool,
        ) -> None:
            if operation_id is None:
                return
            rows = [
                (int(s.stage_id), int(s.num_tasks), int(s.num_completed_tasks), bool(s.done))
                for s in stages or ()
            ]
            on_progress(operation_id, current_tags(session), rows, int(inflight_tasks), done)

    handler = _Handler()
    session.registerProgressHandler(handler)
    return handler


def unregister_progress(session: ConnectSession, handler: Any) -> None:
    """Stop reporting the session's progress (``handler`` from ``register_progress``)."""
    if handler is not None:
        session.removeProgressHandler(handler)


def operation_error() -> BaseException | None:
    """Inside the final progress report of an operation: the error it ends with.

    The client sends that report while leaving its ``with Progress(...)`` block, and
    Python exposes the exception leaving a ``with`` block to its ``__exit__``."""
    return sys.exc_info()[1]


def is_cancellation(error: BaseException | None) -> bool:
    """True for the errors Spark reports for an interrupted operation."""
    text = str(error or "")
    return "OPERATION_CANCELED" in text or "SPARK_JOB_CANCELLED" in text


def is_lost_session(error: BaseException | None) -> bool:
    """True when the server no longer knows the session (it restarted, or released it)."""
    text = str(error or "")
    return "INVALID_HANDLE" in text or "SESSION_CHANGED" in text or "SESSION_CLOSED" in text


def is_connection_error(error: BaseException | None) -> bool:
    """True for errors that mean the server could not be reached."""
    text = str(error or "")
    return any(
        mark in text
        for mark in (
            "StatusCode.UNAVAILABLE",
            "Connection refused",
            "failed to connect",
            "Socket closed",
        )
    )


def error_line(error: BaseException) -> str:
    """The first meaningful line of a client error (no gRPC debug strings)."""
    for line in str(error).splitlines():
        line = line.strip()
        if line and not line.startswith("<_") and "debug_error_string" not in line:
            return redact(line)[:300] if line.startswith("sc://") else line[:300]
    return type(error).__name__


def interrupt_in_background(
    session: ConnectSession,
    tags: Iterable[str] | None,
    on_done: Callable[[list[str], BaseException | None], None],
) -> threading.Thread:
    """``interrupt`` on its own thread: a slow or dead server must not stall the caller
    (the job board's producer)."""
    tags = None if tags is None else list(tags)

    def run() -> None:
        try:
            on_done(interrupt(session, tags), None)
        except Exception as exc:
            on_done([], exc)

    thread = threading.Thread(target=run, name="jss-connect-interrupt", daemon=True)
    thread.start()
    return thread
