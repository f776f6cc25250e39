"""Drive a real IPython kernel over the Jupyter protocol (jupyter_client), as a frontend
would: start it, execute cells, collect what they print and raise."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.manager import KernelManager

KERNEL_NAME = "jss-test-python"


@dataclass
class CellResult:
    """What one executed cell produced."""

    status: str = ""
    execution_count: int | None = None  # as the frontend shows it: In [N]
    stdout: str = ""
    stderr: str = ""
    error_name: str = ""
    error_value: str = ""
    traceback: list[str] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    payload: list[dict[str, Any]] = field(default_factory=list)
    #: display_data and update_display_data messages: (msg_type, content), in order.
    displays: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def usage_error(self) -> str:
        """The message of a UsageError the cell raised (IPython prints those to stderr,
        without a traceback), or ''."""
        lines = [ln for ln in self.stderr.splitlines() if ln.startswith("UsageError: ")]
        return lines[-1][len("UsageError: ") :] if lines else ""

    @property
    def result_text(self) -> str:
        """The text/plain of the cell's execute_result, if any."""
        return "".join(r.get("text/plain", "") for r in self.results)


def _write_kernelspec(root: Path) -> None:
    # A kernelspec that runs this very interpreter, whatever other specs the machine has.
    spec_dir = root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "jupyter_spark_sessions tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))


