"""``%spark_session panel``: an ipywidgets view of the job board in the notebook.

Widget state has no locks, so after the panel is built only the board's producer thread
changes it (as a board listener). Cancel clicks arrive on another thread (a kernel
subshell in JupyterLab >= 4.4): they only record the request with the board and ask for
a redraw.
"""

from __future__ import annotations

import html
import os
import threading
import time
from dataclasses import asdict
from typing import Any

import ipywidgets as widgets

from ..board.job_board import JobBoard
from ..board.snapshot import (
    FINAL_STATES,
    BoardSnapshot,
    GroupView,
    JobView,
    QueryView,
    SessionView,
    earlier_jobs_text,
    share_text,
)
from ..cells.inside_render import inside_html
from ..cells.query_views import ENDED_STATES, ending, figures
from ..cells.query_views import label as query_label
from ..errors import SparkSessionsError
from ..kernel import ipykernel_internals
from . import spark_ui

_BAR_STYLES = {
    "running": "info",
    "cancelling": "warning",
    "succeeded": "success",
    "failed": "danger",
    "cancelled": "danger",
    "lost": "warning",
}

#: The kernel cannot tell which frontend shows the panel, so the note holds for all.
FRONTEND_NOTE = (
    "Cancel works while the cell runs in JupyterLab 4.4+ and Notebook 7 (kernel "
    "subshells). Elsewhere (VS Code, the classic Notebook) a click waits for the "
    "running cell: press the kernel's Interrupt instead, which cancels only that "
    "cell's Spark jobs."
)

#: Jobs listed under a group (the newest); the rest are counted.
SHOWN_JOBS = 5

#: How long a notice that reports no cancel in progress (an error) stays.
NOTICE_SECONDS = 10.0

#: The note where this ipykernel cannot hand the panel's clicks to their subshell.
NO_ROUTER_NOTE = (
    "In this kernel a click on the panel waits for the running cell (this ipykernel has "
    "no comm router to override). To cancel while a cell runs, use the JupyterLab "
    "sidebar, a request to the Jupyter server from a script (its REST relay: "
    "docs/jobs.md) or the kernel's Interrupt (which cancels the running cell's Spark "
    "jobs)."
)


def _clicks_wait_for_the_cell(comm: Any) -> bool:
    """Route ``comm``'s clicks to the subshell they are sent on; True where that is not
    possible: ipykernel >= 7.4 hands a comm's messages to the shell that last published
    on it (the busy main shell) unless its router is overridden. ipykernel 7.1 to 7.3
    hand them to the subshell they arrive on by themselves."""
    if ipykernel_internals.route_comm_messages_to_sender(comm):
        return False
    import ipykernel

    return tuple(getattr(ipykernel, "version_info", (0,))[:2]) >= (7, 4)


def _button(panel: BoardPanel, description: str, tooltip: str) -> widgets.Button:
    # A fixed width: the button stays put whatever the text beside it says.
    button = widgets.Button(
        description=description,
        tooltip=tooltip,
        button_style="danger",
        layout=widgets.Layout(width="7em", flex="0 0 auto"),
    )
    # comm is None outside a kernel (e.g. in unit tests)
    if button.comm is not None and _clicks_wait_for_the_cell(button.comm):
        panel.clicks_wait_for_the_cell = True
    return button


def _enable(button: widgets.Button, enabled: bool) -> None:
    # A disabled button drops its red: it looks like what it is, not an alarm.
    button.disabled = not enabled
    button.button_style = "danger" if enabled else ""


def _job_link(job: JobView, session: SessionView | None) -> str:
    """Job N, linked to its page in Spark's UI through the Jupyter server's proxy."""
    text = f"job {job.id}"
    # A Connect operation's number is the board's: it links to the server UI's page of
    # the session's operations; a previous driver's job ids are other jobs now.
    path = None
    if session is not None and job.operation_id:
        path = spark_ui.page_path(session.ui_url, session.operations_page)
    elif session is not None and not job.previous_driver:
        path = spark_ui.job_path(session.ui_url, job.id)
    if path is None:
        return text
    href = spark_ui.join_base_url(spark_ui.base_url_from_environ(os.environ), path)
    title = (
        "The session's queries in the Spark Connect server's UI"
        if job.operation_id
        else "This job in Spark's UI"
    )
    return (
        f'<a href="{html.escape(href)}" target="_blank" rel="noopener" title="{title}">{text}</a>'
    )


