"""protocol.schema.json is the protocol's one definition: the board the kernel sends,
every reply of the real request handler and the comm's messages follow it, and
protocol.parse_request accepts exactly the requests it allows."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import threading
from dataclasses import replace
from importlib import resources
from typing import Any

import pytest
from board_helpers import make_board, session_view
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from jupyter_spark_sessions import protocol
from jupyter_spark_sessions.board.job_board import JobBoard
from jupyter_spark_sessions.board.snapshot import (
    BoardSnapshot,
    FileView,
    GroupView,
    JobView,
    QueryView,
    SessionView,
    StageView,
    TaskCounts,
)
from jupyter_spark_sessions.cells import error_lines
from jupyter_spark_sessions.errors import ProtocolError
from jupyter_spark_sessions.files.artifacts import AddResult, Artifact
from jupyter_spark_sessions.kernel.channels import KernelChannels
from jupyter_spark_sessions.kernel.request_handler import RequestHandler

# -- the objects under test: the one place to update when their constructors change --


class FakeRegistry:
    """What ``add`` needs of the registry: every add succeeds."""

    def add_file(self, session: str, path: str, alias: str | None) -> AddResult:
        return _added(alias or path, "file")

    def add_archive(self, session: str, path: str, alias: str | None) -> AddResult:
        return _added(alias or path.removesuffix(".zip"), "archive")

    def add_pyfile(self, session: str, path: str) -> AddResult:
        return _added(path, "pyfile", added=False)


def _added(name: str, kind: Any, added: bool = True) -> AddResult:
    artifact = Artifact(name, kind, 3, 1796070550.0, f"/work/{name}", f"/tmp/etl/{name}")
    return AddResult(artifact=artifact, added=added)


def make_handler() -> tuple[RequestHandler, JobBoard]:
    """The real handler and board over fake sessions (board_helpers.make_board, as
    tests/test_job_board.py builds its boards), showing one running group (etl:12) and
    one that succeeded (etl:13)."""
    board = make_board("etl")
    handler = RequestHandler(FakeRegistry(), board)  # type: ignore[arg-type]
    board.cell_started("etl", 12, "df.count()")
    jobs = [_job(31, "RUNNING"), _job(32, "SUCCEEDED")]
    # Connected: a disconnected session's running jobs end as lost.
    board.update(
        jobs, {31: ("etl", 12), 32: ("etl", 13)}, 0, [replace(_session(), disconnected="")]
    )
    return handler, board


# -- the schema ----------------------------------------------------------------------

SCHEMA = json.loads(
    resources.files("jupyter_spark_sessions").joinpath("protocol.schema.json").read_text()
)
_REGISTRY = Registry().with_resource(SCHEMA["$id"], Resource.from_contents(SCHEMA))


def errors(instance: Any, definition: str | None = None) -> list[str]:
    """Why ``instance`` is not valid under the schema (or one of its ``$defs``)."""
    schema = SCHEMA if definition is None else {"$ref": f"{SCHEMA['$id']}#/$defs/{definition}"}
    validator = Draft202012Validator(schema, registry=_REGISTRY)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]


def wire(data: Any) -> Any:
    """``data`` as a frontend receives it (JSON: tuples become arrays)."""
    return json.loads(json.dumps(data))


def _tasks(n: int = 1) -> TaskCounts:
    return TaskCounts(total=8 * n, active=2, completed=5, failed=1, killed=1, skipped=n)


def _job(job_id: int, status: str) -> JobView:
    return JobView(
        id=job_id,
        name="collect at <stdin>:1",
        status=status,
        submitted_at=1796070550.0,
        completed_at=None if status == "RUNNING" else 1796070552.5,
        tasks=_tasks(),
        stage_ids=(44, 45),
        kill_reasons=("Stage cancelled: job cancelled",),
        stages=(StageView(id=45, name="collect", attempt=1, tasks=_tasks()),),
        operation_id="7c1e-op",
    )


def _session() -> SessionView:
    return session_view(
        "etl",
        session_id="9f2d",
        directory="/tmp/etl-9f2d",
        backend="connect",
        master="sc://localhost:15002",
        disconnected="localhost:15002 unreachable: connection refused",
        files=(FileView("lookup.csv", "file", 512), FileView("deps", "archive", 4096)),
        running_jobs=1,
        ui_url="http://127.0.0.1:4040",
        ui_note="not in a real session beside ui_url: every field set for the check",
        ui_protected=True,
        operations_page="connect/",
        share="weight 3, min share 1",
        slots=4,
        packages="jsspkg==1.0, -r req.txt",
        active_queries=1,
    )


def _query() -> QueryView:
    """A streaming query with every field away from its default."""
    return QueryView(
        id="0f1e",
        run_id="7a2b",
        name="clicks",
        session="etl",
        state="failed",
        error="ZeroDivisionError: division by zero",
        started_by="etl:11",
        started_at=1796070540.0,
        ended_at=1796070552.0,
        batch_id=80,
        input_rows=51,
        input_rate=5.1,
        process_rate=48.2,
        batch_duration_ms=106,
        message="Stopped",
        stop_source="sidebar",
        history=((1796070551.0, 5.0, 47.5), (1796070552.0, 5.1, 48.2)),
    )


def full_board() -> dict[str, Any]:
    """A board with every field set to something other than its default."""
    group = GroupView(
        id="etl:12",
        session="etl",
        execution_count=12,
        description="df.groupBy('k').count().collect()",
        state="cancelled",
        cell_running=True,
        submitted_at=1796070550.0,
        completed_at=1796070552.5,
        cancel_requested_at=1796070551.0,
        tasks=_tasks(2),
        tasks_still_running=1,
        jobs=(_job(31, "RUNNING"), _job(32, "FAILED")),
    )
    snapshot = BoardSnapshot(
        seq=42,
        updated_at=1796070553.1,
        sessions=(_session(),),
        groups=(group,),
        other_running_jobs=2,
        error="Spark status unavailable: py4j gateway closed",
        queries=(_query(),),
    )
    board: dict[str, Any] = wire(snapshot.to_dict())
    return board


class RecordingComm:
    """A comm that records what the kernel sends on it."""

    def __init__(self, comm_id: str = "comm-1") -> None:
        self.comm_id = comm_id
        self.sent: list[Any] = []
        self._reply_subshell_for: Any = None  # what ipykernel_internals rewires
        self.handlers: dict[str, Any] = {}

    def send(self, data: Any) -> None:
        self.sent.append(wire(data))

    def on_msg(self, callback: Any) -> None:
        self.handlers["msg"] = callback

    def on_close(self, callback: Any) -> None:
        self.handlers["close"] = callback


def request(action: str, **fields: Any) -> dict[str, Any]:
    return {"version": 1, "action": action, **fields}


# -- the schema itself ---------------------------------------------------------------


def test_the_schema_is_valid_draft_2020_12_and_names_the_protocols_constants() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    defs = SCHEMA["$defs"]
    assert defs["Version"]["const"] == protocol.PROTOCOL_VERSION
    assert defs["ControlRequestType"]["const"] == protocol.CONTROL_REQUEST
    assert defs["ControlReplyType"]["const"] == protocol.CONTROL_REPLY
    assert defs["CommTarget"]["const"] == protocol.COMM_TARGET
    assert tuple(defs["AddKind"]["enum"]) == protocol.ADD_KINDS
    assert tuple(defs["CancelSource"]["enum"]) == protocol.CANCEL_SOURCES
    # Every source a request may name is told in the cancelled cell's one line, as are
    # the kernel's own (a stop, an Interrupt), which no request names.
    assert set(error_lines.CANCEL_FROM) == {*protocol.CANCEL_SOURCES, "stop", "interrupt"}


def test_each_request_in_the_schema_takes_the_fields_protocol_py_accepts() -> None:
    defs = SCHEMA["$defs"]
    fields: dict[str, set[str]] = {}
    for ref in defs["Request"]["oneOf"]:
        definition = defs[ref["$ref"].rsplit("/", 1)[1]]
        for variant in definition.get("oneOf", [{"$ref": ref["$ref"]}]):
            properties = defs[variant["$ref"].rsplit("/", 1)[1]]["properties"]
            action = properties["action"]["const"]
            fields.setdefault(action, set()).update(properties)
    assert set(fields) == set(protocol.ACTIONS)
    for action, accepted in protocol.ACTIONS.items():
        assert fields[action] - {"version", "action", "request_id"} == accepted, action


# -- the board -----------------------------------------------------------------------

_BOARD_OBJECTS = {
    "Board": BoardSnapshot,
    "Session": SessionView,
    "SessionFile": FileView,
    "Group": GroupView,
    "Job": JobView,
    "Stage": StageView,
    "TaskCounts": TaskCounts,
    "Query": QueryView,
}


@pytest.mark.parametrize(("definition", "cls"), _BOARD_OBJECTS.items())
def test_the_board_schema_requires_exactly_the_snapshot_fields(definition: str, cls: type) -> None:
    schema = SCHEMA["$defs"][definition]
    names = {f.name for f in dataclasses.fields(cls)}
    assert set(schema["properties"]) == names
    assert set(schema["required"]) == names
    assert schema["additionalProperties"] is False


def test_a_fully_populated_board_is_valid() -> None:
    assert errors(full_board(), "Board") == []


def test_the_full_boards_session_sets_every_field_away_from_its_default() -> None:
    """So that a field added to SessionView is checked against the schema with a value."""
    session = _session()
    for field in dataclasses.fields(session):
        if field.default is not dataclasses.MISSING:
            assert getattr(session, field.name) != field.default, field.name


def _objects(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths of every JSON object in ``value``."""
    if isinstance(value, dict):
        found = [path]
        for key, item in value.items():
            found += _objects(item, (*path, key))
        return found
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _objects(item, (*path, i))]
    return []


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


