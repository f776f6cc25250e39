"""The ipykernel internals ``ipykernel_internals`` relies on, checked against the
installed ipykernel: an upgrade that changes one fails here, naming it."""

from __future__ import annotations

import asyncio
import inspect

import ipykernel
import pytest
from ipykernel.comm.comm import BaseComm
from ipykernel.kernelbase import Kernel

from jupyter_spark_sessions.kernel import ipykernel_internals


def test_kernel_dispatches_control_messages_through_control_handlers() -> None:
    # process_control looks the handler up in this table by message type.
    assert "self.control_handlers.get(msg_type" in inspect.getsource(Kernel.process_control)
    assert "self.control_handlers = {}" in inspect.getsource(Kernel.__init__)


def comm_routing() -> str:
    """How the installed ipykernel picks the thread that handles a comm message: what
    decides whether a panel click runs while the main shell is busy."""
    source = inspect.getsource(Kernel.shell_channel_thread_main)
    if "_reply_subshell_for" in source:
        return "comm-router-overridden"  # >= 7.4: it asks the comm, which we answer
    if 'msg3["header"].get("subshell_id")' in source:
        return "ipykernel-routes-by-subshell-header"  # 7.1 to 7.3: no router needed
    return "unknown"


# The test id names the routing in force, e.g.
# test_comm_messages_are_handled_on_the_subshell_they_arrive_on[comm-router-overridden].
@pytest.mark.parametrize("routing", [comm_routing()])
def test_comm_messages_are_handled_on_the_subshell_they_arrive_on(routing: str) -> None:
    comm = BaseComm(target_name="probe", primary=False)
    routed = ipykernel_internals.route_comm_messages_to_sender(comm)
    if routing == "comm-router-overridden":
        params = list(inspect.signature(BaseComm._reply_subshell_for).parameters)
        assert params == ["self", "data", "default"]
        assert routed is True
        assert comm._reply_subshell_for({"x": 1}, "subshell-7") == "subshell-7"
        assert ipykernel.version_info[:2] >= (7, 4), "magics/panel.py's version check"
    elif routing == "ipykernel-routes-by-subshell-header":
        # Nothing to override, and nothing needed: the panel keeps its usual note.
        assert routed is False
        assert not hasattr(comm, "_reply_subshell_for")
        assert ipykernel.version_info[:2] < (7, 4), "magics/panel.py's version check"
    else:
        pytest.fail(
            f"ipykernel {ipykernel.__version__} routes comm messages in a way this "
            "package does not know: check whether a panel click during a busy cell still "
            "runs on its subshell (tests/test_job_board_kernel.py) and update "
            "ipykernel_internals.route_comm_messages_to_sender and magics/panel.py"
        )


class _Comm:
    def _reply_subshell_for(self, data: object, default: str | None) -> str | None:
        return "main-shell"


def test_route_comm_messages_to_sender_answers_with_the_incoming_subshell() -> None:
    comm = _Comm()
    assert ipykernel_internals.route_comm_messages_to_sender(comm) is True
    assert comm._reply_subshell_for({"x": 1}, "subshell-7") == "subshell-7"
    assert comm._reply_subshell_for(None, None) is None


def test_a_comm_without_the_router_is_left_alone_and_reported() -> None:
    # ipykernel < 7.4 (and non-kernel comms): clicks wait for the cell, nothing breaks.
    class OldComm:
        pass

    comm = OldComm()
    assert ipykernel_internals.route_comm_messages_to_sender(comm) is False
    assert not hasattr(comm, "_reply_subshell_for")


def test_add_control_handler_fills_the_table() -> None:
    class FakeKernel:
        def __init__(self) -> None:
            self.control_handlers: dict[str, object] = {}

    def handler(stream: object, ident: object, parent: dict[str, object]) -> None:
        pass

    kernel = FakeKernel()
    ipykernel_internals.add_control_handler(kernel, "x_request", handler)
    assert kernel.control_handlers["x_request"] is handler


def test_a_display_can_be_sent_for_a_cell_from_another_thread() -> None:
    # publish_display sends through the display publisher's session, socket and topic,
    # naming the cell's request as parent; cell_parent reads it with Kernel.get_parent.
    from ipykernel.zmqshell import ZMQDisplayPublisher

    traits = ZMQDisplayPublisher.class_trait_names()
    assert {"session", "pub_socket", "topic"} <= set(traits), traits
    assert "channel" in inspect.signature(Kernel.get_parent).parameters
    publish = inspect.getsource(ZMQDisplayPublisher.publish)
    assert "self.session.send(" in publish and "self.pub_socket" in publish, publish


def test_inspect_requests_reach_do_inspect_and_ours_answers_first() -> None:
    # Kernel.inspect_request calls self.do_inspect(code, cursor_pos, detail_level,
    # omit_sections) and awaits what it returns: the wrapper keeps that form.
    source = inspect.getsource(Kernel.inspect_request)
    assert "self.do_inspect(" in source and "inspect.isawaitable(reply_content)" in source
    from ipykernel.ipkernel import IPythonKernel

    params = list(inspect.signature(IPythonKernel.do_inspect).parameters)
    assert params == ["self", "code", "cursor_pos", "detail_level", "omit_sections"], params

    class FakeKernel:
        def do_inspect(self, code: str, cursor_pos: int, detail_level: int = 0, omit=()) -> dict:
            return {"status": "ok", "found": True, "data": {"text/plain": "python"}}

    kernel = FakeKernel()

    def ours(code: str, cursor_pos: int, detail_level: int) -> dict | None:
        return (
            {"status": "ok", "found": True, "data": {"text/plain": "sql"}}
            if "SQL" in code
            else None
        )

    restore = ipykernel_internals.answer_inspect_requests_first(kernel, ours)
    assert asyncio.run(kernel.do_inspect("SQL", 1))["data"] == {"text/plain": "sql"}
    assert asyncio.run(kernel.do_inspect("len", 1, 0, ()))["data"] == {"text/plain": "python"}
    restore()
    assert kernel.do_inspect("SQL", 1)["data"] == {"text/plain": "python"}
