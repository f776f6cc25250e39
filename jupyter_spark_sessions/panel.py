"""``%spark_session panel``: an ipywidgets view of the job board in the notebook.

Widget state has no locks, so after the panel is built only the board's producer thread
changes it (as a board listener). Cancel clicks arrive on another thread (a kernel
subshell in JupyterLab >= 4.4): they only record the request with the board and ask for
a redraw.
"""

from __future__ import annotations

import html
import threading
import time
from typing import Any

import ipywidgets as widgets

from . import ipykernel_internals
from .board import JobBoard
from .errors import SparkSessionsError
from .snapshot import FINAL_STATES, BoardSnapshot, GroupView

_BAR_STYLES = {
    "running": "info",
    "cancelling": "warning",
    "succeeded": "success",
    "failed": "danger",
    "cancelled": "danger",
    "lost": "warning",
}

FRONTEND_NOTE = (
    "Cancel works while a cell runs in JupyterLab 4.4+ (kernel subshells). In other "
    "frontends a click waits for the running cell: use the JupyterLab sidebar, or the "
    "kernel's Interrupt (which cancels the running cell's Spark jobs)."
)

#: The note where this ipykernel cannot hand the panel's clicks to their subshell.
NO_ROUTER_NOTE = (
    "In this kernel a click on the panel waits for the running cell (this ipykernel has "
    "no comm router to override). To cancel while a cell runs, use the JupyterLab "
    "sidebar, the REST relay (docs/protocol.md) or the kernel's Interrupt (which "
    "cancels the running cell's Spark jobs)."
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
    button = widgets.Button(
        description=description,
        tooltip=tooltip,
        button_style="danger",
        layout=widgets.Layout(width="auto"),
    )
    # comm is None outside a kernel (e.g. in unit tests)
    if button.comm is not None and _clicks_wait_for_the_cell(button.comm):
        panel.clicks_wait_for_the_cell = True
    return button


class _GroupRow:
    def __init__(self, panel: BoardPanel, group_id: str) -> None:
        self.label = widgets.HTML()
        self.bar = widgets.FloatProgress(min=0.0, max=1.0, layout=widgets.Layout(width="30%"))
        self.detail = widgets.HTML()
        self.cancel = _button(panel, "Cancel", f"Cancel job group {group_id}")
        self.cancel.on_click(lambda _: panel.cancel(groups=[group_id]))
        self.box = widgets.HBox([self.label, self.bar, self.detail, self.cancel])

    def show(self, group: GroupView, now: float) -> None:
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
        if group.description:
            parts.append(f"<code>{html.escape(group.description)}</code>")
        self.detail.value = " · ".join(parts)
        self.cancel.disabled = group.state != "running"


class _SessionRow:
    def __init__(self, panel: BoardPanel, name: str) -> None:
        self.label = widgets.HTML()
        self.cancel = _button(
            panel, "Cancel all", f"Cancel every running job group of session {name}"
        )
        self.cancel.on_click(lambda _: panel.cancel(session=name))
        self.box = widgets.HBox([self.label, self.cancel])


class BoardPanel:
    """The panel widget, kept current by the job board's producer thread."""

    def __init__(self, board: JobBoard) -> None:
        self.board = board
        #: Set when a button's clicks cannot reach a subshell; the footer then says so.
        self.clicks_wait_for_the_cell = False
        self._notice = ""
        self._notice_lock = threading.Lock()
        self._group_rows: dict[str, _GroupRow] = {}
        self._session_rows: dict[str, _SessionRow] = {}
        self.header = widgets.HTML("<b>Spark sessions</b>: no sessions yet.")
        self.sessions_box = widgets.VBox()
        self.groups_box = widgets.VBox()
        self.notice = widgets.HTML()
        self.footer = widgets.HTML(f"<small>{html.escape(FRONTEND_NOTE)}</small>")
        self.widget = widgets.VBox(
            [self.header, self.sessions_box, self.groups_box, self.notice, self.footer]
        )
        self._unsubscribe = board.subscribe(self.render)

    def close(self) -> None:
        """Stop updating and close the widgets."""
        self._unsubscribe()
        self.widget.close_all()

    # -- requests (any thread) -------------------------------------------------------

    def cancel(self, groups: list[str] | None = None, session: str | None = None) -> None:
        """A Cancel click: record the request, show the outcome at the next redraw."""
        try:
            outcome = self.board.request_cancel(groups or (), session=session, source="panel")
            text = " ".join(outcome.messages) or "Cancel requested: " + ", ".join(
                outcome.cancelling
            )
        except SparkSessionsError as exc:
            text = str(exc)
        with self._notice_lock:
            self._notice = text
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
            self.header.value = (
                f"<b>Spark sessions</b>: {len(snapshot.sessions)} session(s), "
                f"{running} active job group(s)"
                + (
                    f", {snapshot.other_running_jobs} other running job(s)"
                    if snapshot.other_running_jobs
                    else ""
                )
            )
        self.sessions_box.children = [
            self._session_row(s.name, snapshot) for s in snapshot.sessions
        ]
        rows = []
        for group in reversed(snapshot.groups):  # newest first
            row = self._group_rows.get(group.id)
            if row is None:
                row = self._group_rows[group.id] = _GroupRow(self, group.id)
            row.show(group, now)
            rows.append(row.box)
        shown = {g.id for g in snapshot.groups}
        for gid in [g for g in self._group_rows if g not in shown]:
            self._group_rows.pop(gid).box.close_all()
        self.groups_box.children = rows
        with self._notice_lock:
            notice = self._notice
        self.notice.value = f"<i>{html.escape(notice)}</i>" if notice else ""
        if self.clicks_wait_for_the_cell:
            self.footer.value = f"<small>{html.escape(NO_ROUTER_NOTE)}</small>"

    def _session_row(self, name: str, snapshot: BoardSnapshot) -> Any:
        row = self._session_rows.get(name)
        if row is None:
            row = self._session_rows[name] = _SessionRow(self, name)
        session = next(s for s in snapshot.sessions if s.name == name)
        active = sum(1 for g in snapshot.groups if g.session == name and not g.finished)
        row.label.value = (
            f"<b>{html.escape(name)}</b> ({session.origin}, {session.backend}, "
            f"{html.escape(session.master)}): {active} active group(s)"
            + (
                f" <b>disconnected</b>: {html.escape(session.disconnected)}"
                if session.disconnected
                else ""
            )
        )
        row.cancel.disabled = active == 0
        return row.box
