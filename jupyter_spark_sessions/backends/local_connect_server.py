"""The local Spark Connect server ``--remote local`` starts: a child process on
localhost with a random token, started on first use, again if it died, and stopped when
the kernel's process exits (after the Connect clients on it said goodbye).
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..config import SparkSessionsConfig
from ..errors import ConnectError
from ..session_root import open_private
from . import connect, driver_jar, java_tmpdir, scheduler_pools
from .connect_endpoint import LOCAL, SHARED, Endpoint, parse_remote, reachable
from .java_runtime import require_java
from .jvm_reaper import reap_when_it_exits
from .local_master import (
    UI_SECRET_CONF,
    authenticate_defaults,
    local_master_defaults,
    local_master_env,
    python_daemon_defaults,
    tasks_run_in_driver,
    ui_protection,
    write_ui_secret,
)

if TYPE_CHECKING:
    pass


_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: Stops the Python worker daemon of each session that ended (Spark keeps one per
#: session that ran Python, for the server's life): java/jss/EndedSessionDaemons.java.
ENDED_SESSION_DAEMONS = "jss.EndedSessionDaemons"
#: The server's stdout and stderr, in its folder.
SERVER_LOG = "connect-server.log"


#: Settings of a local server this project starts (the user's ``connect_conf`` wins):
#: progress reports often enough for the job board, killed tasks' Python workers
#: stopped at once, FAIR scheduling between its sessions' pools (as for a classic
#: context this project starts).
LOCAL_SERVER_DEFAULTS = {
    scheduler_pools.MODE: "FAIR",
    "spark.connect.progress.reportInterval": "250ms",
    "spark.python.task.killTimeout": "0s",
    "spark.ui.showConsoleProgress": "false",
    "spark.ui.killEnabled": "false",  # as for a classic context (see context_start.py)
}


class LocalConnectServer:
    """A Spark Connect server in a child process, on localhost, with a random token.

    It listens on 127.0.0.1 only and refuses clients without the token, which only
    this kernel knows (passed in the environment, not on the command line)."""

    def __init__(
        self,
        master: str,
        conf: Mapping[str, str],
        log_dir: Path,
        start_timeout: float,
        port: int | None = None,
        token: str | None = None,
        publishes_ui_secret: bool = False,
        dies_with_parent: bool = True,
    ) -> None:
        self.master = master
        #: False for the shared server: it outlives its keeper (``jss.KeeperWatch``).
        self._dies_with_parent = dies_with_parent
        #: The owner hands the UI's secret to Jupyter servers itself (the shared server's
        #: record); else it is written beside this kernel's connection file.
        self._publishes_ui_secret = publishes_ui_secret
        self._port = port  # None: a free one at each start
        scratch = str(log_dir / ".connect-scratch")
        self._java_tmp_dir = log_dir / ".connect-java-tmp"
        self._conf = driver_jar.with_driver_listener(
            {
                **LOCAL_SERVER_DEFAULTS,
                **local_master_defaults(master, scratch),
                **python_daemon_defaults(master),
                **authenticate_defaults(master),  # its driver's RPC and block manager too
                **conf,
            },
            ENDED_SESSION_DAEMONS,
        )
        self._log_path = log_dir / SERVER_LOG
        self._start_timeout = start_timeout
        self._token = token or secrets.token_hex(24)
        self._process: subprocess.Popen[bytes] | None = None
        self.endpoint: Endpoint | None = None
        #: The secret its UI wants (``UiSecretFilter``): "" when the UI is not filtered.
        self.ui_secret = ""

    @property
    def schedules_fair(self) -> bool:
        """Whether the server schedules FAIR between pools (its default here)."""
        return str(self._conf.get(scheduler_pools.MODE, "FIFO")).upper() == "FAIR"

    def start(self) -> Endpoint:
        """Start the server and wait until it accepts connections. Ports this chooses
        are free when chosen, not when the JVM binds them seconds later: if another
        process took one in between, start again on new ones (a few times)."""
        for _ in range(PORT_ATTEMPTS):
            endpoint = self._start_once()
            if endpoint is not None:
                return endpoint
        raise ConnectError(
            f"The local Spark Connect server could not get a free port: {PORT_ATTEMPTS} "
            f"times another process took one chosen for it (log: {self._log_path})."
        )

    def _start_once(self) -> Endpoint | None:
        """The started server's endpoint; None when a port chosen for it was taken."""
        import pyspark

        spark_home = os.path.dirname(pyspark.__file__)
        port = self._port or _free_port()
        conf = {
            **self._conf,
            "spark.connect.grpc.binding.address": "localhost",
            "spark.connect.grpc.binding.port": str(port),
        }
        # The UI on a port chosen here, so that the views can link it (through the
        # Jupyter server: magics/spark_ui.py); the user's own port wins.
        ui_url = ""
        chosen_ui_port = 0  # a port of the user's is left to Spark's own rules
        if conf.get("spark.ui.enabled", "true").lower() != "false":
            ui_port = int(conf.get("spark.ui.port", "0") or 0)
            if not ui_port:
                ui_port = chosen_ui_port = _free_port()
            conf["spark.ui.port"] = str(ui_port)
            ui_url = f"http://127.0.0.1:{ui_port}"
        # Its UI answers only this kernel's Jupyter server, as a classic context's does.
        protection = {}
        if ui_url:
            protection = ui_protection(self.master, conf, self._publishes_ui_secret)
        secret = protection.pop(UI_SECRET_CONF, "")
        conf.update(protection)
        command = [os.path.join(spark_home, "bin", "spark-submit"), "--class", _SERVER_CLASS]
        command += ["--master", self.master, "--name", "jupyter_spark_sessions Connect"]
        if secret:  # in a private file: the command line is every local user's to read
            command += ["--properties-file", str(self._secret_properties(secret))]
            command += ["--load-spark-defaults"]  # which --properties-file would skip
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        submit_opts = os.environ.get("SPARK_SUBMIT_OPTS", "")
        tmp_option = java_tmpdir.tmpdir_option(self._java_tmp_dir, conf)
        env = {
            **os.environ,
            "SPARK_SUBMIT_OPTS": java_tmpdir.with_option(submit_opts, tmp_option),
            "SPARK_HOME": spark_home,
            "SPARK_CONNECT_AUTHENTICATE_TOKEN": self._token,
            **driver_jar.class_path_env(os.environ),  # its listeners and UI filter
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
                preexec_fn=_die_with_parent_hook() if self._dies_with_parent else None,
            )
        # Reaped the moment it exits, however it ends (killed, crashed): a zombie would
        # hold the kernel's shutdown for ipykernel's 30 s of re-signalling.
        reap_when_it_exits(self._process)
        endpoint = Endpoint(
            f"sc://localhost:{port}/;token={self._token}",
            "localhost",
            port,
            ui_url,
            ui_protected=bool(secret),
            ui_secret=secret,
            local=True,
            tasks_in_server=tasks_run_in_driver(self.master),
        )
        chosen_port = 0 if self._port else port
        if not self._wait_until_it_listens(endpoint, chosen_port, chosen_ui_port):
            return None
        if secret and not self._publishes_ui_secret:
            write_ui_secret(ui_url, secret)  # the UI is up before the gRPC port: readable now
        self.ui_secret = secret
        self.endpoint = endpoint
        return endpoint

    def _wait_until_it_listens(
        self, endpoint: Endpoint, chosen_port: int, chosen_ui_port: int
    ) -> bool:
        """Until the server's own process listens on the endpoint's port: not merely
        something (another process may have taken the port since it was chosen). False
        when a port picked here (``chosen_port``, ``chosen_ui_port``; 0: the user's) was
        taken: the server is to start on new ones."""
        assert self._process is not None
        port = endpoint.port
        deadline = time.monotonic() + self._start_timeout
        while True:
            listening = listening_ports(self._process.pid)
            if listening is None:  # the system does not say: whatever answers there
                why_not = reachable(endpoint, 0.5)  # "" when something answers
                listening = set() if why_not else {port, chosen_ui_port}
            if port in listening:
                break
            if self._process.poll() is not None:
                if chosen_port and port_was_taken(self._log_path):
                    return False
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
        # Spark's UI moves to the next port when its own is taken (it started before
        # the gRPC port): the views would link another process.
        if chosen_ui_port and chosen_ui_port not in listening:
            self.stop()
            return False
        return True

    def _secret_properties(self, secret: str) -> Path:
        """A properties file (mode 0600, in the kernel's private folder) handing the
        UI filter its secret."""
        path = self._log_path.parent / "connect-server-ui.properties"
        with open_private(path) as out:
            out.write(f"{UI_SECRET_CONF}={secret}\n".encode())
        return path

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """How the server's process ended (negative: the signal); None while it runs."""
        return self._process.poll() if self._process is not None else None

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


