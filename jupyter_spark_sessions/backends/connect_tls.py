"""Whether the Spark Connect client will use TLS for a URL, and a quick check that the
server speaks it.

The client turns TLS on for a token unless the host is literally ``localhost``, so
``sc://127.0.0.1:PORT/;token=...`` against a plaintext server ends, after 9-12 s of
gRPC retries and SSL noise, as UNAVAILABLE. ``check_token_transport`` explains that in
one line instead, within a bounded time.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import ssl
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConnectError

if TYPE_CHECKING:
    from .connect_endpoint import Endpoint

#: Where the client reads a token the URL does not carry.
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"

# TLS record types (change_cipher_spec, alert, handshake, application_data): a TLS peer
# answers a ClientHello with a handshake record or an alert, both starting so.
_TLS_RECORD_TYPES = frozenset({20, 21, 22, 23})


@dataclass(frozen=True)
class Transport:
    """How the client will talk to a URL's server."""

    tls: bool
    use_ssl: bool  # use_ssl=true in the URL
    token_from: str  # "url", "env" (TOKEN_ENV) or "" (no token)


def client_transport(url: str, environ: Mapping[str, str] | None = None) -> Transport:
    """What the Connect client does with ``url`` (``environ``: the process environment).

    Mirrors pyspark/sql/connect/client/core.py, DefaultChannelBuilder: ``secure`` is
    ``use_ssl`` or a token (URL parameter, else SPARK_CONNECT_AUTHENTICATE_TOKEN), and
    ``toChannel`` uses TLS for it unless there is no ``use_ssl`` and the host is
    ``localhost`` (gRPC local credentials: plaintext)."""
    env = os.environ if environ is None else environ
    if url[:5] != "sc://":
        return Transport(False, False, "")
    parsed = urllib.parse.urlparse("http" + url[2:])  # as the client parses it
    params: dict[str, str] = {}
    if parsed.params:
        for part in parsed.params.split(";"):
            kv = part.split("=")
            if len(kv) != 2:
                return Transport(False, False, "")  # the client rejects the URL itself
            params[kv[0]] = urllib.parse.unquote(kv[1])
    use_ssl = params.get("use_ssl", "").lower() == "true"
    token_from = "url" if "token" in params else "env" if TOKEN_ENV in env else ""
    tls = use_ssl or (bool(token_from) and parsed.hostname != "localhost")
    return Transport(tls, use_ssl, token_from)


def client_uses_tls(url: str, environ: Mapping[str, str] | None = None) -> bool:
    """True when the Connect client will open a TLS channel for ``url``."""
    return client_transport(url, environ).tls


def speaks_tls(host: str, port: int, timeout: float = 3.0) -> bool | None:
    """Whether the peer at host:port answers a TLS ClientHello with TLS; None when
    nothing listens, or it closes or stays silent within ``timeout``.

    The reply's first bytes are judged, not the handshake's outcome: a TLS server's alert
    (no shared cipher, a client certificate wanted) fails the handshake too."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only "is it TLS at all" matters here
    context.set_alpn_protocols(["h2"])  # as gRPC asks
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=host)
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the reply: no socket
        tls.do_handshake()
    hello = outgoing.read()
    deadline = time.monotonic() + timeout
    reply = b""
    try:
        with socket.create_connection((host, port), timeout) as sock:
            sock.sendall(hello)
            while len(reply) < 2:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                sock.settimeout(remaining)
                chunk = sock.recv(2 - len(reply))
                if not chunk:
                    break
                reply += chunk
    except OSError:  # refused, reset, unresolvable, timed out
        pass
    if not reply:
        return None
    if len(reply) < 2:
        return None if reply[0] in _TLS_RECORD_TYPES else False
    return reply[0] in _TLS_RECORD_TYPES and reply[1] == 3


def check_token_transport(
    endpoint: Endpoint, timeout: float = 3.0, environ: Mapping[str, str] | None = None
) -> None:
    """ConnectError when the client will use TLS for ``endpoint`` and the server there
    answers without it. Nothing when it speaks TLS, when TLS is off, or when nothing
    answers (the reachability check reports that)."""
    transport = client_transport(endpoint.url, environ)
    if not transport.tls or speaks_tls(endpoint.host, endpoint.port, timeout) is not False:
        return
    port = endpoint.port
    local = f"sc://localhost:{port}/;token=..."
    if transport.use_ssl:
        why = "the URL has use_ssl=true, which makes the Connect client use TLS"
        fix = "enable TLS on the server, or drop use_ssl=true"
        if transport.token_from:
            fix += f" and, if the server runs on this machine, write {local}"
    else:
        source = " (from SPARK_CONNECT_AUTHENTICATE_TOKEN)" if transport.token_from == "env" else ""
        why = (
            f"the Connect client uses TLS when it has a token{source} unless the host is "
            f"`localhost`"
        )
        if _is_loopback(endpoint.host):
            fix = f"write {local} instead (the same server, no TLS), or enable TLS on the server"
        else:
            fix = (
                f"if the server runs on this machine, write {local}; otherwise enable TLS on "
                f"the server, or tunnel to it (ssh -L {port}:localhost:{port} {endpoint.host}) "
                f"and write {local}"
            )
    raise ConnectError(
        f"The Spark Connect server at {endpoint.display} does not speak TLS, but {why}: {fix}."
    )


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