@pytest.mark.parametrize("path", _objects(full_board()), ids=str)
def test_a_board_missing_a_field_or_with_an_unknown_one_is_invalid(
    path: tuple[Any, ...],
) -> None:
    board = full_board()
    for key in _at(board, path):
        missing = copy.deepcopy(board)
        del _at(missing, path)[key]
        assert errors(missing, "Board"), f"{path} without {key!r} passed"
    extra = copy.deepcopy(board)
    _at(extra, path)["surprise"] = 0
    assert errors(extra, "Board"), f"{path} with an unknown field passed"


# -- the request handler's replies ---------------------------------------------------


def test_list_and_cancel_replies_are_valid() -> None:
    handler, _ = make_handler()
    replies = {
        "ListReply": handler.handle(request("list", request_id="r1")),
        "CancelReply": handler.handle(request("cancel", groups=["etl:12"])),
    }
    assert replies["CancelReply"]["cancelling"] == ["etl:12"]
    finished = handler.handle(request("cancel", groups=["etl:13"], request_id="r2"))
    assert finished["messages"] == ["Group etl:13 has no running job (succeeded)."]
    for reply in (
        finished,
        handler.handle(request("cancel", session="etl")),
        handler.handle(request("cancel", all=True)),
    ):
        assert errors(wire(reply), "CancelReply") == []
    for definition, reply in replies.items():
        assert errors(wire(reply), definition) == []
        assert errors(wire(reply)) == []


