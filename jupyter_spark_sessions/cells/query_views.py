"""The in-cell view of a streaming query: under the cell that started it, its state,
batch, rates and a small rate chart, with a Stop, live for as long as the query runs,
after the cell returned too; one summary line once the query ended.

One output per query, sent as ``display_data`` from the thread that starts the query
(inside the cell, so it lands where the query started), then replaced by
``update_display_data`` from the board's producer thread as the query's figures change,
with that cell's parent header: JupyterLab and Notebook 7 keep a cell's request open
for such updates until the cell runs again (``OutputArea.execute`` asks for the kernel
future with ``disposeOnDone`` false), and a saved notebook keeps the last state. Its
bundle carries three renderings, as the cell's job view (``cells/progress``):

- ``application/vnd.jupyter-spark-sessions.query+json`` (``CellQuery`` in
  protocol.schema.json), which the labextension renders with the chart and a Stop that
  goes over the control channel like the sidebar's;
- ``text/html`` and ``text/plain``: one line, for other frontends and saved notebooks.

A query a thread started (no cell) has no in-cell view: the sidebar and the panel show it.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..board.snapshot import BoardSnapshot, QueryView
from ..board.streaming_queries import RATE_WINDOW
from ..kernel import ipykernel_internals

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..app import SparkSessionsApp

MIME_TYPE = "application/vnd.jupyter-spark-sessions.query+json"
VERSION = 1
ENDED_STATES = ("stopped", "failed")
#: Where a stop came from (``StopQueryRequest.source``), as the summary says it.
_STOPPED_BY = {
    "sidebar": "from the sidebar",
    "panel": "from the panel",
    "cell": "from its view",
    "relay": "from the sidebar's Shared driver section or by a script",
    "magic": "by %spark_session",
    "interrupt": "by the Interrupt",
}


@dataclass
class _QueryOutput:
    """Where one query's view goes and what it last sent."""

    parent: dict[str, Any]
    display_id: str
    last: dict[str, Any] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class CellQueryViews:
    """Shows each query a cell starts under that cell, and follows it on the board."""

    def __init__(self, shell: InteractiveShell, app: SparkSessionsApp) -> None:
        self.shell = shell
        self.registry = app.registry
        self.board = app.board
        self._lock = threading.Lock()
        self._outputs: dict[str, _QueryOutput] = {}  # by run id, while the query runs
        self._unsubscribe: Any = None

    def follow_board(self) -> None:
        self.board.queries.on_start = self.query_started
        self._unsubscribe = self.board.subscribe(self.on_snapshot)

    def leave_board(self) -> None:
        self.board.queries.on_start = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def query_started(self, query: QueryView) -> None:
        """In the thread that started ``query``: its view under the running cell."""
        if not query.started_by or not self.registry.config.cell_progress:
            return  # a thread's query, or views off
        parent = ipykernel_internals.cell_parent(self.shell)
        if parent is None:
            return  # not in a Jupyter kernel
        output = _QueryOutput(parent, f"jss-query-{query.run_id}")
        with self._lock:
            self._outputs[query.run_id] = output
        self._send(output, query, update=False)

    def on_snapshot(self, snapshot: BoardSnapshot) -> None:
        """The producer's thread: each followed query's view, when its figures changed;
        the last one when it ended."""
        with self._lock:
            followed = dict(self._outputs)
        for query in snapshot.queries:
            output = followed.get(query.run_id)
            if output is None:
                continue
            self._send(output, query, update=True)
            if query.state in ENDED_STATES:
                with self._lock:
                    self._outputs.pop(query.run_id, None)

    def _send(self, output: _QueryOutput, query: QueryView, update: bool) -> None:
        data = render(query)
        with output.lock:
            if data == output.last:
                return
            ipykernel_internals.publish_display(
                self.shell, output.parent, data, output.display_id, update=update
            )
            output.last = data


# -- rendering (pure) -------------------------------------------------------------------


def render(query: QueryView) -> dict[str, Any]:
    """The output's mime bundle."""
    final = query.state in ENDED_STATES
    line = summary_line(query) if final else running_line(query)
    data = {"version": VERSION, "final": final, "summary": line, "query": asdict(query)}
    escaped = html.escape(line)
    return {MIME_TYPE: data, "text/plain": line, "text/html": f"<div><code>{escaped}</code></div>"}


def label(query: QueryView) -> str:
    return f"'{query.name}'" if query.name else query.id


#: The span the input rate is measured over (``board/streaming_queries.input_rate``).
_WINDOW = f"{RATE_WINDOW:g} s"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} rows/s"


def _batches(query: QueryView) -> str:
    count = 0 if query.batch_id is None else query.batch_id + 1
    return f"{count:,} batch" + ("" if count == 1 else "es")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def figures(query: QueryView) -> str:
    """``batch 41 · in 5.0 rows/s (last 30 s) · processed 6.2 rows/s · last batch 120 ms``:
    rows arriving over the batches of the last 30 s (``board/streaming_queries``), Spark's
    processing rate and duration of the last batch."""
    if query.batch_id is None:
        return "no batch yet"
    parts = [
        f"batch {query.batch_id:,}",
        "in -" if query.input_rate is None else f"in {_rate(query.input_rate)} (last {_WINDOW})",
        f"processed {_rate(query.process_rate)}",
    ]
    if query.batch_duration_ms is not None:
        parts.append(f"last batch {query.batch_duration_ms:,} ms")
    return " · ".join(parts)


def running_queries(queries: Sequence[QueryView], session: str | None = None) -> list[str]:
    """One line per session (or only ``session``'s) with queries that have not ended:
    ``1 streaming query running in session 'a': 'q1' (26 batches); `%spark_session
    queries a` shows its figures.`` (their micro-batch jobs are not job groups)."""
    running: dict[str, list[QueryView]] = {}
    for query in queries:
        if query.state not in ENDED_STATES and session in (None, query.session):
            running.setdefault(query.session, []).append(query)
    lines = []
    for name, own in running.items():
        what = "query" if len(own) == 1 else "queries"
        listed = ", ".join(f"{label(q)} ({_batches(q)})" for q in own)
        lines.append(
            f"{len(own)} streaming {what} running in session '{name}': {listed}; "
            f"`%spark_session queries {name}` shows {'its' if len(own) == 1 else 'their'} "
            "figures."
        )
    return lines


def ending(query: QueryView) -> str:
    """``stopped (from the sidebar) after 2 min 5 s · 1,250 batches``, or ``failed after
    12 s · 3 batches: <the error's first line>``."""
    ran = _duration((query.ended_at or query.started_at) - query.started_at)
    how = _STOPPED_BY.get(query.stop_source or "", "") if query.state == "stopped" else ""
    text = query.state + (f" ({how})" if how else "") + f" after {ran} · {_batches(query)}"
    return f"{text}: {query.error}" if query.error else text


def running_line(query: QueryView) -> str:
    """``streaming query 'rates' of session a active · batch 41 · ...``."""
    return f"streaming query {label(query)} of session {query.session} {query.state} · " + (
        figures(query)
    )


def summary_line(query: QueryView) -> str:
    """``streaming query 'rates' of session a stopped (from the sidebar) after ...``."""
    return f"streaming query {label(query)} of session {query.session} {ending(query)}"
