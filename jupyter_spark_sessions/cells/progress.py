"""The in-cell progress view: under a running cell, its Spark jobs, updated from the
board; at the cell's end, one summary line.

One output per cell, sent as ``display_data`` with a display id and then replaced by
``update_display_data`` (the Jupyter protocol's way to update an output in place: every
frontend and nbclient/papermill know it, so a saved notebook keeps only the last
state). Its bundle carries three renderings:

- ``application/vnd.jupyter-spark-sessions.cell+json`` (``CellProgress`` in
  protocol.schema.json), which the labextension renders in JupyterLab and Notebook 7
  with a Cancel that goes over the control channel like the sidebar's;
- ``text/html`` with a ``<progress>`` bar, for frontends without it (VS Code);
- ``text/plain``, one line per group, for consoles and saved notebooks.

The view appears once the board has seen one of the cell's jobs, so a cell whose jobs
end within a poll shows none. The board's producer thread sends the updates, with the
cell's own parent header so they land under that cell; the cell's thread sends the
summary before the cell ends (nbclient stops reading a cell's messages at its end).
"""

from __future__ import annotations

import html
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..board.snapshot import (
    FINAL_STATES,
    BoardSnapshot,
    GroupView,
    JobView,
    SessionView,
    TaskCounts,
    failure_of,
)
from ..kernel import ipykernel_internals
from .inside_render import inside_html, inside_lines

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..app import SparkSessionsApp
    from .tagging import CellJobTagging

MIME_TYPE = "application/vnd.jupyter-spark-sessions.cell+json"
VERSION = 1
#: Cells shorter than this end without waiting for the board: a job that ran within
#: one poll was never shown, so there is nothing to sum up.
_SUMMARY_AFTER = 0.25
#: How long a cell's end waits for the board to see its jobs ended.
_FINAL_WAIT = 1.0
#: How much longer it waits, once its jobs ended, for the figures of their stages: a
#: Connect server's UI can say a stage is active a moment after its operation returned.
_STAGES_WAIT = 5.0
INTERRUPT_HINT = "To cancel only this cell's Spark jobs, interrupt the kernel."


@dataclass
class _CellView:
    """One running cell's view: where it goes and what it last sent."""

    count: int
    parent: dict[str, Any]
    started: float
    display_id: str = field(default_factory=lambda: f"jss-cell-{uuid.uuid4().hex}")
    lock: threading.Lock = field(default_factory=threading.Lock)
    shown: bool = False
    final: bool = False
    ended: bool = False  # the cell has finished (its summary is owed)
    jobs_ended: bool = False  # its groups' jobs all ended (their stages may lag)
    last: dict[str, Any] | None = None
    settled: threading.Event = field(default_factory=threading.Event)