class StoppableQuery:
    """What the board reads of a streaming query, without Spark (the reply's shape is
    under test here; tests/test_streaming_kernel.py stops real ones)."""

    id, runId, name = "0f1e", "7a2b", "clicks"
    isActive, lastProgress, status = True, None, {"message": "Waiting for data to arrive"}

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()


def test_a_stop_query_reply_is_valid_and_a_second_stop_is_one_line() -> None:
    handler, board = make_handler()
    query = StoppableQuery()
    board.queries.started(query, "etl", 11)
    reply = handler.handle(request("stop_query", query="clicks", source="sidebar"))
    assert errors(wire(reply), "StopQueryReply") == [] and errors(wire(reply)) == []
    assert reply["query"]["state"] == "stopping" and reply["query"]["started_by"] == "etl:11"
    assert query.stopped.wait(5), "stop() is called, on a thread of its own"
    again = handler.handle(request("stop_query", query="7a2b"))
    assert again["status"] == "ok" and again["query"]["state"] == "stopping"


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (request("cancel", groups=["etl:99"], request_id="r3"), "unknown_group"),
        (request("cancel", session="nope"), "unknown_session"),
        (request("stop_query", query="no-such-query"), "unknown_query"),
        (request("unsubscribe", comm_id="no-such-comm"), "unknown_comm"),
        (request("subscribe"), "bad_request"),  # the control channel: no comm to default to
        (request("add", session="etl", kind="file", path="x.csv"), "bad_request"),  # control
        (request("list", request_id="r" * 300), "bad_request"),  # echoed, though too long
        (request("list", extra=1), "bad_request"),
        ({"version": 2, "action": "list"}, "unsupported_version"),
        (request("stop"), "unknown_action"),
        ("not an object", "bad_request"),
    ],
)
def test_error_replies_are_valid(message: Any, code: str) -> None:
    handler, _ = make_handler()
    reply = wire(handler.handle(message))
    assert reply["error"]["code"] == code
    assert errors(reply, "ErrorReply") == []
    assert errors(reply, "Reply") == []


