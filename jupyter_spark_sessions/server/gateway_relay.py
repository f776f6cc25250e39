"""The REST relay for kernels behind a Kernel Gateway or Enterprise Gateway.

With ``--GatewayClient.url`` the Jupyter server runs no kernel itself: its kernel
manager's connection info is placeholders (no control port, a random key), so a ZMQ
client reaches nothing. The gateway speaks the kernel websocket protocol instead
(``{ws_url}/api/kernels/{id}/channels``, one JSON message per frame naming its
``channel``), ``control`` included. The relay opens that websocket as the server's own
gateway connection does (``GatewayClient``: the same URL, the same authentication
header, certificates and cookies as jupyter_server configures them), sends the request
on ``control``, and returns the first reply to it; the other messages on the socket
(the kernel's IOPub) are skipped.

jupyter_server's ``GatewayKernelClient`` is not used: its websocket carries no
authentication header, so a gateway with a token refuses it (401).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
import uuid
from typing import Any

from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.utils import url_escape, url_path_join
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from .. import protocol
from ..errors import GatewayRelayError


def enabled() -> bool:
    """Whether this Jupyter server's kernels live behind a gateway."""
    return bool(GatewayClient.instance().gateway_enabled)


def gateway_url() -> str:
    return str(GatewayClient.instance().url)


async def relay_through_gateway(
    kernel_id: str, content: dict[str, Any], timeout: float
) -> dict[str, Any] | None:
    """Send ``content`` as a control request to kernel ``kernel_id`` through the
    gateway; its reply content, or None when none came within ``timeout``. Raises
    GatewayRelayError when the gateway cannot be reached or no longer has the kernel."""
    deadline = time.monotonic() + timeout
    socket = await _connect(kernel_id, timeout)
    try:
        message = _control_message(content)
        await socket.write_message(json.dumps(message))
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                frame = await asyncio.wait_for(socket.read_message(), remaining)
            except asyncio.TimeoutError:
                return None
            if frame is None:  # the gateway closed the socket: the kernel went away
                raise GatewayRelayError(
                    404, "unknown_kernel", f"The gateway closed the kernel {kernel_id!r}."
                )
            if not isinstance(frame, str):
                continue  # a binary frame: an IOPub message with buffers
            reply = json.loads(frame)
            if (
                reply.get("channel") == "control"
                and reply.get("parent_header", {}).get("msg_id") == message["header"]["msg_id"]
            ):
                answer: dict[str, Any] = reply["content"]
                return answer
        return None
    finally:
        socket.close()


async def _connect(kernel_id: str, timeout: float) -> WebSocketClientConnection:
    gateway = GatewayClient.instance()
    url = url_path_join(
        gateway.ws_url or "", gateway.kernels_endpoint, url_escape(kernel_id), "channels"
    )
    options: dict[str, Any] = gateway.load_connection_args()  # type: ignore[no-untyped-call]
    for bound in ("connect_timeout", "request_timeout"):  # the relay answers within timeout
        options[bound] = min(float(options.get(bound) or timeout), timeout)
    try:
        return await websocket_connect(HTTPRequest(url, **options))
    except HTTPClientError as exc:
        if exc.code == 404:
            raise GatewayRelayError(
                404, "unknown_kernel", f"The gateway at {gateway.url} has no kernel {kernel_id!r}."
            ) from None
        raise GatewayRelayError(
            502, "no_reply", f"The gateway at {gateway.url} refused the connection: {exc}."
        ) from None
    except OSError as exc:  # refused, unreachable, name not found, TLS
        raise GatewayRelayError(
            502, "no_reply", f"The gateway at {gateway.url} cannot be reached: {exc}."
        ) from None


def _control_message(content: dict[str, Any]) -> dict[str, Any]:
    """A kernel message in the websocket protocol's JSON form (the gateway signs it for
    the kernel)."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    return {
        "header": {
            "msg_id": uuid.uuid4().hex,
            "msg_type": protocol.CONTROL_REQUEST,
            "username": "jupyter-spark-sessions-relay",
            "session": uuid.uuid4().hex,
            "date": now,
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": content,
        "channel": "control",
        "buffers": [],
    }
