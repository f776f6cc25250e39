"""The ``%spark_session`` and ``%%spark_session`` magics: parse, delegate to the
registry (and ``cells/run_in_session`` for the cell magic), print."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.utils.process import arg_split  # type: ignore[attr-defined]

from .. import backends, protocol
from ..backends import scheduler_pools
from ..backends.scheduler_pools import PoolShare
from ..board.snapshot import FINAL_STATES, GroupView, QueryView, SessionView, failure_of
from ..cells.run_in_session import raised_by_cell, run_cell_in
from ..cells.tagging import CellJobTagging
from ..errors import ProtocolError, SparkSessionsError
from ..files.artifacts import AddResult
from ..sessions.gone_objects import MAKE_AGAIN
from ..sessions.python_envs import Requirements, SessionEnv, requirements
from ..sizes import size_text
from . import spark_ui
from .parser import help_text, parse_conf_pairs, parse_line, subcommand_help

if TYPE_CHECKING:
    from ..app import SparkSessionsApp
    from .panel import BoardPanel


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table with left-aligned columns."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _info_row(info: SessionView) -> list[object]:
    return [
        info.name,
        info.origin,
        info.backend,
        info.master,
        info.running_jobs,
        info.active_queries,
        info.share or "-",
        info.packages or "-",
    ]


# The long ones (session id, directory) are `info`'s: with them the table wrapped in a
# notebook's width.
_LIST_HEADERS = (
    "name",
    "origin",
    "backend",
    "master",
    "jobs",  # running ones
    "queries",  # running ones
    "share",
    "packages",
)

_QUERY_HEADERS = (
    "query",
    "session",
    "state",
    "started by",
    "batch",
    "in/s (30 s)",
    "done/s",
    "batch ms",
)


def _query_row(query: QueryView) -> list[object]:
    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:,.1f}"

    state = query.state + (f": {query.error}" if query.error else "")
    return [
        query.name or query.id,
        query.session,
        state,
        query.started_by or "a thread",
        "-" if query.batch_id is None else query.batch_id,
        rate(query.input_rate),
        rate(query.process_rate),
        "-" if query.batch_duration_ms is None else f"{query.batch_duration_ms:,}",
    ]


_JOBS_HEADERS = ("group", "state", "jobs", "tasks", "elapsed", "description")


def _group_row(group: GroupView, now: float) -> list[object]:
    tasks = group.tasks
    done = tasks.completed + tasks.skipped
    task_text = f"{done}/{tasks.total}"
    active = sum(j.tasks.active for j in group.jobs if j.running)  # ended jobs': stopping
    if active:
        task_text += f" ({active} running)"
    if tasks.failed or tasks.killed:
        task_text += f" ({tasks.failed} failed, {tasks.killed} killed)"
    if group.tasks_still_running:
        task_text += f" ({group.tasks_still_running} still stopping)"
    elapsed = ""
    if group.submitted_at is not None:
        elapsed = f"{max(0.0, (group.completed_at or now) - group.submitted_at):.1f}s"
    state = group.state + (
        " (cell running)" if group.cell_running and group.state in FINAL_STATES else ""
    )
    running_jobs = sum(1 for j in group.jobs if j.running)
    jobs = f"{len(group.jobs)}" + (f" ({running_jobs} running)" if running_jobs else "")
    return [group.id, state, jobs, task_text, elapsed, group.description]


def _ui_text(info: SessionView) -> str:
    """The session's Spark UI: its address, and its path through the Jupyter server
    (which works when the browser cannot reach the driver's port)."""
    if not info.ui_url:
        return f"not linked: {info.ui_note}" if info.ui_note else "off"
    path = spark_ui.jobs_path(info.ui_url)
    if path is None:
        return f"{info.ui_url} ({spark_ui.no_link_reason(info.ui_url)})"
    through = spark_ui.join_base_url(spark_ui.base_url_from_environ(os.environ), path)
    return f"{info.ui_url}, through the Jupyter server: {through}"


def _env_line(env: SessionEnv) -> str:
    how = f"built in {env.seconds:.1f} s" if env.built else "from the cache"
    line = f"Python environment with {env.wanted.describe()}: {how}."
    if env.shipped_as:  # executors elsewhere (SparkSessionsConfig.env_shipping)
        line += f" Its executors get it as the session's archive '{env.shipped_as}'."
    return line


def _print_problems(sessions: Sequence[SessionView]) -> None:
    # One line per session that cannot work now, with the way out.
    for info in sessions:
        if info.disconnected:
            print(f"Session '{info.name}' is unusable: {info.disconnected}.")


@magics_class
class SparkSessionMagics(Magics):
    """Registers ``%spark_session`` / ``%%spark_session`` on a shell."""

    def __init__(
        self, shell: InteractiveShell, app: SparkSessionsApp, tagging: CellJobTagging
    ) -> None:
        super().__init__(shell)
        self.ip = shell  # self.shell is typed Optional by IPython
        self.registry = app.registry
        self.board = app.board
        self.poller = app.poller
        self.tagging = tagging
        self._panel: BoardPanel | None = None  # one panel per kernel, shown where asked

    @line_cell_magic
    def spark_session(self, line: str, cell: str | None = None) -> Any:
        """Manage isolated Spark sessions (see the subcommands below)."""
        if cell is not None:
            try:
                return self._run_cell_in(line, cell)
            except BaseException as error:
                __tracebackhide__ = raised_by_cell(error)  # for %debug: the cell's error
                raise
        try:
            args = parse_line(line)
            if args is None:
                return None
            handler: Callable[[argparse.Namespace], Any] = getattr(self, f"_cmd_{args.command}")
            return handler(args)
        except SparkSessionsError as exc:
            raise UsageError(str(exc)) from None

    # -- subcommands ---------------------------------------------------------------------

    def _cmd_create(self, args: argparse.Namespace) -> None:
        conf = parse_conf_pairs(args.conf)
        share = None
        if args.weight is not None or args.min_share is not None:
            share = PoolShare(args.weight or 1, args.min_share or 0)
        packages = self._packages(args)
        managed = self.registry.create(
            args.name,
            conf=conf,
            master=args.master,
            remote=args.remote,
            share=share,
            packages=packages or None,
            progress=print,
        )
        if managed.env is not None:
            print(_env_line(managed.env))
        print(
            f"Created session '{managed.name}' on {managed.backend.location()} "
            f"(bind it with `%spark_session use {managed.name}`)."
        )

    def _cmd_adopt(self, args: argparse.Namespace) -> None:
        if args.variable is not None:
            if args.variable not in self.ip.user_ns:
                raise UsageError(f"No variable named '{args.variable}' in the notebook.")
            target = self.ip.user_ns[args.variable]
            what = f"'{args.variable}'"
        else:
            target = backends.active_session()
            if target is None:
                raise UsageError(
                    "There is no active SparkSession to adopt: name a variable "
                    "(`%spark_session adopt NAME VARIABLE`)."
                )
            what = "The active session"
        managed = self.registry.adopt(args.name, target, what=what)
        note = "" if managed.isolated else " (not isolated: it ran queries before adoption)"
        print(f"Adopted session '{managed.name}'{note}; it will never be stopped by this project.")

    def _cmd_use(self, args: argparse.Namespace) -> None:
        self.ip.user_ns["spark"] = self.registry.session(args.name)
        self.tagging.retag(args.name)  # this cell's later jobs belong to it too
        print(f"`spark` is now session '{args.name}'.")

    def _cmd_list(self, args: argparse.Namespace) -> None:
        infos = self.registry.list()
        if not infos:
            print("No sessions yet: `%spark_session create NAME`.")
            return
        print(format_table(_LIST_HEADERS, [_info_row(i) for i in infos]))
        _print_problems(infos)

    def _cmd_info(self, args: argparse.Namespace) -> None:
        info = self.registry.info(args.name)
        fields = [
            ("name", info.name),
            ("origin", info.origin),
            ("backend", info.backend),
            ("master", info.master),
            ("session id", info.session_id),
            ("isolated", "yes" if info.isolated else "no"),
            ("running jobs", info.running_jobs),
            ("queries", f"{info.active_queries} running (`%spark_session queries {info.name}`)"),
            ("directory", info.directory),
            ("files", len(self.registry.files(args.name))),
            ("spark ui", _ui_text(info)),
        ]
        if info.ui_url:
            access = spark_ui.PROTECTED_NOTE if info.ui_protected else spark_ui.UNPROTECTED_NOTE
            fields.append(("ui access", access))
        env = self.registry.get(args.name).env
        if env is not None:
            fields.append(("packages", f"{env.wanted.describe()} (Python: {env.worker_python})"))
        # Always a state: "ready", or why the session cannot run jobs and the way out.
        fields.append(("state", info.disconnected or "ready"))
        if not info.disconnected:
            fields.append(("scheduling", self.registry.get(args.name).backend.scheduling()))
        print("\n".join(f"{k:<13} {v}" for k, v in fields))

    def _packages(self, args: argparse.Namespace) -> Requirements:
        return requirements(args.pip, args.requirements, os.getcwd())

    def _cmd_pip(self, args: argparse.Namespace) -> None:
        packages = self._packages(args)
        if not packages:
            raise UsageError("Name the packages: `%spark_session pip NAME SPEC ...`.")
        env = self.registry.pip(args.name, packages, progress=print)
        print(_env_line(env) + f" Session '{args.name}''s new jobs use it.")

    def _cmd_share(self, args: argparse.Namespace) -> None:
        if args.weight is None and args.min_share is None:
            print(self.registry.get(args.name).backend.scheduling())
            return
        share = self.registry.share(args.name, args.weight, args.min_share)
        print(
            f"Session '{args.name}' runs its new jobs with {scheduler_pools.describe(share)}; "
            "its running jobs keep the share they started with."
        )

    def _cmd_progress(self, args: argparse.Namespace) -> None:
        config = self.registry.config
        if args.switch is not None:
            config.cell_progress = args.switch == "on"
        state = "on" if config.cell_progress else "off"
        print(f"In-cell progress is {state} (from the next cell).")

    def _cmd_stop(self, args: argparse.Namespace) -> None:
        managed = self.registry.get(args.name)
        bound = self.ip.user_ns.get("spark") is managed.session
        release = self.registry.stop(args.name)
        if managed.origin == "adopted":
            print(f"Unregistered adopted session '{args.name}' (the session itself still runs).")
        elif release.cancelled:
            groups = ", ".join(release.cancelled)
            print(
                f"Stopped session '{args.name}': its running jobs ({groups}) were cancelled; "
                "it is released in the background once they end."
            )
        else:
            print(f"Stopped session '{args.name}'.")
        if bound and managed.origin == "created":
            del self.ip.user_ns["spark"]
            print("`spark` was that session and is now unbound.")

    def _cmd_add_file(self, args: argparse.Namespace) -> None:
        self._report_add(args.name, self.registry.add_file(args.name, args.path, args.alias))

    def _cmd_add_archive(self, args: argparse.Namespace) -> None:
        self._report_add(args.name, self.registry.add_archive(args.name, args.path, args.alias))

    def _cmd_add_pyfile(self, args: argparse.Namespace) -> None:
        self._report_add(args.name, self.registry.add_pyfile(args.name, args.path))

    def _report_add(self, session: str, result: AddResult) -> None:
        item = result.artifact
        if not result.added:
            print(f"'{item.name}' is already in session '{session}' with the same content.")
            return
        usage = {
            "file": f"UDFs open it as '{item.name}'",
            "archive": f"UDFs find it unpacked in '{item.name}/'",
            "pyfile": "UDFs can import it",
        }[item.kind]
        print(
            f"Added {item.kind} '{item.name}' ({size_text(item.size)}) to session '{session}': "
            f"{usage}; driver copy: {item.path}"
        )

    def _cmd_files(self, args: argparse.Namespace) -> None:
        items = self.registry.files(args.name)
        if not items:
            print(f"Nothing added to session '{args.name}' yet: `%spark_session add_file`.")
            return
        rows = [
            [
                a.name,
                a.kind,
                size_text(a.size),
                time.strftime("%H:%M:%S", time.localtime(a.added_at)),
                a.path,
            ]
            for a in items
        ]
        print(format_table(("name", "kind", "size", "added", "driver path"), rows))

    def _cmd_jobs(self, args: argparse.Namespace) -> None:
        if args.name is not None:
            self.registry.get(args.name)  # an unknown name is an error, not an empty table
        snapshot = self.poller.fresh_snapshot()
        groups = [g for g in snapshot.groups if args.name in (None, g.session)]
        if snapshot.error:
            print(snapshot.error)
        _print_problems([s for s in snapshot.sessions if args.name in (None, s.name)])
        from ..cells.query_views import running_queries

        # A streaming query's micro-batch jobs are the query's, never a group: say it runs.
        streams = running_queries(snapshot.queries, args.name)
        if not groups:
            where = f" in session '{args.name}'" if args.name else ""
            print(
                "\n".join(streams)
                or f"No job groups{where} yet: run a cell that starts Spark jobs."
            )
            return
        print(format_table(_JOBS_HEADERS, [_group_row(g, time.time()) for g in groups]))
        for line in streams:
            print(line)
        # Why each failed group failed, in Spark's first line (the table stays narrow).
        for group in groups:
            if error := failure_of(group):
                print(f"{group.id} failed: {error}")

    def _cmd_cancel(self, args: argparse.Namespace) -> None:
        request = {"groups": args.groups or None, "session": args.session, "all": args.all or None}
        try:  # the protocol's own rules, as for every other channel
            protocol.parse_request(
                {"version": protocol.PROTOCOL_VERSION, "action": "cancel"}
                | {k: v for k, v in request.items() if v is not None}
            )
        except ProtocolError:
            raise UsageError(
                "Usage: %spark_session cancel GROUP_ID ... | --session NAME | --all "
                "(exactly one of them)."
            ) from None
        outcome = self.board.request_cancel(
            args.groups, session=args.session, everything=args.all, source="magic"
        )
        if outcome.cancelling:
            print(
                f"Cancel requested for {', '.join(outcome.cancelling)}: shown as 'cancelling' "
                "until Spark reports the jobs ended (`%spark_session jobs`)."
            )
        for message in outcome.messages:
            print(message)

    def _cmd_queries(self, args: argparse.Namespace) -> None:
        snapshot = self.poller.fresh_snapshot()
        if args.name is not None:
            self.registry.get(args.name)  # an unknown session is one line
        queries = [q for q in snapshot.queries if args.name in (None, q.session)]
        if not queries:
            where = f" in session '{args.name}'" if args.name else ""
            print(f"No streaming queries{where}: they show here once started.")
            return
        print(format_table(_QUERY_HEADERS, [_query_row(q) for q in queries]))

    def _cmd_stop_query(self, args: argparse.Namespace) -> None:
        view = self.board.queries.request_stop(args.query, "magic")
        label = f"'{view.name}'" if view.name else view.id
        print(
            f"Stop requested for streaming query {label} of session '{view.session}': shown "
            "as 'stopping' until Spark reports it ended (`%spark_session queries`)."
        )

    def _cmd_panel(self, args: argparse.Namespace) -> None:
        from IPython.display import display

        from .panel import BoardPanel

        if self._panel is None:
            self._panel = BoardPanel(self.board)
        display(self._panel.widget)  # type: ignore[no-untyped-call]

    def _cmd_restart(self, args: argparse.Namespace) -> None:
        before = {m.name: m.session for m in map(self.registry.get, self.registry.names())}
        report = self.registry.restart()
        how = "Started a new Spark driver" if report.started else "The Spark driver runs"
        lines = [f"{how} on {report.master}."]
        for name, files in report.recreated:
            added = f" and its {files} file(s) added again" if files else ""
            lines.append(f"Session '{name}' made again with its settings{added}.")
            lines += self._rebind(before[name], self.registry.get(name).session)
        lines += report.refused
        if report.lost_queries:
            lines.append(
                "Streaming queries lost with the old driver (start them again): "
                + ", ".join(report.lost_queries)
                + "."
            )
        if report.recreated:
            old = "the old driver" if report.started else "the stopped SparkContext"
            lines.append(MAKE_AGAIN.format(what=old))
        for name in report.dropped:
            lines.append(
                f"Adopted session '{name}' was dropped (its SparkContext is gone): make it "
                f"again, then `%spark_session adopt {name} VARIABLE`."
            )
        print("\n".join(lines))

    def _cmd_reconnect(self, args: argparse.Namespace) -> None:
        old = self.registry.get(args.name).session
        managed = self.registry.reconnect(args.name)
        files = len(managed.artifacts.list())
        added = f" and its {files} file(s) added again" if files else ""
        lines = [
            f"Session '{args.name}' made again on Spark Connect {managed.backend.where()} "
            f"with its settings{added}.",
            MAKE_AGAIN.format(what="the old session"),
        ]
        print("\n".join(lines + self._rebind(old, managed.session)))

    def _rebind(self, old: object, new: object) -> list[str]:
        # The notebook's variables that held the session that was replaced.
        names = [k for k, v in self.ip.user_ns.items() if v is old and not k.startswith("_")]
        for key in names:
            self.ip.user_ns[key] = new
        return [f"`{key}` now refers to the new session." for key in names]

    def _cmd_help(self, args: argparse.Namespace) -> None:
        # `%spark_session?` is the short page (the docstring); this is one subcommand's.
        print(subcommand_help(args.subcommand))

    # -- cell magic ----------------------------------------------------------------------

    def _run_cell_in(self, line: str, cell: str) -> Any:
        names = arg_split(line, posix=True)
        if len(names) != 1:
            raise UsageError("Usage: %%spark_session NAME (then the cell's code).")
        try:
            return run_cell_in(self.ip, self.registry, self.tagging, names[0], cell)
        except BaseException as error:
            if raised_by_cell(error):
                # The cell's code raised it: as it would in a cell of its own.
                __tracebackhide__ = True  # for %debug (IPython shows it from the cell)
                raise
            if isinstance(error, SparkSessionsError):  # ours: no such session, ...
                raise UsageError(str(error)) from None
            raise


SparkSessionMagics.spark_session.__doc__ = help_text()