def test_subscribe_unsubscribe_and_board_pushes_are_valid() -> None:
    handler, board = make_handler()
    comm = RecordingComm()
    subscribed = wire(handler.handle(request("subscribe"), comm))
    assert errors(subscribed, "SubscribeReply") == []
    board.update([_job(31, "SUCCEEDED")], {31: ("etl", 12)}, 1, [_session()])
    assert [m["type"] for m in comm.sent] == ["board"], "the whole board first"
    board.update([_job(33, "RUNNING")], {33: ("etl", 14)}, 0, [_session()])
    assert [m["type"] for m in comm.sent] == ["board", "board_patch"], "then what changed"
    assert errors(comm.sent[0], "BoardMessage") == []
    assert errors(comm.sent[1], "BoardPatchMessage") == []
    for pushed in comm.sent:
        assert errors(pushed, "CommMessage") == []
    assert [g["id"] for g in comm.sent[1]["groups"]] == ["etl:14"], "only the new group"
    followed = protocol.apply_board_patch(comm.sent[0]["board"], comm.sent[1])
    assert followed == wire(board.snapshot().to_dict())
    # From the control channel, naming the comm.
    again = wire(handler.handle(request("subscribe", comm_id="comm-1", request_id="s")))
    assert errors(again, "SubscribeReply") == []
    gone = wire(handler.handle(request("unsubscribe", comm_id="comm-1")))
    assert gone["comm_id"] == "comm-1"
    assert errors(gone, "UnsubscribeReply") == []
    assert errors(wire(handler.handle(request("unsubscribe"), comm)), "UnsubscribeReply") == []


def test_add_replies_are_valid() -> None:
    handler, _ = make_handler()
    comm = RecordingComm()
    for message in (
        request("add", session="etl", kind="file", path="lookup.csv", request_id="a1"),
        request("add", session="etl", kind="archive", path="deps.zip", alias="deps"),
        request("add", session="etl", kind="pyfile", path="helpers.py"),
    ):
        reply = wire(handler.handle(message, comm))
        assert reply["status"] == "ok", reply
        assert errors(reply, "AddReply") == []
    refused = request("add", session="etl", kind="pyfile", path="h.py", alias="x")
    assert errors(wire(handler.handle(refused, comm)), "ErrorReply") == []


def test_the_comm_sends_replies_and_board_pushes_the_schema_allows() -> None:
    handler, board = make_handler()
    comm = RecordingComm()
    channels = KernelChannels(kernel=None, handler=handler)
    channels._on_comm_open(comm, {"content": {"data": request("subscribe", request_id="s1")}})
    comm.handlers["msg"](
        {"content": {"data": request("add", session="etl", kind="file", path="x.csv")}}
    )
    comm.handlers["msg"]({"content": {"data": request("cancel", groups=[])}})
    board.update([_job(31, "FAILED")], {31: ("etl", 12)}, 0, [_session()])
    kinds = [(m["type"], m.get("action", m.get("status"))) for m in comm.sent]
    assert kinds == [
        ("reply", "subscribe"),
        ("reply", "add"),
        ("reply", "error"),
        ("board", None),
    ]
    for message in comm.sent:
        assert errors(message, "CommMessage") == []
    # A reply on the comm is marked as one; the control channel's are not.
    assert errors({**comm.sent[0], "type": "board"}, "CommMessage")
    assert errors({k: v for k, v in comm.sent[0].items() if k != "type"}, "CommReply")


# -- requests: protocol.parse_request and the schema agree ---------------------------

GOOD_REQUESTS = [
    request("list"),
    request("list", request_id="r1"),
    request("list", request_id=None),
    request("cancel", groups=["etl:12"]),
    request("cancel", groups=[f"etl:{n}" for n in range(1000)], request_id="r" * 256),
    request("cancel", session="etl"),
    request("cancel", session="s" * 256),
    request("cancel", all=True),
    request("subscribe"),
    request("subscribe", comm_id="c1", request_id="r2"),
    request("subscribe", comm_id=None),
    request("unsubscribe", comm_id="c1"),
    request("add", session="etl", kind="file", path="data/lookup.csv"),
    request("add", session="etl", kind="archive", path="/abs/deps.zip", alias="deps"),
    request("add", session="etl", kind="pyfile", path="p" * 4096, alias=None),
    request("cancel", groups=["etl:12"], source="sidebar"),
    request("cancel", session="etl", source="cell"),
    request("cancel", all=True, source="relay"),
    request("stop_query", query="clicks"),
    request("stop_query", query="7a2b-run", source="sidebar"),
]

