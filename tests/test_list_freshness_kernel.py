"""``list`` names the sessions the registry holds at that moment (issue 39, item 3):
asked on the control channel the moment a ``create`` or ``stop`` cell ended, it names
the new session and no longer the stopped one. Jobs may lag by a poll; sessions do not.
Through the run's shared kernel (the REST relay answers with the same handler), and
through the real registry, board and handler on a fake backend with no poll at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_backend import FakeBackend

from jupyter_spark_sessions.app import SparkSessionsApp
from jupyter_spark_sessions.config import SparkSessionsConfig
from jupyter_spark_sessions.kernel.request_handler import RequestHandler
from jupyter_spark_sessions.protocol import CONTROL_REQUEST
from kernel_driver import Kernel

LIST = {"version": 1, "action": "list"}


def test_list_describes_only_the_sessions_no_poll_has_seen(tmp_path: Path) -> None:
    app = SparkSessionsApp(SparkSessionsConfig(session_root=str(tmp_path / "root")))
    app.poller.start = lambda: None  # type: ignore[method-assign]  # no poll ever runs
    described: list[str] = []
    describe = app.describe
    app.describe = lambda name, running_jobs=None: (  # type: ignore[method-assign]
        described.append(name) or describe(name, running_jobs)
    )
    handler = RequestHandler(app.registry, app.board)

    def listed_names() -> list[str]:
        return [s["name"] for s in handler.handle(LIST)["board"]["sessions"]]

    app.registry.register("a", FakeBackend("a"), "created", isolated=True)
    assert listed_names() == ["a"] and described == ["a"]
    seq = app.board.snapshot().seq
    assert seq == 1, "published: the comm's next push and the next list have it"
    assert listed_names() == ["a"] and described == ["a"], "described once"
    assert app.board.snapshot().seq == seq
    app.registry.register("b", FakeBackend("b"), "created", isolated=True)
    assert listed_names() == ["a", "b"] and described == ["a", "b"]
    app.registry.stop("a")
    assert listed_names() == ["b"] and described == ["a", "b"]
    assert [s.name for s in app.board.snapshot().sessions] == ["b"]
    app.registry.shutdown()


def listed(kernel: Kernel) -> dict[str, Any]:
    reply = kernel.control(CONTROL_REQUEST, {"version": 1, "action": "list"})["content"]
    assert reply["status"] == "ok", reply
    board: dict[str, Any] = reply["board"]
    return board


def names(board: dict[str, Any]) -> list[str]:
    return [s["name"] for s in board["sessions"]]


@pytest.mark.spark
@pytest.mark.kernel
def test_list_right_after_create_and_stop_names_exactly_the_registered_sessions(
    kernel: Kernel,
) -> None:
    seqs = []
    for round_ in range(4):
        a, b = f"fresh{round_}a", f"fresh{round_}b"
        kernel.ok(f"%spark_session create {a}")
        board = listed(kernel)
        assert names(board) == [a], (round_, board["seq"], names(board))
        # The view of a session no poll has described yet is whole, as a poll's is.
        assert board["sessions"][0]["backend"] == "classic"
        assert board["sessions"][0]["master"] == "local[2]"
        assert board["sessions"][0]["session_id"], board["sessions"][0]
        seqs.append(board["seq"])
        kernel.ok(f"%spark_session create {b}")
        seqs.append(listed(kernel)["seq"])
        assert names(listed(kernel)) == [a, b], round_
        kernel.ok(f"%spark_session stop {a}")
        assert names(listed(kernel)) == [b], round_
        kernel.ok(f"%spark_session stop {b}\n%spark_session create {a}")
        assert names(listed(kernel)) == [a], round_
        kernel.ok(f"%spark_session stop {a}")
        assert names(listed(kernel)) == [], round_
    assert seqs == sorted(seqs), seqs  # the board's seq never goes back
