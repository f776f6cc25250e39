"""The job board and cancel, through a real kernel (jupyter_client) on a real JVM:
control-channel requests answered while a cell is busy, cancel that reaches only the
group it names, the comm pushes, and the protocol's error replies."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from jupyter_spark_sessions import protocol
from jupyter_spark_sessions.protocol import COMM_TARGET, CONTROL_REQUEST
from kernel_driver import Kernel, assert_cancelled_in_one_line

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

# One task sleeping 2 x 120 s: minutes in total, far longer than any test waits.
LONG_CELL = """
from pyspark.sql.functions import udf

@udf("long")
def _sleepy(x):
    import time
    time.sleep(120)
    return x

spark.range(0, 2, 1, 1).select(_sleepy("id")).collect()
"""


def request(kernel: Kernel, content: Any, timeout: float = 10) -> tuple[dict[str, Any], float]:
    """Send one protocol request on the control channel: (reply content, seconds)."""
    start = time.perf_counter()
    reply = kernel.control(CONTROL_REQUEST, content, timeout)
    return reply["content"], time.perf_counter() - start


def board(kernel: Kernel) -> dict[str, Any]:
    reply, _ = request(kernel, {"version": 1, "action": "list"})
    assert reply["status"] == "ok", reply
    return dict(reply["board"])


def wait_for_group(
    kernel: Kernel, found: Callable[[dict[str, Any]], bool], timeout: float = 60
) -> dict[str, Any]:
    """Poll the board over the control channel until a group satisfies ``found``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for group in board(kernel)["groups"]:
            if found(group):
                return group
        time.sleep(0.2)
    raise AssertionError(f"no such group within {timeout} s: {board(kernel)['groups']}")


@pytest.fixture(scope="module")
def sessions(kernel: Kernel) -> Kernel:
    kernel.ok("%spark_session create a\n%spark_session create b")
    return kernel


def start_background_job_in_b(kernel: Kernel, seconds_per_row: float) -> None:
    """Session b runs an RDD job (10 rows, one task) in an InheritableThread, which
    keeps b's cell tags; ``b_result`` gets its sum (45) when it ends."""
    kernel.ok(
        "%%spark_session b\n"
        "from pyspark import InheritableThread\n"
        "b_result = {}\n"
        "def _slow_row(x):\n"
        "    import time\n"
        f"    time.sleep({seconds_per_row})\n"
        "    return x\n"
        "def _run_b(session=spark):  # `spark` is b only while this cell runs\n"
        "    try:\n"
        "        b_result['sum'] = session.sparkContext.parallelize(range(10), 1)"
        ".map(_slow_row).sum()\n"
        "    except Exception as exc:\n"
        "        b_result['error'] = str(exc)[:300]\n"
        "b_thread = InheritableThread(target=_run_b)\n"
        "b_thread.start()\n"
    )


def test_control_request_cancels_busy_cell_and_spares_other_session(sessions: Kernel) -> None:
    kernel = sessions
    start_background_job_in_b(kernel, seconds_per_row=2)
    b_group = wait_for_group(kernel, lambda g: g["session"] == "b" and g["state"] == "running")
    kernel.ok("%spark_session use a")
    busy = kernel.client.execute(LONG_CELL)

    # While the cell is busy, the board lists a's group with its task progress.
    group = wait_for_group(
        kernel,
        lambda g: g["session"] == "a" and g["state"] == "running" and g["tasks"]["active"] > 0,
    )
    assert group["cell_running"] is True
    assert group["description"] == 'spark.range(0, 2, 1, 1).select(_sleepy("id")).collect()'
    assert group["tasks"]["total"] == 1 and len(group["jobs"]) == 1
    job = group["jobs"][0]
    assert job["status"] == "RUNNING", job
    assert [s["tasks"]["active"] for s in job["stages"]] == [1], job
    _, list_seconds = request(kernel, {"version": 1, "action": "list"})
    assert list_seconds < 1.0
    b_now = next(g for g in board(kernel)["groups"] if g["id"] == b_group["id"])
    assert b_now["state"] == "running", "b's job must still run during the cancel"

    reply, cancel_seconds = request(
        kernel, {"version": 1, "action": "cancel", "groups": [group["id"]], "request_id": "r1"}
    )
    assert reply["status"] == "ok" and reply["request_id"] == "r1", reply
    assert reply["cancelling"] == [group["id"]]
    assert cancel_seconds < 1.0, f"cancel took {cancel_seconds:.3f} s"
    state_now = next(g for g in board(kernel)["groups"] if g["id"] == group["id"])["state"]
    assert state_now in ("cancelling", "cancelled")

    started = time.monotonic()
    result = kernel.collect(busy, timeout=60)
    assert_cancelled_in_one_line(result, group["id"])  # the request named no source
    assert time.monotonic() - started < 15

    ended = wait_for_group(kernel, lambda g: g["id"] == group["id"] and g["state"] == "cancelled")
    assert ended["cancel_requested_at"] is not None
    assert ended["jobs"][0]["status"] == "FAILED"
    # Slots free again (the Python worker of the killed task has exited).
    wait_for_group(
        kernel, lambda g: g["id"] == group["id"] and g["tasks_still_running"] == 0, timeout=30
    )

    kernel.ok("b_thread.join(120)")
    assert kernel.value("b_result") == {"sum": 45}
    b_done = wait_for_group(kernel, lambda g: g["id"] == b_group["id"] and g["state"] != "running")
    assert b_done["state"] == "succeeded"