BAD_REQUESTS = {
    "not an object": ["list"],
    "no version": {"action": "list"},
    "wrong version": request("list", version=2),
    "version as text": request("list", version="1"),
    "no action": {"version": 1},
    "unknown action": request("stop"),
    "extra field": request("list", groups=["etl:12"]),
    "unknown field": request("subscribe", verbose=True),
    "empty request id": request("list", request_id=""),
    "too long request id": request("list", request_id="r" * 257),
    "request id not text": request("list", request_id=7),
    "cancel without target": request("cancel"),
    "groups and session": request("cancel", groups=["etl:12"], session="etl"),
    "session and all": request("cancel", session="etl", all=True),
    "groups and all": request("cancel", groups=["etl:12"], all=True),
    "empty groups": request("cancel", groups=[]),
    "too many groups": request("cancel", groups=[f"etl:{n}" for n in range(1001)]),
    "groups not a list": request("cancel", groups="etl:12"),
    "empty group id": request("cancel", groups=[""]),
    "too long group id": request("cancel", groups=["g" * 257]),
    "group id not text": request("cancel", groups=[12]),
    "all false": request("cancel", all=False),
    "unknown cancel source": request("cancel", all=True, source="bookmarklet"),
    "cancel source not text": request("cancel", session="etl", source=1),
    "empty session": request("cancel", session=""),
    "too long session": request("cancel", session="s" * 257),
    "session null": request("cancel", session=None),
    "too long comm id": request("subscribe", comm_id="c" * 257),
    "comm id on list": request("list", comm_id="c1"),
    "add without session": request("add", kind="file", path="x.csv"),
    "add without kind": request("add", session="etl", path="x.csv"),
    "add with a bad kind": request("add", session="etl", kind="jar", path="x.jar"),
    "add without path": request("add", session="etl", kind="file"),
    "add with an empty path": request("add", session="etl", kind="file", path=""),
    "add with a too long path": request("add", session="etl", kind="file", path="p" * 4097),
    "add with an empty alias": request("add", session="etl", kind="file", path="x", alias=""),
    "add with a too long alias": request(
        "add", session="etl", kind="file", path="x", alias="a" * 257
    ),
    "add with groups": request("add", session="etl", kind="file", path="x", groups=["a"]),
    "stop_query without a query": request("stop_query"),
    "stop_query with an empty query": request("stop_query", query=""),
    "stop_query from an unknown place": request("stop_query", query="q", source="moon"),
    "stop_query with a session": request("stop_query", query="q", session="etl"),
}


@pytest.mark.parametrize("message", GOOD_REQUESTS, ids=lambda m: m["action"])
def test_good_requests_are_accepted_by_both(message: dict[str, Any]) -> None:
    assert protocol.parse_request(message).action == message["action"]
    assert errors(message, "Request") == []
    assert errors(message) == []


@pytest.mark.parametrize("message", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_bad_requests_are_rejected_by_both(message: Any) -> None:
    with pytest.raises(ProtocolError):
        protocol.parse_request(message)
    assert errors(message, "Request")


def test_patches_rebuild_every_board_a_real_sequence_of_changes_makes() -> None:
    # Groups appear, change, get a first job late (so the order changes), end, and
    # drop off the end of the retained list; sessions change; the error comes and goes.
    board = make_board("etl", retained=2)
    boards = [wire(board.snapshot().to_dict())]

    def update(jobs: list[JobView], keys: dict[int, Any], error: str = "") -> None:
        board.update(jobs, keys, 0, [replace(_session(), disconnected="")], error=error)
        boards.append(wire(board.snapshot().to_dict()))

    board.cell_started("etl", 1, "first cell")
    board.cell_started("etl", 2, "second cell")
    update([_job(1, "RUNNING")], {1: ("etl", 2)})  # etl:2 shown, etl:1 not yet
    update([_job(2, "RUNNING")], {2: ("etl", 1)})  # etl:1 shown, before etl:2
    update([_job(1, "SUCCEEDED")], {1: ("etl", 2)}, error="Spark status unavailable: x")
    for n in range(3, 7):  # more finished groups than retained: the oldest go
        board.cell_started("etl", n, f"cell {n}")
        done = replace(_job(n, "SUCCEEDED"), tasks=TaskCounts(total=1, completed=1))
        update([done], {n: ("etl", n)})
        board.cell_finished("etl", n)
    board.update([], {}, 0, [_session()])  # a session changed
    boards.append(wire(board.snapshot().to_dict()))
    assert any("order" in protocol.board_patch(a, b) for a, b in itertools.pairwise(boards))
    assert any(protocol.board_patch(a, b)["removed_groups"] for a, b in itertools.pairwise(boards))
    for before, after in itertools.pairwise(boards):
        patch = wire(protocol.board_patch(before, after))
        assert errors(patch, "BoardPatchMessage") == []
        assert protocol.apply_board_patch(before, patch) == after
    with pytest.raises(ValueError):
        protocol.apply_board_patch(boards[0], wire(protocol.board_patch(boards[1], boards[2])))