class Kernel:
    """One running kernel and a blocking client to it."""

    def __init__(
        self,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        drop_env: tuple[str, ...] = (),
        server_log: Path | None = None,
    ) -> None:
        """``server_log``: run the kernel as a Jupyter server does, its own stderr (what
        the server logs) going to that file, and what its child processes (the JVM)
        write to its stderr shown in the running cell.

        Without it the kernel shows only what Python writes: ipykernel forwards the
        file descriptors 1 and 2 into cells only when ``PYTEST_CURRENT_TEST`` is not set
        (``OutStream`` in ipykernel/iostream.py), and a kernel started from a test
        inherits it."""
        self._spec_root = Path(tempfile.mkdtemp(prefix="jss-kernelspec-"))
        _write_kernelspec(self._spec_root)
        os.environ["JUPYTER_PATH"] = str(self._spec_root)
        self.manager = KernelManager(kernel_name=KERNEL_NAME)
        kernel_env = dict(os.environ)
        kernel_env.setdefault("PYSPARK_PYTHON", sys.executable)
        kernel_env.update(env or {})
        for name in drop_env:
            kernel_env.pop(name, None)
        if server_log is None:
            self.manager.start_kernel(env=kernel_env, cwd=cwd)
        else:
            kernel_env.pop("PYTEST_CURRENT_TEST", None)
            with open(server_log, "ab") as log:  # the kernel keeps its own copy
                self.manager.start_kernel(env=kernel_env, cwd=cwd, stderr=log)
        self.client = self.manager.blocking_client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        #: Every IOPub message seen so far (comm traffic from background threads too).
        self.iopub_log: list[dict[str, Any]] = []
        self.shutdown_seconds = 0.0
        self.exit_code: int | None = None

    @classmethod
    def attach(cls, connection_file: str) -> Kernel:
        """A client to a kernel somebody else started (a Jupyter server's); ``close``
        disconnects and leaves the kernel running."""
        kernel = cls.__new__(cls)
        kernel.manager = None
        deadline = time.monotonic() + 60
        while True:
            kernel.client = BlockingKernelClient()
            kernel.client.load_connection_file(connection_file)
            kernel.client.start_channels()
            try:
                kernel.client.wait_for_ready(timeout=max(1.0, deadline - time.monotonic()))
                break
            except RuntimeError:
                # A kernel still starting has not sent its first heartbeat, which the
                # client takes for a dead one: try again until it answers.
                kernel.client.stop_channels()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        kernel.iopub_log = []
        kernel.shutdown_seconds = 0.0
        kernel.exit_code = None
        return kernel

    def close(self) -> None:
        """Disconnect without shutting the kernel down."""
        self.client.stop_channels()

    def execute(self, code: str, timeout: float = 300) -> CellResult:
        """Run one cell and wait until the kernel is idle again."""
        msg_id = self.client.execute(code)
        return self.collect(msg_id, timeout)

    def collect(self, msg_id: str, timeout: float = 300) -> CellResult:
        """Gather the outputs of an already sent execute_request."""
        result = CellResult()
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"cell did not finish within {timeout} s")
            try:
                msg = self.client.get_iopub_msg(timeout=remaining)
            except Empty:
                continue
            self.iopub_log.append(msg)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                if content["name"] == "stdout":
                    result.stdout += content["text"]
                else:
                    result.stderr += content["text"]
            elif kind == "error":
                result.error_name = content["ename"]
                result.error_value = content["evalue"]
                result.traceback = content["traceback"]
            elif kind == "execute_result":
                result.results.append(content["data"])
            elif kind in ("display_data", "update_display_data"):
                result.displays.append((kind, content))
            elif kind == "status" and content["execution_state"] == "idle":
                break
        reply = self.client.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.client.get_shell_msg(timeout=30)
        result.status = reply["content"]["status"]
        result.execution_count = reply["content"].get("execution_count")
        result.payload = reply["content"].get("payload", [])
        return result

    def ok(self, code: str, timeout: float = 300) -> CellResult:
        """Run a cell that must succeed; fail the test with its traceback if not."""
        result = self.execute(code, timeout)
        if result.status != "ok":
            raise AssertionError(
                f"cell failed: {result.error_name}: {result.error_value}\n"
                + "\n".join(result.traceback)
                # A UsageError (our one-line errors) is printed to stderr, with no traceback.
                + (f"\nstderr: {result.stderr}" if result.stderr else "")
            )
        return result

    def value(self, expression: str) -> Any:
        """Evaluate an expression in the kernel and return its value, through JSON."""
        out = self.ok(f"import json as _json; print(_json.dumps({expression}))").stdout
        return json.loads(out.strip().splitlines()[-1])

    def wait_for_iopub(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> dict[str, Any]:
        """The first IOPub message (already seen, or arriving within ``timeout``) that
        satisfies ``predicate``."""
        for msg in self.iopub_log:
            if predicate(msg):
                return msg
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                msg = self.client.get_iopub_msg(timeout=remaining)
            except Empty:
                break
            self.iopub_log.append(msg)
            if predicate(msg):
                return msg
        raise TimeoutError(f"no matching IOPub message within {timeout} s")

    def control(self, msg_type: str, content: Any, timeout: float = 10) -> dict[str, Any]:
        """Send a message on the control channel and return its reply message."""
        msg = self.client.session.msg(msg_type, content)
        self.client.control_channel.send(msg)
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            reply: dict[str, Any] = self.client.control_channel.get_msg(timeout=remaining)
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply
        raise TimeoutError(f"no {msg_type} reply within {timeout} s")

    def create_subshell(self) -> str:
        """A new kernel subshell (as JupyterLab >= 4.4 makes for comms); its id."""
        reply = self.control("create_subshell_request", {})
        subshell_id: str = reply["content"]["subshell_id"]
        return subshell_id

    def send_shell(self, msg_type: str, content: dict[str, Any], subshell_id: str = "") -> str:
        """Send a shell message (on a subshell if given) without waiting; its msg_id."""
        msg = self.client.session.msg(msg_type, content)
        if subshell_id:
            msg["header"]["subshell_id"] = subshell_id
        self.client.shell_channel.send(msg)
        msg_id: str = msg["header"]["msg_id"]
        return msg_id

    def shutdown(self) -> None:
        """Ask the kernel to shut down (running its exit hooks) and wait for it."""
        self.client.stop_channels()
        # jupyter_client kills a kernel 5 s after asking it to shut down; the lifecycle
        # tests' exit probes run a Spark job on top of the extension's own shutdown, which
        # a loaded CI machine can stretch past that. Tests judge what shutdown did;
        # how fast it is belongs to benchmarks.
        self.manager.shutdown_wait_time = 60
        process = getattr(self.manager.provisioner, "process", None)
        started = time.monotonic()
        self.manager.shutdown_kernel(now=False)
        self.shutdown_seconds = time.monotonic() - started
        # 0 when it exited by itself, negative when the kernel manager had to signal it
        # (SIGTERM at half its wait, then SIGKILL).
        self.exit_code = process.returncode if process is not None else None


def start_with_profile(
    ipython_dir: Path, config: str, cwd: Path, env: dict[str, str] | None = None, **options: Any
) -> Kernel:
    """A kernel whose IPython profile (``ipython_dir``/profile_default, made here) holds
    ``config``, with jupyter_spark_sessions loaded. ``env``: more environment variables
    for the kernel; ``options``: more arguments of ``Kernel`` (``drop_env``,
    ``server_log``)."""
    profile = ipython_dir / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text(config)
    kernel = Kernel(env={"IPYTHONDIR": str(ipython_dir), **(env or {})}, cwd=str(cwd), **options)
    kernel.ok("%load_ext jupyter_spark_sessions")
    return kernel


def assert_session_lost(result: CellResult, error_value: str) -> None:
    """The cell ended with a one-line ``SessionLostError`` that says ``error_value``."""
    assert result.error_name == "SessionLostError" and len(result.traceback) == 1, (
        f"{result.error_name}: {result.error_value[:300]}; traceback: {result.traceback}"
    )
    assert result.error_value == error_value, result.error_value


def assert_active(kernel: Kernel, ident: str, where: str, probe: str = "_active()") -> None:
    """Spark's active session, read both ways PySpark has (``getActiveSession()`` and
    ``active()``: test_connect_kernel's ACTIVE, whose ``_active()`` reads them now and
    whose result a cell may have kept in a variable, ``probe``), is session ``ident``."""
    assert kernel.value(probe) == [ident, ident], where


def assert_cancelled_in_one_line(
    result: CellResult,
    group_id: str,
    source: str = "",
    error_name: str = "JobsCancelled",
    jobs_may_be_unnamed: bool = False,
) -> None:
    """The cell ended with the one line a cancel gives (``cell_errors.cancel_story``):
    its group, the Spark jobs the cancel reached, and where it came from (an Interrupt
    ends the cell as ``KeyboardInterrupt``). ``jobs_may_be_unnamed``: the line may lack
    the jobs (a job cancelled as it started can end before the board hears of it)."""
    import re

    where = f" {source}" if source else ""
    jobs = r"( \(jobs? \d+(, \d+)*\))" + ("?" if jobs_may_be_unnamed else "")
    pattern = rf"The Spark jobs of {re.escape(group_id)}{jobs} were cancelled"
    assert result.status == "error" and result.error_name == error_name, (
        f"{result.error_name}: {result.error_value[:300]}"
    )
    assert re.fullmatch(pattern + re.escape(where) + r"\.", result.error_value), result.error_value
    assert len(result.traceback) == 1 and "\n" not in result.traceback[0], result.traceback