def test_a_cancel_between_two_jobs_of_a_running_cell_cancels_its_next_job(
    sessions: Kernel,
) -> None:
    # Clicked after the cell's first job ended, while it works on in Python before its
    # next: the group's cell still runs, so its next job is cancelled once it starts
    # (the request once answered "no running job" and the cell ran on).
    kernel = sessions
    kernel.ok("%spark_session use a")
    busy = kernel.client.execute("spark.range(3).count()\nimport time; time.sleep(4)\n" + LONG_CELL)
    group = wait_for_group(
        kernel,
        lambda g: (
            g["session"] == "a"
            and g["cell_running"]
            and g["jobs"]
            and all(j["status"] == "SUCCEEDED" for j in g["jobs"])
        ),
    )
    reply, _ = request(kernel, {"version": 1, "action": "cancel", "groups": [group["id"]]})
    assert reply["status"] == "ok" and reply["cancelling"] == [group["id"]], reply
    started = time.monotonic()
    result = kernel.collect(busy, timeout=60)
    # The line may not name the job (seen on PySpark 4.1: cancelled as it started, it
    # ended before the board heard of it); the group below has it.
    assert_cancelled_in_one_line(result, group["id"], jobs_may_be_unnamed=True)
    assert time.monotonic() - started < 20  # not the 120 s task
    ended = wait_for_group(kernel, lambda g: g["id"] == group["id"] and g["state"] == "cancelled")
    *before, cancelled = (j["status"] for j in ended["jobs"])
    assert before and set(before) == {"SUCCEEDED"} and cancelled == "FAILED", ended["jobs"]


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ('["not", "an", "object"]', "bad_request"),  # JSON text: jupyter_client sends it as is
        ('"just a string"', "bad_request"),
        ({"action": "list"}, "unsupported_version"),
        ({"version": 99, "action": "list"}, "unsupported_version"),
        ({"version": 1, "action": "explode"}, "unknown_action"),
        ({"version": 1}, "unknown_action"),
        ({"version": 1, "action": "list", "extra": 1}, "bad_request"),
        ({"version": 1, "action": "cancel"}, "bad_request"),
        ({"version": 1, "action": "cancel", "groups": []}, "bad_request"),
        ({"version": 1, "action": "cancel", "groups": [5]}, "bad_request"),
        ({"version": 1, "action": "cancel", "groups": ["a:1"], "all": True}, "bad_request"),
        ({"version": 1, "action": "cancel", "all": False}, "bad_request"),
        ({"version": 1, "action": "cancel", "groups": ["nope:1"]}, "unknown_group"),
        ({"version": 1, "action": "cancel", "session": "nope"}, "unknown_session"),
        ({"version": 1, "action": "subscribe"}, "bad_request"),
        ({"version": 1, "action": "subscribe", "comm_id": "missing"}, "unknown_comm"),
        # add copies files: refused on the control channel, whatever its content.
        (
            {"version": 1, "action": "add", "session": "a", "kind": "file", "path": "x"},
            "bad_request",
        ),
        (
            {"version": 1, "action": "add", "session": "a", "kind": "weird", "path": "x"},
            "bad_request",
        ),
    ],
)
def test_malformed_requests_get_error_replies(sessions: Kernel, content: Any, code: str) -> None:
    before = board(sessions)
    reply, seconds = request(sessions, content)
    assert reply["status"] == "error", reply
    assert reply["error"]["code"] == code, reply
    assert reply["error"]["message"] and "\n" not in reply["error"]["message"]
    assert seconds < 1.0
    after = board(sessions)
    assert [g["state"] for g in after["groups"]] == [g["state"] for g in before["groups"]]


