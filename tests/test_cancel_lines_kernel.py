"""The line a cancelled cell ends with, for every way a cell is bound to a session and
every kind of cancel (docs/jobs.md, "How a cancelled cell ends"), through one real
kernel: one line naming the group, the jobs and where the cancel came from, never
Spark's ``Py4JJavaError`` and its Java stack.

Bindings: ``%spark_session use NAME`` before the cell; ``%%spark_session NAME`` (nothing
bound before); a variable holding session NAME used in a cell bound to another session;
a ``pyspark.InheritableThread`` started in a ``%%spark_session NAME`` cell, which the
cell joins. Requests, sent while the cell is busy: a group cancel and a session cancel
and a cancel of everything on the control channel (what the sidebar, the panel, the
in-cell view and the REST relay send), ``%spark_session stop NAME`` on a kernel
subshell, and the kernel's Interrupt."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jupyter_spark_sessions.protocol import CONTROL_REQUEST
from kernel_driver import CellResult, Kernel, assert_cancelled_in_one_line

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"

# Two tasks of 60 s each: far longer than a case waits; the cancel ends them.
JOB = "{spark}.range(0, 2, 1, 2).select(_sleepy('id')).collect()"

#: binding -> (the cell that prepares it, the busy cell); {name} is the session whose
#: job is cancelled, {other} a session the cell is bound to instead.
BINDINGS: dict[str, tuple[str, str]] = {
    "use": ("%spark_session use {name}", JOB.format(spark="spark")),
    "cell magic": (
        "globals().pop('spark', None)",
        "%%spark_session {name}\n" + JOB.format(spark="spark"),
    ),
    "variable": (
        "%spark_session use {other}\n" + f"{{name}}_s = {REGISTRY}.session('{{name}}')",
        JOB.format(spark="{name}_s"),
    ),
    "thread": (
        "globals().pop('spark', None)",
        "%%spark_session {name}\n"
        "from pyspark import InheritableThread\n"
        "_box = {{}}\n"
        "def _run():\n"
        "    try:\n"
        f"        {JOB.format(spark='spark')}\n"
        "    except BaseException as exc:\n"
        "        _box['error'] = exc\n"
        "_t = InheritableThread(target=_run)\n"
        "_t.start()\n"
        "_t.join()\n"
        "raise _box['error']\n",
    ),
}

#: request -> (the error's name, the words saying where the cancel came from)
REQUESTS: dict[str, tuple[str, str]] = {
    "group": ("JobsCancelled", "from the sidebar"),
    "session": ("JobsCancelled", "from the panel"),
    "all": ("JobsCancelled", "from the sidebar's Shared driver section or by a script"),
    "stop": ("JobsCancelled", "by `%spark_session stop`"),
    "interrupt": ("KeyboardInterrupt", "by the kernel's Interrupt"),
}


def control(kernel: Kernel, **content: Any) -> dict[str, Any]:
    reply = kernel.control(CONTROL_REQUEST, {"version": 1, **content})["content"]
    assert reply["status"] == "ok", reply
    return dict(reply)


def groups(kernel: Kernel) -> list[dict[str, Any]]:
    return list(control(kernel, action="list")["board"]["groups"])


def running_group(kernel: Kernel, session: str, timeout: float = 30) -> dict[str, Any]:
    """The group of ``session`` whose job the board shows running with a task running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for group in groups(kernel):
            if group["session"] == session and any(
                j["status"] == "RUNNING" and any(s["tasks"]["active"] for s in j["stages"])
                for j in group["jobs"]
            ):
                return group
        time.sleep(0.05)
    raise AssertionError(f"no running group of {session} within {timeout} s: {groups(kernel)}")


def wait_until_quiet(kernel: Kernel, timeout: float = 30) -> None:
    """No job running and no killed task still stopping: the next case has the slots."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(
            g["state"] != "running" and g["state"] != "cancelling" and not g["tasks_still_running"]
            for g in groups(kernel)
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"Spark still busy after {timeout} s: {groups(kernel)}")


def collect_with_reply(kernel: Kernel, msg_id: str) -> tuple[CellResult, dict[str, Any]]:
    """The busy cell's outputs, and its execute_reply's content (whose ename and evalue
    nbclient and other clients read)."""
    replies: list[dict[str, Any]] = []
    get_shell_msg = kernel.client.get_shell_msg

    def recording(*args: Any, **kwargs: Any) -> dict[str, Any]:
        reply: dict[str, Any] = get_shell_msg(*args, **kwargs)
        replies.append(reply)
        return reply

    kernel.client.get_shell_msg = recording  # type: ignore[method-assign]
    try:
        result = kernel.collect(msg_id, timeout=60)
    finally:
        kernel.client.get_shell_msg = get_shell_msg  # type: ignore[method-assign]
    reply = next(r for r in replies if r["parent_header"].get("msg_id") == msg_id)
    return result, dict(reply["content"])


def send_request(kernel: Kernel, request: str, group: dict[str, Any]) -> None:
    if request == "group":
        control(kernel, action="cancel", groups=[group["id"]], source="sidebar")
    elif request == "session":
        control(kernel, action="cancel", session=group["session"], source="panel")
    elif request == "all":
        control(kernel, action="cancel", all=True, source="relay")
    elif request == "stop":  # a cell on a subshell, while the main shell is busy
        # Silent: not counted (a counted one would shift the busy cell's reply's count).
        kernel.send_shell(
            "execute_request",
            {"code": f"%spark_session stop {group['session']}", "silent": True},
            subshell_id=kernel.create_subshell(),
        )
    else:
        assert kernel.manager is not None
        kernel.manager.interrupt_kernel()


@pytest.fixture(scope="module")
def prepared(kernel: Kernel) -> Kernel:
    kernel.ok("%spark_session create a\n%spark_session create other")
    kernel.ok(
        "%%spark_session a\n"
        "from pyspark.sql.functions import udf\n"
        "@udf('long')\n"
        "def _sleepy(x):\n"
        "    import time\n"
        "    time.sleep(60)\n"
        "    return x\n"
    )
    return kernel


CASES = [(b, r) for b in BINDINGS for r in REQUESTS]


@pytest.mark.parametrize(("binding", "request_kind"), CASES, ids=[f"{b}-{r}" for b, r in CASES])
def test_a_cancelled_cell_ends_in_one_line(
    prepared: Kernel, binding: str, request_kind: str
) -> None:
    kernel = prepared
    # A stopped session is gone: those cases cancel a session of their own.
    name = f"gone_{binding.replace(' ', '_')}" if request_kind == "stop" else "a"
    if name != "a":
        kernel.ok(f"%spark_session create {name}")
    prepare, cell = BINDINGS[binding]
    kernel.ok(prepare.format(name=name, other="other"))
    busy = kernel.client.execute(cell.format(name=name))
    group = running_group(kernel, name)
    send_request(kernel, request_kind, group)
    started = time.monotonic()
    result, reply = collect_with_reply(kernel, busy)
    ended_after = time.monotonic() - started

    error_name, words = REQUESTS[request_kind]
    everything = f"{result.error_name} {result.error_value} {result.traceback} {result.stderr}"
    assert "Py4JJavaError" not in everything and "at org.apache" not in everything, everything
    assert group["id"] == f"{name}:{result.execution_count}", (group["id"], result.execution_count)
    assert_cancelled_in_one_line(result, group["id"], words, error_name)
    # The reply names the error as the cell's output does.
    assert (reply["ename"], reply["evalue"]) == (result.error_name, result.error_value), reply
    assert ended_after < 10, f"the cell ended {ended_after:.1f} s after the request"
    wait_until_quiet(kernel)
