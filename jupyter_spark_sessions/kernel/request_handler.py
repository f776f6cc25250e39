"""The one request handler behind every channel (control channel, comm, magics' peers).

It runs on whatever thread delivered the request (the kernel's control thread, a
subshell) and must return within milliseconds: it reads the board's latest snapshot
and records cancel requests; it never calls into Spark itself, except to describe a
session the registry holds that no poll has described yet (``_board``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Protocol

from .. import protocol
from ..board.job_board import JobBoard
from ..board.snapshot import BoardSnapshot, SessionView
from ..errors import (
    ProtocolError,
    SparkSessionsError,
    UnknownGroupError,
    UnknownQueryError,
    UnknownSessionError,
)

if TYPE_CHECKING:
    from ..sessions.registry import SessionRegistry

log = logging.getLogger(__name__)


class CommLike(Protocol):
    """What the handler needs of a comm."""

    comm_id: str

    def send(self, data: Any) -> None: ...


class RequestHandler:
    """Validates requests against the protocol and answers them from the job board."""

    def __init__(self, registry: SessionRegistry, board: JobBoard) -> None:
        self.registry = registry
        self.board = board
        self._lock = threading.Lock()
        self._comms: dict[str, CommLike] = {}
        self._subscriptions: dict[str, Callable[[], None]] = {}

    def handle(self, message: Any, comm: CommLike | None = None) -> dict[str, Any]:
        """The reply to one request (never raises: errors become error replies).

        ``comm`` is the comm the request arrived on, if any (``subscribe`` without a
        ``comm_id`` subscribes that one)."""
        try:
            request = protocol.parse_request(message)
            return self._dispatch(request, comm)
        except ProtocolError as exc:
            return protocol.error_reply(message, exc.code, exc.message)
        except UnknownGroupError as exc:
            return protocol.error_reply(message, "unknown_group", str(exc))
        except UnknownSessionError as exc:
            return protocol.error_reply(message, "unknown_session", str(exc))
        except UnknownQueryError as exc:
            return protocol.error_reply(message, "unknown_query", str(exc))
        except SparkSessionsError as exc:
            return protocol.error_reply(message, "failed", str(exc))
        except Exception as exc:  # a bug must not take the control channel down
            log.exception("request %r failed", message)
            return protocol.error_reply(message, "internal_error", f"{type(exc).__name__}: {exc}")

    def _dispatch(self, request: protocol.Request, comm: CommLike | None) -> dict[str, Any]:
        if request.action == "list":
            return protocol.ok_reply(request, board=self._board().to_dict())
        if request.action == "add":
            return self._add(request, comm)
        if request.action == "cancel":
            outcome = self.board.request_cancel(
                request.groups,
                session=request.session,
                everything=request.all,
                source=request.source,
            )
            return protocol.ok_reply(
                request, cancelling=list(outcome.cancelling), messages=list(outcome.messages)
            )
        if request.action == "stop_query":
            assert request.query is not None  # parse_request checked it
            view = self.board.queries.request_stop(request.query, request.source)
            return protocol.ok_reply(request, query=asdict(view))
        target = self._comm_for(request, comm)
        if request.action == "subscribe":
            self.subscribe(target)
            return protocol.ok_reply(request, comm_id=target.comm_id, board=self._board().to_dict())
        self.unsubscribe(target.comm_id)
        return protocol.ok_reply(request, comm_id=target.comm_id)

    def _board(self) -> BoardSnapshot:
        """The board with the sessions the registry holds now: its groups and jobs are
        the last poll's, but a session created or stopped since is (or is not) there.

        A session the last poll described keeps that view (no Spark call); one it has
        not seen yet is described here, as the poller would (``SessionSource.describe``:
        a few py4j calls, most cached per backend: measured 12 to 84 ms cold, on a thread
        new to py4j, under 0.1 ms once a poll described it). Its running jobs are those
        the board shows in its groups. The board publishes the result at once (a new
        ``seq``), as it does a cancel's "cancelling"."""
        snapshot, sessions = self.board.snapshot(), self.board.sessions  # the registry
        views: list[SessionView] = []
        for name in sessions.names():
            view = next((v for v in snapshot.sessions if v.name == name), None)
            if view is None:
                running = sum(
                    1 for g in snapshot.groups if g.session == name for j in g.jobs if j.running
                )
                try:
                    view = sessions.describe(name, running)
                except UnknownSessionError:
                    continue  # stopped meanwhile
            views.append(view)
        if tuple(views) == snapshot.sessions:
            return snapshot
        return self.board.publish_sessions(tuple(views))

    def _add(self, request: protocol.Request, comm: CommLike | None) -> dict[str, Any]:
        if comm is None:
            raise ProtocolError(
                "bad_request",
                "'add' is taken on the comm only: it copies files, and the control channel "
                "must stay free for cancel and interrupts.",
            )
        registry = self.registry
        assert request.session is not None  # parse_request checked it
        if request.kind == "file":
            result = registry.add_file(request.session, request.path, request.alias)
        elif request.kind == "archive":
            result = registry.add_archive(request.session, request.path, request.alias)
        else:
            if request.alias is not None:
                raise ProtocolError("bad_request", "A Python file takes no alias.")
            result = registry.add_pyfile(request.session, request.path)
        item = result.artifact
        return protocol.ok_reply(
            request,
            added=result.added,
            artifact={"name": item.name, "kind": item.kind, "size": item.size, "path": item.path},
        )

    def _comm_for(self, request: protocol.Request, comm: CommLike | None) -> CommLike:
        if request.comm_id is None:
            if comm is None:
                raise ProtocolError(
                    "bad_request", f"{request.action!r} here needs the comm_id of an open comm."
                )
            return comm
        with self._lock:
            found = self._comms.get(request.comm_id)
        if found is None:
            raise ProtocolError(
                "unknown_comm", f"No open {protocol.COMM_TARGET!r} comm {request.comm_id!r}."
            )
        return found

    # -- comms ---------------------------------------------------------------------------

    def attach_comm(self, comm: CommLike) -> None:
        """A frontend opened a comm to this project."""
        with self._lock:
            self._comms[comm.comm_id] = comm

    def detach_comm(self, comm_id: str) -> None:
        """The comm closed: forget it and stop pushing to it."""
        self.unsubscribe(comm_id)
        with self._lock:
            self._comms.pop(comm_id, None)

    def subscribe(self, comm: CommLike) -> None:
        """Push every board change to ``comm`` (from the board's producer thread): the
        whole board first, then what changed since the last push."""
        sent: dict[str, Any] | None = None

        def push(snapshot: BoardSnapshot) -> None:
            nonlocal sent
            board = snapshot.to_dict()
            if sent is None:
                comm.send(protocol.board_update(board))
            else:
                comm.send(protocol.board_patch(sent, board))
            sent = board

        with self._lock:
            if comm.comm_id in self._subscriptions:
                return
            self._comms.setdefault(comm.comm_id, comm)
            self._subscriptions[comm.comm_id] = self.board.subscribe(push)

    def unsubscribe(self, comm_id: str) -> None:
        with self._lock:
            unsubscribe = self._subscriptions.pop(comm_id, None)
        if unsubscribe is not None:
            unsubscribe()