def test_board_and_kernel_keep_working_after_bad_requests(sessions: Kernel) -> None:
    for content in ({"version": 1, "action": "x"}, "[1, 2]", {"version": 1, "action": "list"}):
        request(sessions, content)
    sessions.ok("%spark_session use a")
    count = sessions.ok("n_rows = spark.range(7).count()").execution_count  # In [count]
    assert sessions.value("n_rows") == 7
    group = wait_for_group(sessions, lambda g: g["id"] == f"a:{count}" and g["state"] != "running")
    assert (
        group["state"] == "succeeded" and group["description"] == "n_rows = spark.range(7).count()"
    )


def test_jobs_and_cancel_magics(sessions: Kernel) -> None:
    kernel = sessions
    start_background_job_in_b(kernel, seconds_per_row=30)
    group = wait_for_group(kernel, lambda g: g["session"] == "b" and g["state"] == "running")
    table = kernel.ok("%spark_session jobs b").stdout
    assert group["id"] in table and "running" in table

    out = kernel.ok(f"%spark_session cancel {group['id']}").stdout
    assert f"Cancel requested for {group['id']}" in out
    kernel.ok("b_thread.join(60)")
    assert "SPARK_JOB_CANCELLED" in kernel.value("b_result")["error"]
    wait_for_group(kernel, lambda g: g["id"] == group["id"] and g["state"] == "cancelled")
    assert "cancelled" in kernel.ok("%spark_session jobs").stdout

    finished = kernel.ok(f"%spark_session cancel {group['id']}").stdout
    assert f"Group {group['id']} has no running job (cancelled)." in finished
    for bad, message in [
        ("cancel nope:3", "No job group 'nope:3' on the board"),
        ("cancel", "exactly one of them"),
        ("cancel a:1 --all", "exactly one of them"),
        ("cancel --session nope", "No session named 'nope'"),
        ("jobs nope", "No session named 'nope'"),
    ]:
        result = kernel.execute(f"%spark_session {bad}")
        assert message in result.usage_error, (bad, result.stderr)


def test_comm_pushes_updates_and_takes_requests_on_a_subshell(sessions: Kernel) -> None:
    kernel = sessions
    comm_id = uuid.uuid4().hex
    kernel.send_shell(
        "comm_open",
        {
            "comm_id": comm_id,
            "target_name": COMM_TARGET,
            "data": {"version": 1, "action": "subscribe", "request_id": "s1"},
        },
    )

    def on_comm(msg: dict[str, Any], kind: str) -> bool:
        content = msg["content"]
        return (
            msg["msg_type"] == "comm_msg"
            and content.get("comm_id") == comm_id
            and content["data"].get("type") == kind
        )

    # The whole board comes first, then patches: follow them as the sidebar does, each
    # message once (wait_for_iopub shows the messages seen before again).
    followed: dict[str, Any] = {}
    applied: set[str] = set()

    def follow(msg: dict[str, Any]) -> list[dict[str, Any]]:
        if msg["header"]["msg_id"] in applied:
            return []
        if on_comm(msg, "board"):
            followed["board"] = msg["content"]["data"]["board"]
        elif on_comm(msg, "board_patch"):
            patch = msg["content"]["data"]
            followed["board"] = protocol.apply_board_patch(followed["board"], patch)
        else:
            return []
        applied.add(msg["header"]["msg_id"])
        groups: list[dict[str, Any]] = followed["board"]["groups"]
        return groups

    def subscribe_reply(msg: dict[str, Any]) -> bool:
        follow(msg)  # the first board may come before the reply
        return on_comm(msg, "reply")

    subscribed = kernel.wait_for_iopub(subscribe_reply)
    assert subscribed["content"]["data"]["status"] == "ok"

    kernel.ok("%spark_session use a")
    busy = kernel.client.execute(LONG_CELL)

    def pushed_running(msg: dict[str, Any]) -> bool:
        return any(g["session"] == "a" and g["state"] == "running" for g in follow(msg))

    kernel.wait_for_iopub(pushed_running)
    group = next(
        g for g in followed["board"]["groups"] if g["session"] == "a" and g["state"] == "running"
    )

    # JupyterLab sends comm messages on a subshell: handled while the main shell is busy.
    subshell = kernel.create_subshell()
    kernel.send_shell(
        "comm_msg",
        {
            "comm_id": comm_id,
            "data": {
                "version": 1,
                "action": "cancel",
                "groups": [group["id"]],
                "request_id": "c1",
                "source": "sidebar",
            },
        },
        subshell_id=subshell,
    )
    replied = kernel.wait_for_iopub(
        lambda m: on_comm(m, "reply") and m["content"]["data"].get("request_id") == "c1",
        timeout=10,
    )
    assert replied["content"]["data"]["cancelling"] == [group["id"]]
    result = kernel.collect(busy, timeout=60)
    assert_cancelled_in_one_line(result, group["id"], "from the sidebar")
    kernel.wait_for_iopub(
        lambda m: any(g["id"] == group["id"] and g["state"] == "cancelled" for g in follow(m)),
        timeout=30,
    )