def _jobs_html(jobs: tuple[JobView, ...], session: SessionView | None) -> str:
    lines = []
    for job in jobs:
        tasks = job.tasks
        lines.append(
            f"{_job_link(job, session)} {job.state} · "
            f"{tasks.completed + tasks.skipped}/{tasks.total} tasks · "
            f"<code>{html.escape(job.name)}</code>"
            + (
                f"<br>&nbsp;&nbsp;{html.escape(job.error)}"
                if job.state == "failed" and job.error
                else ""
            )
        )
    return "<small>" + "<br>".join(lines) + "</small>" if lines else ""


class _GroupRow:
    def __init__(self, panel: BoardPanel, group_id: str) -> None:
        # Fixed widths before the Cancel button, the text that changes after it.
        self.label = widgets.HTML(layout=widgets.Layout(width="13em", flex="0 0 auto"))
        self.bar = widgets.FloatProgress(
            min=0.0, max=1.0, layout=widgets.Layout(width="10em", flex="0 0 auto")
        )
        self.cancel = _button(panel, "Cancel", f"Cancel job group {group_id}")
        self.cancel.on_click(lambda _: panel.cancel(groups=[group_id]))
        self.detail = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", margin="0 0 0 1em"))
        self.description = widgets.HTML(layout=widgets.Layout(margin="0 0 0 1em"))
        # A long cell's older jobs are counted; a click lists them (as in the sidebar).
        self.earlier = widgets.ToggleButton(
            tooltip="List or hide this group's earlier jobs",
            layout=widgets.Layout(
                display="none", width="auto", align_self="flex-start", margin="0 0 0 1em"
            ),
        )
        self.earlier.observe(lambda _: self._show_jobs(), "value")
        self.jobs = widgets.HTML(layout=widgets.Layout(margin="0 0 0 1em"))
        # What happened inside it (stages, slot chart, findings), folded unless found.
        self.inside = widgets.HTML(layout=widgets.Layout(margin="0 0 0 1em"))
        self._shown: tuple[GroupView, SessionView | None] | None = None
        self.box = widgets.VBox(
            [
                widgets.HBox(
                    [self.label, self.bar, self.cancel, self.detail],
                    layout=widgets.Layout(align_items="center"),
                ),
                self.description,
                self.earlier,
                self.jobs,
                self.inside,
            ],
            layout=widgets.Layout(margin="0 0 0.3em 1.5em"),  # nested under its session
        )

    def show(self, group: GroupView, session: SessionView | None, now: float) -> None:
        tasks = group.tasks
        done = tasks.completed + tasks.skipped
        self.bar.value = done / tasks.total if tasks.total else 0.0
        self.bar.bar_style = _BAR_STYLES[group.state]
        self.label.value = f"<code>{html.escape(group.id)}</code> <b>{group.state}</b>" + (
            " (cell running)" if group.cell_running and group.state in FINAL_STATES else ""
        )
        parts = [f"{done}/{tasks.total} tasks", f"{len(group.jobs)} job(s)"]
        if group.submitted_at is not None:
            end = group.completed_at or now
            parts.append(f"{max(0.0, end - group.submitted_at):.0f} s")
        if group.tasks_still_running:
            parts.append(f"{group.tasks_still_running} task(s) still stopping")
        self.detail.value = " · ".join(parts)
        # The description on a line of its own: beside the counts it wrapped the row.
        self.description.value = (
            f"<small><code>{html.escape(group.description)}</code></small>"
            if group.description
            else ""
        )
        if self._shown is None or self._shown[0].inside is not group.inside:
            self.inside.value = inside_html(asdict(group.inside) if group.inside else None)
        self._shown = (group, session)
        self._show_jobs()
        _enable(self.cancel, group.state == "running")

    def _show_jobs(self) -> None:
        if self._shown is None:
            return
        group, session = self._shown
        hidden = group.jobs[:-SHOWN_JOBS]
        self.earlier.layout.display = "" if hidden else "none"
        listed = self.earlier.value and bool(hidden)
        self.earlier.description = (
            f"{'▾' if listed else '▸'} {earlier_jobs_text(hidden)}" if hidden else ""
        )
        self.jobs.value = _jobs_html(group.jobs if listed else group.jobs[-SHOWN_JOBS:], session)


