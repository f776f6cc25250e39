"""The versioned request/reply protocol shared by every channel that reaches the kernel:
the control-channel message type, the comm, and the Jupyter server's REST relay.

Documented in docs/protocol.md; change both together, and bump ``PROTOCOL_VERSION`` for
any change a client could notice. Parsing is strict: anything malformed is a
``ProtocolError``, which the channel turns into an error reply, and nothing happens.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .errors import ProtocolError

PROTOCOL_VERSION = 1
#: Kernel message types on the control channel (``kernel.sendControlMessage``).
CONTROL_REQUEST = "spark_sessions_request"
CONTROL_REPLY = "spark_sessions_reply"
#: Comm target name a frontend opens to receive board updates and send requests.
COMM_TARGET = "jupyter_spark_sessions"

_MAX_ID = 256  # characters in a request id, group id or session name
_MAX_GROUPS = 1000  # group ids in one cancel request


@dataclass(frozen=True)
class Request:
    """A valid request. ``action`` is one of ``ACTIONS``; the other fields are set only
    for the actions that take them."""

    action: str
    request_id: str | None = None
    groups: tuple[str, ...] = ()
    session: str | None = None
    all: bool = False
    comm_id: str | None = None
    kind: str = ""
    path: str = ""
    alias: str | None = None
    source: str | None = None  # of a cancel or a stop: where the user asked for it
    query: str | None = None  # of a stop_query: the query's name, id or run id


# action -> the fields it accepts besides version, action and request_id
ACTIONS: dict[str, frozenset[str]] = {
    "list": frozenset(),
    "cancel": frozenset({"groups", "session", "all", "source"}),
    "subscribe": frozenset({"comm_id"}),
    "unsubscribe": frozenset({"comm_id"}),
    "add": frozenset({"session", "kind", "path", "alias"}),
    "stop_query": frozenset({"query", "source"}),
}

ADD_KINDS = ("file", "archive", "pyfile")
CANCEL_SOURCES = ("sidebar", "panel", "cell", "relay", "magic")
_MAX_PATH = 4096


def parse_request(message: Any) -> Request:
    """Validate a request (a JSON object); ProtocolError says what is wrong."""
    if not isinstance(message, dict):
        raise ProtocolError("bad_request", "A request must be a JSON object.")
    version = message.get("version")
    if type(version) is not int or version != PROTOCOL_VERSION:  # True == 1 in Python
        raise ProtocolError(
            "unsupported_version",
            f"Unsupported protocol version {version!r}: this kernel speaks version "
            f"{PROTOCOL_VERSION}.",
        )
    request_id = message.get("request_id")
    if request_id is not None:
        _check_text(request_id, "request_id")
    action = message.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise ProtocolError(
            "unknown_action",
            f"Unknown action {action!r}; expected one of: {', '.join(ACTIONS)}.",
        )
    extra = set(message) - {"version", "action", "request_id"} - ACTIONS[action]
    if extra:
        raise ProtocolError(
            "bad_request", f"Unexpected field(s) for {action!r}: {', '.join(sorted(extra))}."
        )
    if action == "cancel":
        return _parse_cancel(message, request_id)
    if action == "add":
        return _parse_add(message, request_id)
    if action == "stop_query":
        return _parse_stop_query(message, request_id)
    comm_id = message.get("comm_id")
    if comm_id is not None:
        _check_text(comm_id, "comm_id")
    return Request(action=action, request_id=request_id, comm_id=comm_id)


def _parse_cancel(message: dict[str, Any], request_id: str | None) -> Request:
    given = [key for key in ("groups", "session", "all") if key in message]
    if len(given) != 1:
        raise ProtocolError(
            "bad_request", "A cancel request takes exactly one of: groups, session, all."
        )
    source = message.get("source")
    if "source" in message and source not in CANCEL_SOURCES:
        raise ProtocolError("bad_request", f"'source' must be one of: {', '.join(CANCEL_SOURCES)}.")
    request = Request(action="cancel", request_id=request_id, source=source)
    if "all" in message:
        if message["all"] is not True:
            raise ProtocolError("bad_request", "'all' must be true.")
        return replace(request, all=True)
    if "session" in message:
        _check_text(message["session"], "session")
        return replace(request, session=message["session"])
    groups = message["groups"]
    if not isinstance(groups, list) or not groups or len(groups) > _MAX_GROUPS:
        raise ProtocolError(
            "bad_request", f"'groups' must be a list of 1 to {_MAX_GROUPS} group ids."
        )
    for group in groups:
        _check_text(group, "each group id")
    return replace(request, groups=tuple(groups))


def _parse_stop_query(message: dict[str, Any], request_id: str | None) -> Request:
    _check_text(message.get("query"), "query")
    source = message.get("source")
    if "source" in message and source not in CANCEL_SOURCES:
        raise ProtocolError("bad_request", f"'source' must be one of: {', '.join(CANCEL_SOURCES)}.")
    return Request(
        action="stop_query", request_id=request_id, query=message["query"], source=source
    )


def _parse_add(message: dict[str, Any], request_id: str | None) -> Request:
    _check_text(message.get("session"), "session")
    kind = message.get("kind")
    if kind not in ADD_KINDS:
        raise ProtocolError("bad_request", f"'kind' must be one of: {', '.join(ADD_KINDS)}.")
    path = message.get("path")
    if not isinstance(path, str) or not path or len(path) > _MAX_PATH:
        raise ProtocolError("bad_request", f"'path' must be a string of 1 to {_MAX_PATH} chars.")
    alias = message.get("alias")
    if alias is not None:
        _check_text(alias, "alias")
    return Request(
        action="add",
        request_id=request_id,
        session=message["session"],
        kind=kind,
        path=path,
        alias=alias,
    )


def _check_text(value: Any, what: str) -> None:
    if not isinstance(value, str) or not value or len(value) > _MAX_ID:
        raise ProtocolError("bad_request", f"{what} must be a string of 1 to {_MAX_ID} chars.")


def ok_reply(request: Request, **fields: Any) -> dict[str, Any]:
    """A success reply to ``request`` carrying ``fields``."""
    return {
        "version": PROTOCOL_VERSION,
        "request_id": request.request_id,
        "action": request.action,
        "status": "ok",
        **fields,
    }


def error_reply(message: Any, code: str, text: str) -> dict[str, Any]:
    """An error reply; echoes the request id when the request had a usable one."""
    request_id = message.get("request_id") if isinstance(message, dict) else None
    return {
        "version": PROTOCOL_VERSION,
        "request_id": request_id if isinstance(request_id, str) else None,
        "status": "error",
        "error": {"code": code, "message": text},
    }


def board_update(board: dict[str, Any]) -> dict[str, Any]:
    """The whole board, pushed on a subscribed comm the first time it changes."""
    return {"version": PROTOCOL_VERSION, "type": "board", "board": board}


def board_patch(sent: dict[str, Any], board: dict[str, Any]) -> dict[str, Any]:
    """What changed from ``sent`` (the board a comm has) to ``board``: the message
    pushed on a subscribed comm after the first. ``apply_board_patch`` undoes it."""
    before = {g["id"]: g for g in sent["groups"]}
    now = [g["id"] for g in board["groups"]]
    shown = set(now)
    patch: dict[str, Any] = {
        "version": PROTOCOL_VERSION,
        "type": "board_patch",
        "seq": board["seq"],
        "base_seq": sent["seq"],
        "updated_at": board["updated_at"],
        # Unchanged groups are the very dicts sent before (GroupView.as_dict).
        "groups": [g for g in board["groups"] if not _same(before.get(g["id"]), g)],
        "removed_groups": [gid for gid in before if gid not in shown],
        "other_running_jobs": board["other_running_jobs"],
        "error": board["error"],
    }
    if board["sessions"] != sent["sessions"]:
        patch["sessions"] = board["sessions"]
    if board["queries"] != sent["queries"]:
        patch["queries"] = board["queries"]
    if _patched_order(list(before), patch) != now:  # a group first shown late
        patch["order"] = now
    return patch


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


def apply_board_patch(board: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """The board ``patch`` makes of ``board`` (which must be the one at its
    ``base_seq``: a frontend whose board is not asks for the whole board again)."""
    if board["seq"] != patch["base_seq"]:
        raise ValueError(f"patch on board {patch['base_seq']}, not {board['seq']}")
    groups = {g["id"]: g for g in board["groups"]}
    groups.update((g["id"], g) for g in patch["groups"])
    order = patch.get("order") or _patched_order(list(groups), patch)
    return {
        "seq": patch["seq"],
        "updated_at": patch["updated_at"],
        "sessions": patch.get("sessions", board["sessions"]),
        "groups": [groups[gid] for gid in order],
        "other_running_jobs": patch["other_running_jobs"],
        "error": patch["error"],
        "queries": patch.get("queries", board["queries"]),
    }


def _patched_order(ids: list[str], patch: dict[str, Any]) -> list[str]:
    # Without an explicit order: the groups kept where they were, the new ones after.
    removed = set(patch["removed_groups"])
    kept = [gid for gid in ids if gid not in removed]
    known = set(ids)
    return kept + [g["id"] for g in patch["groups"] if g["id"] not in known]