def test_panel_cancel_click_on_a_subshell_cancels_while_the_cell_is_busy(
    sessions: Kernel,
) -> None:
    kernel = sessions
    kernel.ok("%spark_session panel")
    kernel.ok("%spark_session use a")
    busy = kernel.client.execute(LONG_CELL)
    group = wait_for_group(kernel, lambda g: g["session"] == "a" and g["state"] == "running")

    def widget_state(msg: dict[str, Any]) -> dict[str, Any]:
        if msg["msg_type"] not in ("comm_open", "comm_msg"):
            return {}
        data = msg["content"].get("data") or {}
        return dict(data.get("state") or {})

    tooltip = f"Cancel job group {group['id']}"
    button = kernel.wait_for_iopub(lambda m: widget_state(m).get("tooltip") == tooltip)
    assert button["msg_type"] == "comm_open"
    assert widget_state(button)["disabled"] is False

    # What JupyterLab 4.6 does on a click: a comm message on the widgets' subshell.
    subshell = kernel.create_subshell()
    kernel.send_shell(
        "comm_msg",
        {
            "comm_id": button["content"]["comm_id"],
            "data": {"method": "custom", "content": {"event": "click"}},
        },
        subshell_id=subshell,
    )
    result = kernel.collect(busy, timeout=60)
    assert_cancelled_in_one_line(result, group["id"], "from the panel")
    # The panel shows the state Spark reported. Read from the widget in the kernel (the
    # state a frontend mirrors) rather than from one IOPub message among the hundreds
    # the panel sends, which a loaded run can fall behind on.
    wait_for_group(kernel, lambda g: g["id"] == group["id"] and g["state"] == "cancelled")
    label = (
        "get_ipython().magics_manager.registry['SparkSessionMagics']._panel"
        f"._group_rows[{group['id']!r}].label.value"
    )
    deadline = time.monotonic() + 10
    while f"<code>{group['id']}</code> <b>cancelled</b>" not in kernel.value(label):
        assert time.monotonic() < deadline, kernel.value(label)
        time.sleep(0.2)


def test_files_are_added_over_the_comm_and_read_by_the_sessions_udf(sessions: Kernel) -> None:
    kernel = sessions
    kernel.ok("open('from_ui.csv', 'w').write('ui data')")
    comm_id = uuid.uuid4().hex
    kernel.send_shell("comm_open", {"comm_id": comm_id, "target_name": COMM_TARGET, "data": {}})

    def add(request_id: str, **fields: Any) -> dict[str, Any]:
        data = {"version": 1, "action": "add", "request_id": request_id, **fields}
        kernel.send_shell("comm_msg", {"comm_id": comm_id, "data": data})
        reply = kernel.wait_for_iopub(
            lambda m: (
                m["msg_type"] == "comm_msg"
                and m["content"]["comm_id"] == comm_id
                and m["content"]["data"].get("request_id") == request_id
            ),
            timeout=60,
        )
        return dict(reply["content"]["data"])

    added = add("f1", session="a", kind="file", path="from_ui.csv")
    assert added["status"] == "ok" and added["added"] is True, added
    assert added["artifact"]["name"] == "from_ui.csv" and added["artifact"]["size"] == 7
    read = kernel.ok(
        "%%spark_session a\n"
        "from pyspark.sql.functions import udf\n"
        "@udf('string')\n"
        "def _read_ui(p):\n"
        "    return open(p).read()\n"
        "spark.createDataFrame([('from_ui.csv',)], 'p string').select(_read_ui('p')).first()[0]"
    )
    assert read.result_text == "'ui data'"
    again = add("f2", session="a", kind="file", path="from_ui.csv")
    assert again["status"] == "ok" and again["added"] is False
    kernel.ok("open('from_ui.csv', 'w').write('other data')")
    clash = add("f3", session="a", kind="file", path="from_ui.csv")
    assert clash["status"] == "error" and "already has a file" in clash["error"]["message"]
    missing = add("f4", session="a", kind="file", path="nope.csv")
    assert missing["error"]["message"].startswith("No such file:")
    unknown = add("f5", session="zz", kind="file", path="from_ui.csv")
    assert unknown["error"]["code"] == "unknown_session"