#: Starts on new ports before giving up, when a chosen port was taken meanwhile.
PORT_ATTEMPTS = 3


def listening_ports(pid: int) -> set[int] | None:
    """The TCP ports process ``pid`` listens on (empty once it is gone); None where the
    system does not tell (access denied)."""
    import psutil  # type: ignore[import-untyped]

    try:
        process = psutil.Process(pid)
        # psutil 6 renamed connections() to net_connections().
        list_connections = getattr(process, "net_connections", None) or process.connections
        connections = list_connections(kind="tcp")
    except psutil.AccessDenied:
        return None
    except psutil.Error:
        return set()
    return {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN}


def port_was_taken(log: Path) -> bool:
    """Whether the server's log says it could not bind a port (Spark's BindException:
    "Failed to bind to address ...")."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return False
    return "java.net.BindException" in text


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
    last = (errors or lines or ["(empty log)"])[-1].strip()
    # What Java's uncaught exception says, without its thread and class.
    return _JAVA_EXCEPTION_PREFIX.sub("", last)[:300]


_JAVA_EXCEPTION_PREFIX = re.compile(r'^Exception in thread "[^"]*" [\w.$]+(Exception|Error): ')


class SharedDriverMembership(Protocol):
    """This kernel's membership of its user's shared Spark driver: what
    ``shared_driver.membership.SharedDriverMembership`` does, seen from ``backends`` (which
    does not import it: the imports go one way)."""

    def endpoint(self, progress: Callable[[str], None]) -> Endpoint: ...

    def pool_name(self, session: str) -> str: ...

    def hold(self, name: str, session_id: str, user_id: str, pool: str) -> None: ...

    def drop(self, name: str, session_id: str) -> None: ...

    def leave(self) -> None: ...


class ConnectEndpoints:
    """Where ``--remote`` sessions go, and making them there: the server a URL names,
    for ``local`` the server this kernel starts (on first use, and again if it died: on
    another port), for ``shared`` the server of this user's notebooks."""

    def __init__(
        self, config: SparkSessionsConfig, shared: SharedDriverMembership | None = None
    ) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._local: LocalConnectServer | None = None
        self.shared = shared

    def resolve(self, remote: str, progress: Callable[[str], None] = print) -> Endpoint:
        """The endpoint of ``--remote REMOTE`` (ConnectError when it is not one)."""
        if remote == SHARED:
            if self.shared is None:
                raise ConnectError("No shared Spark driver is configured in this process.")
            return self.shared.endpoint(progress)
        if remote != LOCAL:
            return parse_remote(remote)
        with self._lock:
            server = self._local
            if server is not None and server.alive and server.endpoint is not None:
                return server.endpoint
            require_java()
            server = LocalConnectServer(
                self.config.connect_master,
                self.config.connect_conf,
                Path(self.config.resolved_session_root()),
                self.config.connect_start_timeout,
            )
            endpoint = server.start()
            # Stopped when the process exits, after the Connect clients made on it (atexit
            # runs the last registered first): at exit PySpark's client says goodbye to its
            # server and retries for minutes when it is gone, which held the kernel's
            # shutdown until the kernel manager killed it.
            atexit.register(server.stop, 1.0)
            self._local = server
            return endpoint

    def create_session(
        self,
        remote: str,
        name: str,
        settings: Mapping[str, str],
        progress: Callable[[str], None] = print,
    ) -> connect.ConnectBackend:
        """A new Connect session ``name`` on the server ``--remote REMOTE`` names. On
        the local and the shared server (FAIR by default) it runs its jobs in a pool of
        its own, named after it (Spark makes it on first use, with weight 1), unless
        ``settings`` name one; a remote server's scheduling is its owner's."""
        endpoint = self.resolve(remote, progress)
        server = self._local
        own_pool = ""
        if remote == LOCAL and server is not None and server.schedules_fair:
            own_pool = name
        elif remote == SHARED and self.shared is not None:
            own_pool = self.shared.pool_name(name)
        if own_pool and scheduler_pools.POOL not in settings:
            settings = {**settings, scheduler_pools.POOL: own_pool}
        backend = connect.create(
            endpoint,
            name,
            settings,
            self.config.connect_retry_seconds,
            self.config.idle_poll_interval,
        )
        if remote == SHARED and self.shared is not None:
            session = backend.session
            pool = str(settings.get(scheduler_pools.POOL, ""))
            self.shared.hold(
                name, connect.session_id(session), connect.client_user_id(session), pool
            )
        return backend

    def released(self, name: str, session_id: str) -> None:
        """Session ``name`` (``session_id``) was released: the shared server no longer
        holds it for us."""
        if self.shared is not None:
            self.shared.drop(name, session_id)

    @property
    def local_server(self) -> LocalConnectServer | None:
        """The server ``--remote local`` started, if any."""
        return self._local

    def stop_local_server(self, timeout: float) -> None:
        """Stop the local server now, if one was started."""
        server, self._local = self._local, None
        if server is not None:
            server.stop(timeout=timeout)

    def at_shutdown(self) -> None:
        """Kernel shutdown: leave the shared server (this kernel's sessions there were
        released already). The local server stops at the process's exit (``resolve``),
        once every client on it has said goodbye."""
        if self.shared is not None:
            self.shared.leave()
