"""The in-cell view of a streaming query, rendered (cells/query_views; pure): its one
line while it runs and its summary once it ended, in every rendering, valid against
the protocol's CellQuery."""

from __future__ import annotations

import json

from test_protocol_schema import errors

from jupyter_spark_sessions.board.snapshot import QueryView
from jupyter_spark_sessions.cells.query_views import MIME_TYPE, render, running_queries

RUNNING = QueryView(
    id="1b0c7f2e-0000-4000-8000-000000000001",
    run_id="9d2a6c11-0000-4000-8000-000000000002",
    name="rates",
    session="a",
    state="active",
    started_by="a:5",
    started_at=1_000.0,
    batch_id=1_204,
    input_rows=50,
    input_rate=10.0,
    process_rate=12.25,
    batch_duration_ms=87,
    history=((995.0, 9.5, 11.0), (1_000.0, 10.0, 12.2)),
)


def test_a_running_query_is_one_line_with_its_figures() -> None:
    shown = render(RUNNING)
    line = (
        "streaming query 'rates' of session a active · batch 1,204 · "
        "in 10.0 rows/s (last 30 s) · processed 12.2 rows/s · last batch 87 ms"
    )
    assert shown["text/plain"] == line
    assert shown[MIME_TYPE]["summary"] == line and shown[MIME_TYPE]["final"] is False
    assert errors(json.loads(json.dumps(shown[MIME_TYPE])), "CellQuery") == []


def test_an_ended_query_sums_up_how_it_ended() -> None:
    stopped = RUNNING.__class__(
        **{**RUNNING.__dict__, "state": "stopped", "ended_at": 1_125.4, "stop_source": "sidebar"}
    )
    assert render(stopped)["text/plain"] == (
        "streaming query 'rates' of session a stopped (from the sidebar) after 2 min 5 s"
        " · 1,205 batches"
    )
    failed = RUNNING.__class__(
        **{
            **RUNNING.__dict__,
            "name": "",
            "state": "failed",
            "ended_at": 1_012.0,
            "batch_id": None,
            "error": "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred <b>",
        }
    )
    shown = render(failed)
    assert shown["text/plain"] == (
        f"streaming query {RUNNING.id} of session a failed after 12 s · 0 batches: "
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred <b>"
    )
    assert "&lt;b&gt;" in shown["text/html"] and shown[MIME_TYPE]["final"] is True
    assert errors(json.loads(json.dumps(shown[MIME_TYPE])), "CellQuery") == []


def test_the_running_queries_are_one_line_per_session() -> None:
    def query(name: str, session: str, state: str = "active", batch: int | None = 25) -> QueryView:
        return RUNNING.__class__(
            **{**RUNNING.__dict__, "name": name, "session": session, "state": state}
            | {"batch_id": batch}
        )

    shown = [
        query("q1", "a"),
        query("old", "a", "stopped"),
        query("", "b", batch=None),
        query("q3", "b", "stopping", 0),
    ]
    assert running_queries(shown) == [
        "1 streaming query running in session 'a': 'q1' (26 batches); "
        "`%spark_session queries a` shows its figures.",
        f"2 streaming queries running in session 'b': {RUNNING.id} (0 batches), "
        "'q3' (1 batch); `%spark_session queries b` shows their figures.",
    ]
    assert running_queries(shown, "a") == running_queries(shown)[:1]
    assert running_queries(shown[1:2]) == running_queries(shown, "c") == []


def test_a_rate_not_measured_yet_is_a_dash() -> None:
    first = RUNNING.__class__(**{**RUNNING.__dict__, "input_rate": None})
    assert " · in - · processed 12.2 rows/s · " in render(first)["text/plain"]
