"""When the Spark Connect client uses TLS (token or use_ssl=true, unless only a token
and the host is ``localhost``), checked against the installed PySpark's own channel
choice; and the quick probe that turns "TLS client, plaintext server" into one line,
against real sockets: a plaintext server, a TLS server (a self-signed certificate made
with the openssl command), one that closes at once and none at all."""

from __future__ import annotations

import contextlib
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_spark_sessions.backends import connect, connect_endpoint, connect_tls
from jupyter_spark_sessions.errors import ConnectError

# (URL, TLS?) with no token in the environment.
RULES = [
    ("sc://localhost:15002", False),
    ("sc://localhost:15002/;token=abc", False),
    ("sc://LOCALHOST:15002/;token=abc", False),  # the client lowercases the host
    ("sc://127.0.0.1:15002/;token=abc", True),
    ("sc://[::1]:15002/;token=abc", True),
    ("sc://spark.example:443/;token=abc", True),
    ("sc://spark.example:443/;token=", True),  # an empty token is still a token
    ("sc://spark.example:443", False),
    ("sc://spark.example:443/;user_id=me;session_id=x", False),
    ("sc://localhost:15002/;use_ssl=true", True),
    ("sc://localhost:15002/;use_ssl=TRUE;token=abc", True),
    ("sc://127.0.0.1:15002/;use_ssl=false", False),
    ("sc://127.0.0.1:15002/;use_ssl=false;token=abc", True),
    ("sc://127.0.0.1:15002/;token=a%3Db", True),
]


