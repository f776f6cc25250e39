"""Jupyter server extension: relays a request to a kernel's control channel over REST.

For clients that cannot send kernel control messages themselves: a script, ``curl``,
a frontend whose widget clicks wait for the running cell. The server already holds each
kernel's connection info, so the relay opens a short-lived control-channel client,
sends one ``spark_sessions_request`` and returns the kernel's reply: answered while a
cell runs, as from the sidebar. Kernels behind a Kernel or Enterprise Gateway are
reached through the gateway's websocket instead (``gateway_relay``).

    POST {base_url}jupyter-spark-sessions/api/kernels/{kernel_id}/requests
    body: a protocol request (docs/protocol.md), action ``list``, ``cancel`` or ``stop_query``

Authenticated and authorized like the server's own kernel API (token or cookie;
resource ``kernels``): it adds a route to the server, never a new listening socket.
"""

from __future__ import annotations

import json
import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from .. import protocol
from ..errors import GatewayRelayError, ProtocolError
from . import gateway_relay

#: Reading and cancelling; ``add`` copies files (comm only), and subscriptions need a
#: comm to push to.
RELAYED_ACTIONS = frozenset({"list", "cancel", "stop_query"})
#: The kernel answers in milliseconds even while busy; longer means it has not loaded
#: the extension (ipykernel ignores unknown control messages) or is not responding.
REPLY_TIMEOUT = 10.0
_MAX_BODY = 1 << 20  # a cancel of 1000 group ids is far below this

ROUTE = r"/jupyter-spark-sessions/api/kernels/(?P<kernel_id>[\w-]+)/requests"


class ControlRelayHandler(APIHandler):
    """``POST``: one protocol request relayed to the kernel, its reply returned."""

    auth_resource = "kernels"

    @web.authenticated
    @authorized
    async def post(self, kernel_id: str) -> None:
        if kernel_id not in self.kernel_manager:
            self._error(404, None, "unknown_kernel", f"No kernel with id {kernel_id!r}.")
            return
        message = self._request_body()
        if message is None:
            return
        try:
            request = protocol.parse_request(message)
        except ProtocolError as exc:
            self._error(400, message, exc.code, exc.message)
            return
        if request.action not in RELAYED_ACTIONS:
            self._error(
                400,
                message,
                "bad_request",
                f"Action {request.action!r} is not relayed over REST; use one of: "
                f"{', '.join(sorted(RELAYED_ACTIONS))}.",
            )
            return
        if request.action in ("cancel", "stop_query"):  # said where it came from
            message = {**message, "source": "relay"}
        if gateway_relay.enabled():
            try:
                reply = await gateway_relay.relay_through_gateway(kernel_id, message, REPLY_TIMEOUT)
            except GatewayRelayError as exc:
                self._error(exc.status, message, exc.code, str(exc))
                return
            no_reply = (
                f"The kernel did not answer through the gateway at {gateway_relay.gateway_url()} "
                f"within {REPLY_TIMEOUT:.0f} s: has it run `%load_ext jupyter_spark_sessions`, "
                "and does the gateway pass control messages?"
            )
        else:
            kernel = self.kernel_manager.get_kernel(kernel_id)
            reply = await relay_to_control_channel(kernel, message, REPLY_TIMEOUT)
            no_reply = (
                f"The kernel did not answer within {REPLY_TIMEOUT:.0f} s: has it run "
                "`%load_ext jupyter_spark_sessions`?"
            )
        if reply is None:
            self._error(504, message, "no_reply", no_reply)
            return
        if reply.get("status") == "error":  # the kernel refused it: say so in HTTP too
            code = reply.get("error", {}).get("code")
            self.set_status(500 if code == "internal_error" else 400)
        self.finish(json.dumps(reply))

    def _request_body(self) -> Any:
        body = self.request.body
        if len(body) > _MAX_BODY:
            self._error(413, None, "bad_request", f"The request is over {_MAX_BODY} bytes.")
            return None
        try:
            return json.loads(body)
        except ValueError:
            self._error(400, None, "bad_request", "The request body is not JSON.")
            return None

    def _error(self, status: int, message: Any, code: str, text: str) -> None:
        self.set_status(status)
        self.finish(json.dumps(protocol.error_reply(message, code, text)))


async def relay_to_control_channel(
    kernel_manager: Any, content: dict[str, Any], timeout: float
) -> dict[str, Any] | None:
    """Send ``content`` as a control request to the kernel and return its reply content,
    or None when no reply came within ``timeout``."""
    # A client of our own (not the server's websocket bridge), with a session of its own
    # signed by the kernel's key: only its control socket.
    client = AsyncKernelClient()
    client.load_connection_info(kernel_manager.get_connection_info())
    client.start_channels(shell=False, iopub=False, stdin=False, hb=False, control=True)
    try:
        msg = client.session.msg(protocol.CONTROL_REQUEST, content)
        client.control_channel.send(msg)
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                reply: dict[str, Any] = await client.control_channel.get_msg(timeout=remaining)
            except Empty:
                return None
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                answer: dict[str, Any] = reply["content"]
                return answer
        return None
    finally:
        client.stop_channels()


def load_handlers(server_app: Any) -> None:
    """Add the relay's route to the server, and the Spark UI's (``spark_ui_route``)."""
    from . import spark_ui_route

    web_app = server_app.web_app
    route = url_path_join(web_app.settings["base_url"], ROUTE)
    web_app.add_handlers(".*$", [(route, ControlRelayHandler)])
    spark_ui_route.load_handlers(server_app)
