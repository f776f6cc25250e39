"""Wires the request handler to the kernel's channels: a control-channel message type
(answered while a cell runs) and a comm target (board updates pushed to frontends)."""

from __future__ import annotations

import logging
from typing import Any

import comm as comm_module

from .. import protocol
from . import ipykernel_internals
from .request_handler import RequestHandler

log = logging.getLogger(__name__)


class KernelChannels:
    """The control-channel handler and comm target of one kernel."""

    def __init__(self, kernel: Any, handler: RequestHandler) -> None:
        self.kernel = kernel
        self.handler = handler

    def install(self) -> None:
        ipykernel_internals.add_control_handler(
            self.kernel, protocol.CONTROL_REQUEST, self._on_control_request
        )
        # Looked up now, not at import: ipykernel replaces comm.get_comm_manager with its
        # own when ipykernel.ipkernel is imported, which may come after this module.
        comm_module.get_comm_manager().register_target(protocol.COMM_TARGET, self._on_comm_open)

    def _on_control_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        # On the control thread, which also serves interrupts and shutdown: stay short.
        reply = self.handler.handle(parent.get("content"))
        ipykernel_internals.send_control_reply(
            self.kernel, stream, protocol.CONTROL_REPLY, reply, parent, ident
        )

    def _on_comm_open(self, comm: Any, open_msg: dict[str, Any]) -> None:
        ipykernel_internals.route_comm_messages_to_sender(comm)
        self.handler.attach_comm(comm)

        def on_msg(msg: dict[str, Any]) -> None:
            reply = self.handler.handle(msg["content"].get("data"), comm)
            comm.send({"type": "reply", **reply})

        def on_close(msg: dict[str, Any]) -> None:
            self.handler.detach_comm(comm.comm_id)

        comm.on_msg(on_msg)
        comm.on_close(on_close)
        data = open_msg["content"].get("data")
        if data:  # a request may ride on the open message (typically "subscribe")
            on_msg(open_msg)
