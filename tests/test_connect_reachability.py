"""A Connect session's reachability as a cell sees it: the board's cached TCP check
never refuses a cell on its own (the server may have come back since)."""

from __future__ import annotations

import socket
from types import SimpleNamespace
from typing import Any

import pytest

from jupyter_spark_sessions.backends.connect import ConnectBackend
from jupyter_spark_sessions.backends.connect_endpoint import Endpoint
from jupyter_spark_sessions.errors import ConnectError


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def backend_on(port: int) -> ConnectBackend:
    session: Any = SimpleNamespace(session_id="s-1", is_stopped=False)
    endpoint = Endpoint(url=f"sc://127.0.0.1:{port}", host="127.0.0.1", port=port)
    return ConnectBackend(session, "r", endpoint, recheck_seconds=3600.0)


def test_a_cell_rechecks_a_server_the_board_last_saw_down() -> None:
    port = free_port()
    backend = backend_on(port)
    assert backend.problem().startswith("its Spark Connect server sc://127.0.0.1:")  # cached
    with pytest.raises(ConnectError, match="cannot be reached"):
        backend.require_usable("r")  # still down: refused, in one line
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        assert backend.problem()  # the views' check is cached for recheck_seconds ...
        backend.require_usable("r")  # ... a cell's is its own: the server is back
        assert backend.problem() == ""