class CellProgressViews:
    """The last step of a cell's life (``cells/lifecycle``: after the tagging, which
    counts the cell) and the board listener behind the in-cell view."""

    def __init__(
        self, shell: InteractiveShell, app: SparkSessionsApp, tagging: CellJobTagging
    ) -> None:
        self.shell = shell
        self.registry = app.registry
        self.board = app.board
        self.tagging = tagging
        self._lock = threading.Lock()
        self._views: dict[int, _CellView] = {}  # execution count -> running cell's view
        self._local = threading.local()  # the cell this thread runs
        self._unsubscribe: Any = None

    def follow_board(self) -> None:
        """Start updating views from the board's snapshots."""
        self._unsubscribe = self.board.subscribe(self.on_snapshot)

    def leave_board(self) -> None:
        """Stop updating views."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # -- the cell's thread ---------------------------------------------------------

    def pre_run_cell(self, info: Any) -> None:
        self._local.view = None
        if not self.registry.config.cell_progress or not len(self.registry):
            return  # nothing managed: no cost on cells
        parent = ipykernel_internals.cell_parent(self.shell)
        if parent is None:
            return  # not in a Jupyter kernel: nowhere to show it
        view = _CellView(self.tagging.current_count(), parent, time.monotonic())
        with self._lock:
            self._views[view.count] = view
        self._local.view = view

    def post_run_cell(self, result: Any) -> None:
        view: _CellView | None = getattr(self._local, "view", None)
        self._local.view = None
        if view is None:
            return
        with view.lock:
            view.ended = True
        if view.shown or time.monotonic() - view.started >= _SUMMARY_AFTER:
            # A poll at once, whose snapshot (final, or not yet) comes to on_snapshot.
            self.board.refresh(self.on_snapshot)
            if not view.settled.wait(_FINAL_WAIT) and view.jobs_ended:
                view.settled.wait(_STAGES_WAIT)
        with self._lock:
            self._views.pop(view.count, None)
        with view.lock:
            if view.shown and not view.final:
                # Still running after the cell (a thread's jobs): the sidebar follows
                # them; the cell's output says so and is final.
                self._send(view, self.board.snapshot(), final=True)

    # -- the board's producer thread -------------------------------------------------

    def on_snapshot(self, snapshot: BoardSnapshot) -> None:
        with self._lock:
            views = list(self._views.values())
        for view in views:
            with view.lock:
                if not view.final:
                    self._update(view, snapshot)

    def _update(self, view: _CellView, snapshot: BoardSnapshot) -> None:
        groups = cell_groups(snapshot, view.count)
        if not groups:
            if view.ended:
                view.settled.set()  # nothing of this cell reached the board
            return
        view.jobs_ended = view.ended and all(g.state in FINAL_STATES for g in groups)
        final = view.jobs_ended and not any(g.stage_still_active for g in groups)
        self._send(view, snapshot, final)
        if final:
            view.settled.set()

    def _send(self, view: _CellView, snapshot: BoardSnapshot, final: bool) -> None:
        groups = cell_groups(snapshot, view.count)
        if not groups:
            return
        data = render(view.count, groups, snapshot, final, time.time())
        if data == view.last and not final:
            return
        ipykernel_internals.publish_display(
            self.shell, view.parent, data, view.display_id, update=view.shown
        )
        view.shown, view.last, view.final = True, data, final


def cell_groups(snapshot: BoardSnapshot, count: int) -> list[GroupView]:
    """The groups of cell ``count`` (one per session it ran jobs in) that have jobs."""
    return [g for g in snapshot.groups if g.execution_count == count and g.jobs]


# -- rendering (pure) -------------------------------------------------------------------


def render(
    count: int, groups: list[GroupView], snapshot: BoardSnapshot, final: bool, now: float
) -> dict[str, Any]:
    """The output's mime bundle."""
    sessions = {s.name: s for s in snapshot.sessions}
    entries = [_group_entry(g, sessions.get(g.session), now) for g in groups]
    data = {"version": VERSION, "cell": count, "final": final, "groups": entries}
    lines = []
    for entry in entries:
        lines.append(summary_line(entry) if final else running_line(entry))
        if final:  # what a saved notebook keeps: the stages and findings too
            lines += inside_lines(entry["inside"])
    text = "\n".join(lines)
    if not final and any(e["cancellable"] for e in entries):
        text += "\n" + INTERRUPT_HINT
    return {MIME_TYPE: data, "text/plain": text, "text/html": _html(entries, final)}


def _running_job(group: GroupView) -> JobView | None:
    running = [j for j in group.jobs if j.running]
    return running[-1] if running else None


def _cell_tasks(tasks: TaskCounts, active: int) -> dict[str, int]:
    done = tasks.completed + tasks.skipped
    return {"total": tasks.total, "done": done, "active": active, "failed": tasks.failed}


