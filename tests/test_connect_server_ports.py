"""The local Spark Connect server's ports: chosen free, bound seconds later by its JVM.
Another process may take one in between (CI starts a JVM every few seconds, each
binding ports of its own); the server must then start on new ones, never hand out the
port another process listens on."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_spark_sessions.backends import local_connect_server
from jupyter_spark_sessions.backends.local_connect_server import (
    LocalConnectServer,
    listening_ports,
)

pytestmark = [pytest.mark.spark]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another process (here: this one) listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def test_a_port_taken_after_it_was_chosen_means_new_ports_never_anothers_listener(
    taken_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen: list[int] = []
    real_free_port = local_connect_server._free_port
    # Each start chooses the gRPC port, then the UI's. The first start's gRPC port is
    # taken (its JVM cannot bind it), the second's UI port (Spark's UI moves to the
    # next port: the views would link another process), the third gets free ones.
    taken_at = {0: taken_port, 3: taken_port}

    def choose() -> int:
        chosen.append(taken_at.get(len(chosen)) or real_free_port())
        return chosen[-1]

    monkeypatch.setattr(local_connect_server, "_free_port", choose)
    server = LocalConnectServer("local[1]", {}, tmp_path, 120.0)
    try:
        endpoint = server.start()
        assert len(chosen) == 6 and taken_port not in (endpoint.port, chosen[-1]), chosen
        assert (endpoint.port, endpoint.ui_url) == (chosen[4], f"http://127.0.0.1:{chosen[5]}")
        assert server.pid is not None
        assert {chosen[4], chosen[5]} <= listening_ports(server.pid)
        log = tmp_path / local_connect_server.SERVER_LOG
        assert not local_connect_server.port_was_taken(log)  # the running server's log
    finally:
        server.stop()


def test_where_the_system_does_not_say_who_listens_the_server_is_ready_when_its_port_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psutil

    def denied(pid: int) -> None:
        raise psutil.AccessDenied(pid)

    with monkeypatch.context() as patched:
        patched.setattr(psutil, "Process", denied)
        assert listening_ports(1) is None  # not "listens on nothing"
    monkeypatch.setattr(local_connect_server, "listening_ports", lambda pid: None)
    server = LocalConnectServer("local[1]", {"spark.ui.enabled": "false"}, tmp_path, 120.0)
    try:
        endpoint = server.start()
        assert local_connect_server.reachable(endpoint) == ""
    finally:
        server.stop()