class _QueryRow:
    """A streaming query of the session: its name and state, Stop, its figures."""

    def __init__(self, panel: BoardPanel, query: QueryView) -> None:
        self.label = widgets.HTML(layout=widgets.Layout(width="13em", flex="0 0 auto"))
        self.stop = _button(panel, "Stop", f"Stop the streaming query {query_label(query)}")
        self.stop.on_click(lambda _: panel.stop_query(query.run_id))
        self.detail = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", margin="0 0 0 1em"))
        self.box = widgets.HBox(
            [self.label, self.stop, self.detail],
            layout=widgets.Layout(align_items="center", margin="0 0 0.3em 1.5em"),
        )

    def show(self, query: QueryView) -> None:
        self.label.value = f"<code>{html.escape(query_label(query))}</code> <b>{query.state}</b>"
        ended = query.state in ENDED_STATES
        self.detail.value = html.escape(ending(query) if ended else figures(query))
        _enable(self.stop, query.state == "active")


class _SessionRow:
    def __init__(self, panel: BoardPanel, name: str) -> None:
        self.label = widgets.HTML(layout=widgets.Layout(flex="1 1 auto"))
        self.cancel = _button(
            panel, "Cancel all", f"Cancel every running job group of session {name}"
        )
        self.cancel.on_click(lambda _: panel.cancel(session=name))
        self.groups = widgets.VBox()
        self.box = widgets.VBox(
            [
                widgets.HBox(
                    [self.cancel, self.label], layout=widgets.Layout(align_items="center")
                ),
                self.groups,
            ]
        )