def pyspark_uses_tls(url: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the installed client builds its channel with SSL credentials for ``url``."""
    import grpc
    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    used: list[bool] = []
    real = grpc.ssl_channel_credentials

    def spy(*args: Any, **kwargs: Any) -> Any:
        used.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(grpc, "ssl_channel_credentials", spy)
    channel = DefaultChannelBuilder(url).toChannel()  # lazy: connects to nothing
    channel.close()
    return bool(used)


@pytest.mark.parametrize(("url", "tls"), RULES)
def test_the_rule_matches_the_installed_client(
    url: str, tls: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(connect_tls.TOKEN_ENV, raising=False)
    assert connect_tls.client_uses_tls(url, environ={}) is tls
    assert pyspark_uses_tls(url, monkeypatch) is tls


@pytest.mark.parametrize(
    ("url", "tls"), [("sc://127.0.0.1:15002", True), ("sc://localhost:15002", False)]
)
def test_a_token_from_the_environment_counts_too(
    url: str, tls: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(connect_tls.TOKEN_ENV, "from-env")
    assert connect_tls.client_uses_tls(url) is tls
    assert connect_tls.client_transport(url).token_from == "env"
    assert pyspark_uses_tls(url, monkeypatch) is tls


def test_urls_the_client_rejects_are_left_to_it() -> None:
    for url in ("http://h:1/;token=a", "sc://h:1/;token"):
        assert not connect_tls.client_uses_tls(url, environ={})


# -- the probe, against real sockets ---------------------------------------------------


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[socket.socket], None]], int]]:
    """Start a server on 127.0.0.1 whose ``handle(connection)`` answers each client in a
    thread; returns its port. Closed after the test."""
    listeners: list[socket.socket] = []

    def start(handle: Callable[[socket.socket], None]) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def loop() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.settimeout(5)
                    with contextlib.suppress(OSError):  # the probe hung up
                        handle(conn)

        threading.Thread(target=loop, daemon=True).start()
        port: int = listener.getsockname()[1]
        return port

    yield start
    for listener in listeners:
        listener.close()


def plaintext_http(conn: socket.socket) -> None:
    conn.recv(4096)  # the ClientHello, which it cannot read
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def tls_alert(conn: socket.socket) -> None:
    conn.recv(4096)
    conn.sendall(b"\x15\x03\x03\x00\x02\x02\x28")  # fatal handshake_failure


@pytest.fixture(scope="module")
def tls_context(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a certificate")
    folder = tmp_path_factory.mktemp("cert")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1"),
            *("-subj", "/CN=localhost"),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


def endpoint(url: str) -> connect_endpoint.Endpoint:
    return connect_endpoint.parse_remote(url)


def test_a_plaintext_server_is_one_line_without_the_token(
    serve: Callable[[Callable[[socket.socket], None]], int],
) -> None:
    port = serve(plaintext_http)
    assert connect_tls.speaks_tls("127.0.0.1", port) is False
    started = time.monotonic()
    with pytest.raises(ConnectError) as caught:
        connect_tls.check_token_transport(
            endpoint(f"sc://127.0.0.1:{port}/;token=s3cr3t"), environ={}
        )
    assert time.monotonic() - started < 3
    message = str(caught.value)
    assert "\n" not in message and "s3cr3t" not in message
    assert message.startswith(f"The Spark Connect server at sc://127.0.0.1:{port} does not")
    assert "uses TLS when it has a token unless the host is `localhost`" in message
    assert f"write sc://localhost:{port}/;token=... instead" in message
    # With localhost the client sends the token without TLS: no probe, no error.
    connect_tls.check_token_transport(endpoint(f"sc://localhost:{port}/;token=s3cr3t"), environ={})


def test_create_stops_at_the_check_before_opening_a_session(
    serve: Callable[[Callable[[socket.socket], None]], int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(connect_tls.TOKEN_ENV, raising=False)
    port = serve(plaintext_http)
    opened: list[connect_endpoint.Endpoint] = []
    monkeypatch.setattr(connect, "open_session", lambda e, s: opened.append(e))
    with pytest.raises(ConnectError, match="does not speak TLS"):
        connect.create(endpoint(f"sc://127.0.0.1:{port}/;token=abc"), "t", {}, 3.0, 2.0)
    assert opened == []


def test_a_tls_server_passes(
    serve: Callable[[Callable[[socket.socket], None]], int], tls_context: ssl.SSLContext
) -> None:
    def handshake(conn: socket.socket) -> None:
        try:
            with tls_context.wrap_socket(conn, server_side=True):
                pass
        except ssl.SSLError:
            pass  # the probe hangs up after the server's first flight

    port = serve(handshake)
    assert connect_tls.speaks_tls("127.0.0.1", port) is True
    connect_tls.check_token_transport(endpoint(f"sc://127.0.0.1:{port}/;token=abc"), environ={})


def test_a_tls_alert_is_tls_too(serve: Callable[[Callable[[socket.socket], None]], int]) -> None:
    port = serve(tls_alert)
    assert connect_tls.speaks_tls("127.0.0.1", port) is True


def test_silence_closing_and_nothing_listening_are_left_to_the_other_checks(
    serve: Callable[[Callable[[socket.socket], None]], int], tmp_path: Path
) -> None:
    closing = serve(lambda conn: None)
    silent = serve(lambda conn: time.sleep(2))
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nobody = unused.getsockname()[1]
    assert connect_tls.speaks_tls("127.0.0.1", closing) is None
    assert connect_tls.speaks_tls("127.0.0.1", nobody) is None
    started = time.monotonic()
    assert connect_tls.speaks_tls("127.0.0.1", silent, timeout=0.5) is None
    assert time.monotonic() - started < 1.5
    for port in (closing, nobody):
        connect_tls.check_token_transport(endpoint(f"sc://127.0.0.1:{port}/;token=a"), environ={})


def test_the_advice_fits_the_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connect_tls, "speaks_tls", lambda host, port, timeout: False)

    def message(url: str, environ: dict[str, str] | None = None) -> str:
        with pytest.raises(ConnectError) as caught:
            connect_tls.check_token_transport(endpoint(url), environ=environ or {})
        text = str(caught.value)
        assert "s3cr3t" not in text and "from-env" not in text and "\n" not in text
        return text

    remote = message("sc://spark.example:15002/;token=s3cr3t")
    assert "if the server runs on this machine, write sc://localhost:15002/;token=..." in remote
    assert "enable TLS on the server" in remote
    assert "ssh -L 15002:localhost:15002 spark.example" in remote
    ssl_asked = message("sc://localhost:15002/;use_ssl=true;token=s3cr3t")
    assert "use_ssl=true, which makes the Connect client use TLS" in ssl_asked
    assert "drop use_ssl=true" in ssl_asked
    from_env = message("sc://127.0.0.1:15002", {connect_tls.TOKEN_ENV: "from-env"})
    assert "(from SPARK_CONNECT_AUTHENTICATE_TOKEN)" in from_env
