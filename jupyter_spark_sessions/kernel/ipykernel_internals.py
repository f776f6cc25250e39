"""The only module that touches ipykernel internals (not part of its documented API).

Each use has one wrapper here; ``tests/test_private_apis.py`` checks each against the
installed ipykernel so that an upgrade that changes one fails loudly.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from ..errors import UnsupportedKernelError

ControlHandler = Callable[[Any, Any, dict[str, Any]], None]


def add_control_handler(kernel: Any, msg_type: str, handler: ControlHandler) -> None:
    """Handle messages of ``msg_type`` on the kernel's control channel: served by the
    control thread, so they are answered while the main shell runs a cell."""
    handlers = getattr(kernel, "control_handlers", None)
    if not isinstance(handlers, dict):
        raise UnsupportedKernelError(
            "this ipykernel has no control_handlers table, which cancel during a busy "
            "cell needs: use ipykernel 7.1 or later (< 8)"
        )
    handlers[msg_type] = handler


def send_control_reply(
    kernel: Any, stream: Any, msg_type: str, content: dict[str, Any], parent: Any, ident: Any
) -> None:
    """Reply to a control message from inside its handler."""
    kernel.session.send(stream, msg_type, content, parent, ident)


def route_comm_messages_to_sender(comm: Any) -> bool:
    """Handle a comm's incoming messages on the subshell the frontend sent them on;
    False when this ipykernel (< 7.4) or comm has no such router: its messages then
    wait for the running cell, and nothing else changes.

    ipykernel 7 routes them to the subshell that last *published* on the comm: for a
    comm updated from a background thread or created in a main-shell cell, the main
    shell, i.e. only after the running cell ends. JupyterLab >= 4.4 sends comm messages
    on a subshell precisely so that they can run while the main shell is busy."""
    if not hasattr(comm, "_reply_subshell_for"):
        return False

    def sender_subshell(data: Any, default: str | None) -> str | None:
        return default  # the subshell id of the incoming message's header

    comm._reply_subshell_for = sender_subshell
    return True


def show_error(shell: Any, etype: type[BaseException], text: str) -> None:
    """Show an error as the cell's output in one line, named ``etype`` (IPython's
    ``_showtraceback``, which ipykernel sends as the IOPub ``error`` message)."""
    shell._showtraceback(etype, text, [f"{etype.__name__}: {text}"])


ErrorShower = Callable[[tuple[Any, Any, Any]], bool]


def wrap_showtraceback(shell: Any, show: ErrorShower) -> None:
    """Let ``show(exc_info)`` display a cell's error its own way (returning True), else
    IPython's ``showtraceback`` does. (``set_custom_exc`` would show the error twice:
    IPython re-sends what its handler returns.)"""
    original = shell.showtraceback

    def showtraceback(exc_tuple: Any = None, *args: Any, **kwargs: Any) -> Any:
        error = exc_tuple if exc_tuple is not None else sys.exc_info()
        if error[0] is not None and not kwargs.get("exception_only") and show(error):
            return None
        return original(exc_tuple, *args, **kwargs)

    shell.showtraceback = showtraceback


def cell_parent(shell: Any) -> dict[str, Any] | None:
    """The header of the request running the current cell (None outside a kernel):
    what an output sent later from another thread must name to land under it."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None or not hasattr(kernel, "get_parent"):
        return None
    parent = kernel.get_parent("shell")
    return parent if isinstance(parent, dict) and parent.get("header") else None


def publish_display(
    shell: Any, parent: dict[str, Any], data: dict[str, Any], display_id: str, update: bool
) -> None:
    """Send ``display_data`` (``update_display_data`` when ``update``) with ``data`` as
    the output of the request ``parent``, from any thread. IPython's ``display`` takes
    the parent from the calling thread's context, which a background thread lacks."""
    publisher = shell.display_pub
    content = {"data": data, "metadata": {}, "transient": {"display_id": display_id}}
    msg_type = "update_display_data" if update else "display_data"
    publisher.session.send(
        publisher.pub_socket, msg_type, content, parent=parent, ident=publisher.topic
    )


Inspector = Callable[[str, int, int], "dict[str, Any] | None"]


def answer_inspect_requests_first(kernel: Any, inspector: Inspector) -> Callable[[], None]:
    """Let ``inspector(code, cursor_pos, detail_level)`` answer Jupyter's
    ``inspect_request`` (Shift+Tab) with the reply's content; None leaves it to the
    kernel's own ``do_inspect`` (IPython's). Returns what puts the kernel's back.

    ``do_inspect`` is the method a kernel overrides to answer (ipykernel's wrapper-kernel
    API); it is replaced on this kernel object only, keeping its awaitable form."""
    original = kernel.do_inspect

    async def do_inspect(
        code: str, cursor_pos: int, detail_level: int = 0, omit_sections: Any = ()
    ) -> Any:
        reply = inspector(code, cursor_pos, detail_level)
        if reply is not None:
            return reply
        result = original(code, cursor_pos, detail_level, omit_sections)
        return await result if inspect.isawaitable(result) else result

    kernel.do_inspect = do_inspect

    def restore() -> None:
        if kernel.do_inspect is do_inspect:
            kernel.do_inspect = original

    return restore