class BoardPanel:
    """The panel widget, kept current by the job board's producer thread."""

    def __init__(self, board: JobBoard) -> None:
        self.board = board
        #: Set when a button's clicks cannot reach a subshell; the footer then says so.
        self.clicks_wait_for_the_cell = False
        # The last click's outcome: its text, the groups whose cancel it reports (shown
        # while one of them is cancelling), and when it was made.
        self._notice: tuple[str, frozenset[str], float] = ("", frozenset(), 0.0)
        self._notice_lock = threading.Lock()
        self._group_rows: dict[str, _GroupRow] = {}
        self._session_rows: dict[str, _SessionRow] = {}
        self._query_rows: dict[str, _QueryRow] = {}
        self.header = widgets.HTML("<b>Spark sessions</b>: no sessions yet.")
        #: One section per session: its row, then its groups (newest first).
        self.sessions_box = widgets.VBox()
        self.notice = widgets.HTML()
        self.footer = widgets.HTML(f"<small>{html.escape(FRONTEND_NOTE)}</small>")
        self.widget = widgets.VBox([self.header, self.sessions_box, self.notice, self.footer])
        self._unsubscribe = board.subscribe(self.render)

    def close(self) -> None:
        """Stop updating and close the widgets."""
        self._unsubscribe()
        self.widget.close_all()

    # -- requests (any thread) -------------------------------------------------------

    def cancel(self, groups: list[str] | None = None, session: str | None = None) -> None:
        """A Cancel click: record the request, show the outcome at the next redraw."""
        cancelling: tuple[str, ...] = ()
        try:
            outcome = self.board.request_cancel(groups or (), session=session, source="panel")
            cancelling = outcome.cancelling
            text = " ".join(outcome.messages) or "Cancel requested: " + ", ".join(cancelling)
        except SparkSessionsError as exc:
            text = str(exc)
        with self._notice_lock:
            self._notice = (text, frozenset(cancelling), time.time())
        self.board.refresh(self.render)

    def stop_query(self, run_id: str) -> None:
        """A Stop click: ask for the stop (it returns at once), say so until it ended."""
        try:
            view = self.board.queries.request_stop(run_id, "panel")
            text = f"Stopping streaming query {query_label(view)}."
        except SparkSessionsError as exc:
            text = str(exc)
        with self._notice_lock:
            self._notice = (text, frozenset(), time.time())
        self.board.refresh(self.render)

    # -- drawing (producer thread only) ---------------------------------------------

    def render(self, snapshot: BoardSnapshot) -> None:
        now = time.time()
        running = sum(1 for g in snapshot.groups if not g.finished)
        if snapshot.error:
            self.header.value = f"<b>Spark sessions</b>: {html.escape(snapshot.error)}"
        elif not snapshot.sessions and not snapshot.groups:
            self.header.value = "<b>Spark sessions</b>: no sessions yet."
        else:
            # The sidebar's header says the same: the kernel answers, its Spark does not.
            lost = sum(1 for s in snapshot.sessions if s.disconnected)
            self.header.value = (
                f"<b>Spark sessions</b>: {len(snapshot.sessions)} session(s)"
                + (f" (<b>{lost} disconnected</b>)" if lost else "")
                + f", {running} active job group(s)"
                + (
                    f", {snapshot.other_running_jobs} other running job(s)"
                    if snapshot.other_running_jobs
                    else ""
                )
            )
        sessions = {s.name: s for s in snapshot.sessions}
        # A stopped session's groups stay under its name until the board drops them.
        names = list(sessions) + list(
            dict.fromkeys(g.session for g in snapshot.groups if g.session not in sessions)
        )
        self.sessions_box.children = [
            self._section(n, sessions.get(n), snapshot, now) for n in names
        ]
        shown = {g.id for g in snapshot.groups}
        for gid in [g for g in self._group_rows if g not in shown]:
            self._group_rows.pop(gid).box.close_all()
        for name in [n for n in self._session_rows if n not in names]:
            self._session_rows.pop(name).box.close_all()
        listed = {q.run_id for q in snapshot.queries}
        for run_id in [r for r in self._query_rows if r not in listed]:
            self._query_rows.pop(run_id).box.close_all()
        self.notice.value = self._notice_html(snapshot, now)
        if self.clicks_wait_for_the_cell:
            self.footer.value = f"<small>{html.escape(NO_ROUTER_NOTE)}</small>"

    def _notice_html(self, snapshot: BoardSnapshot, now: float) -> str:
        # "Cancel requested" only while a group it names is still cancelling.
        with self._notice_lock:
            text, groups, made_at = self._notice
        if groups:
            in_progress = any(
                g.id in groups and g.state in ("running", "cancelling") for g in snapshot.groups
            )
            if not in_progress:
                text = ""
        elif now - made_at > NOTICE_SECONDS:
            text = ""
        return f"<i>{html.escape(text)}</i>" if text else ""

    def _section(
        self, name: str, session: SessionView | None, snapshot: BoardSnapshot, now: float
    ) -> Any:
        row = self._session_rows.get(name)
        if row is None:
            row = self._session_rows[name] = _SessionRow(self, name)
        groups = [g for g in snapshot.groups if g.session == name]
        active = sum(1 for g in groups if not g.finished)
        if session is None:
            row.label.value = f"<b>{html.escape(name)}</b> (stopped)"
        else:
            share = share_text(session, groups)
            row.label.value = (
                f"<b>{html.escape(name)}</b> ({session.origin}, {session.backend}, "
                f"{html.escape(session.master)}): {active} active group(s)"
                + (f"; {html.escape(share)}" if share else "")
                + (f"; packages: {html.escape(session.packages)}" if session.packages else "")
                + (
                    f" <b>disconnected</b>: {html.escape(session.disconnected)}"
                    if session.disconnected
                    else ""
                )
            )
        queries = [q for q in snapshot.queries if q.session == name]
        running_queries = sum(1 for q in queries if q.state in ("active", "stopping"))
        if running_queries:
            row.label.value += f"; {running_queries} streaming quer" + (
                "y" if running_queries == 1 else "ies"
            )
        _enable(row.cancel, session is not None and (active > 0 or running_queries > 0))
        boxes = []
        for query in reversed(queries):  # newest first
            query_row = self._query_rows.get(query.run_id)
            if query_row is None:
                query_row = self._query_rows[query.run_id] = _QueryRow(self, query)
            query_row.show(query)
            boxes.append(query_row.box)
        for group in reversed(groups):  # newest first
            group_row = self._group_rows.get(group.id)
            if group_row is None:
                group_row = self._group_rows[group.id] = _GroupRow(self, group.id)
            group_row.show(group, session, now)
            boxes.append(group_row.box)
        row.groups.children = boxes
        return row.box