def _group_entry(group: GroupView, session: SessionView | None, now: float) -> dict[str, Any]:
    job = _running_job(group)
    stage = job.stages[-1] if job is not None and job.stages else None
    end = group.completed_at or now
    elapsed = max(0.0, end - group.submitted_at) if group.submitted_at is not None else 0.0
    # Between two jobs of a running cell the group's jobs have all succeeded: the cell
    # is still at work, and a Cancel still stops its next jobs.
    between_jobs = group.cell_running and group.state == "succeeded"
    return {
        "id": group.id,
        "session": group.session,
        "state": "running" if between_jobs else group.state,
        "description": group.description,
        "jobs": len(group.jobs),
        "jobs_running": sum(1 for j in group.jobs if j.running),
        "jobs_done": sum(1 for j in group.jobs if j.state == "succeeded"),
        # Tasks "running" are those of running jobs: once Spark says a job ended, its
        # tasks still winding down on executors are not the cell's running work.
        "tasks": _cell_tasks(group.tasks, sum(j.tasks.active for j in group.jobs if j.running)),
        "job": (
            {"id": job.id, "name": job.name, "tasks": _cell_tasks(job.tasks, job.tasks.active)}
            if job is not None
            else None
        ),
        "stage": (
            {
                "id": stage.id,
                "name": stage.name,
                "total": stage.tasks.total,
                "done": stage.tasks.completed + stage.tasks.skipped,
                "active": stage.tasks.active,
            }
            if stage is not None
            else None
        ),
        "submitted_at": group.submitted_at,
        "elapsed": round(elapsed, 1),
        "ui_url": session.ui_url if session else "",
        "operations_page": session.operations_page if session else "",
        "cancellable": group.state == "running" or between_jobs,
        "error": failure_of(group),
        "inside": asdict(group.inside) if group.inside is not None else None,
    }


def _tasks_text(tasks: dict[str, int]) -> str:
    text = f"{tasks['done']:,}/{tasks['total']:,} tasks"
    if tasks["active"]:
        text += f" ({tasks['active']} running)"
    if tasks["failed"]:
        text += f", {tasks['failed']} failed"
    return text


def _jobs_text(entry: dict[str, Any]) -> str:
    return f"{entry['jobs']} job" + ("" if entry["jobs"] == 1 else "s")


def _jobs_done_text(entry: dict[str, Any]) -> str:
    done = entry["jobs_done"]
    return f"{done} job{'' if done == 1 else 's'} done" if done else ""


def running_line(entry: dict[str, Any]) -> str:
    """``a:4 running · 3 jobs done · job 3 count at In [4] line 2 · stage 5 2/8 · 2/8 tasks
    (2 running) · 12 s``: the jobs done, then the running job with its own tasks (a
    cell's later jobs are not known yet: no total over them would be true)."""
    parts = [f"{entry['id']} {entry['state']}", _jobs_done_text(entry)]
    job = entry["job"]
    if job:
        parts.append(f"job {job['id']} {job['name']}".rstrip())
    if entry["stage"]:
        stage = entry["stage"]
        parts.append(f"stage {stage['id']} {stage['done']:,}/{stage['total']:,}")
    if job:
        parts.append(_tasks_text(job["tasks"]))
    elif not entry["jobs_done"]:
        parts.append(_tasks_text(entry["tasks"]))
    parts.append(f"{entry['elapsed']:.0f} s")
    return " · ".join(p for p in parts if p)


def summary_line(entry: dict[str, Any]) -> str:
    """``a:4 succeeded · 2 jobs · 20,000/20,000 tasks · 21.3 s``."""
    parts = [
        f"{entry['id']} {entry['state']}",
        _jobs_text(entry),
        _tasks_text(entry["tasks"]),
        f"{entry['elapsed']:.1f} s",
    ]
    if entry["state"] not in FINAL_STATES:
        parts.append("still running after the cell (the sidebar follows it)")
    if entry["error"]:
        parts.append(entry["error"])
    return " · ".join(parts)


def _html(entries: list[dict[str, Any]], final: bool) -> str:
    rows = []
    for entry in entries:
        line = summary_line(entry) if final else running_line(entry)
        head, _, rest = line.partition(" · ")
        bar = ""
        if not final and entry["job"]:  # the running job's own progress
            tasks = entry["job"]["tasks"]
            bar = f'<progress value="{tasks["done"]}" max="{max(tasks["total"], 1)}"></progress> '
        elif not final:  # between two jobs: at work, how far unknown
            bar = "<progress></progress> "
        rows.append(f"<div><code>{html.escape(head)}</code> {bar}{html.escape(rest)}</div>")
        if final:  # what is saved; while it runs, the extension draws it from the data
            rows.append(inside_html(entry["inside"]))
    if not final and any(e["cancellable"] for e in entries):
        rows.append(f"<div><small>{html.escape(INTERRUPT_HINT)}</small></div>")
    return "".join(rows)
