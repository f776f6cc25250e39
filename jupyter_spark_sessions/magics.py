"""The ``%spark_session`` and ``%%spark_session`` magics: parse, delegate to the
registry (and ``session_cells`` for the cell magic), print."""

from __future__ import annotations

import argparse
import difflib
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import MagicArgumentParser
from IPython.utils.process import arg_split  # type: ignore[attr-defined]

from . import protocol, spark_ui
from .artifacts import AddResult
from .backends import scheduler_pools
from .backends.scheduler_pools import PoolShare
from .cell_tagging import CellJobTagging
from .errors import ConfError, SparkSessionsError
from .registry import SessionRegistry
from .session_cells import run_cell_in
from .snapshot import FINAL_STATES, GroupView, SessionView

if TYPE_CHECKING:
    from .panel import BoardPanel


def _counting(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number from ``minimum`` up."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {minimum}, not {text!r}"
            )
        return value

    return parse


def parse_conf_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; ConfError for an entry that is not KEY=VALUE."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfError(f"Bad --conf {pair!r}: expected KEY=VALUE.")
        conf[key.strip()] = value
    return conf


#: One example per subcommand, shown under it by ``%spark_session?``.
_EXAMPLES = {
    "create": "%spark_session create etl --conf spark.sql.shuffle.partitions=8",
    "adopt": "%spark_session adopt mine spark",
    "use": "%spark_session use etl",
    "list": "%spark_session list",
    "info": "%spark_session info etl",
    "stop": "%spark_session stop etl",
    "add_file": "%spark_session add_file etl data/lookup.csv --as lookup.csv",
    "add_archive": "%spark_session add_archive etl models.zip --as models",
    "add_pyfile": "%spark_session add_pyfile etl helpers.py",
    "files": "%spark_session files etl",
    "jobs": "%spark_session jobs etl",
    "cancel": "%spark_session cancel etl:12",
    "panel": "%spark_session panel",
    "progress": "%spark_session progress off",
    "restart": "%spark_session restart",
    "reconnect": "%spark_session reconnect remote1",
    "share": "%spark_session share etl --weight 3",
}


def _build_parser() -> tuple[MagicArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = MagicArgumentParser(  # type: ignore[no-untyped-call]
        prog="%spark_session",
        description="Isolated Spark sessions on the kernel's shared SparkContext.",
        add_help=False,
    )
    commands = parser.add_subparsers(dest="command", metavar="SUBCOMMAND")
    commands.required = True
    subcommands: dict[str, argparse.ArgumentParser] = {}

    def add(name: str, help: str) -> argparse.ArgumentParser:
        # Plain argparse formatting: IPython's help formatter writes reST markers.
        sub: argparse.ArgumentParser = commands.add_parser(
            name,
            help=help,
            description=help,
            epilog=f"Example: {_EXAMPLES[name]}",
            add_help=False,
            prog=f"%spark_session {name}",
            formatter_class=argparse.HelpFormatter,
        )
        subcommands[name] = sub
        return sub

    create = add(
        "create",
        "Create an isolated session NAME (its own SQL conf, temp views, UDFs and files), "
        "starting the shared SparkContext when none runs; with --remote, a Spark Connect "
        "session.",
    )
    create.add_argument("name", metavar="NAME")
    create.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A Spark SQL setting for this session only; repeat for more.",
    )
    create.add_argument(
        "--master",
        metavar="URL",
        help="Master of the SparkContext to start (default: the configured "
        "SparkSessionsConfig.default_master); only when no context runs yet.",
    )
    _share_options(create)
    create.add_argument(
        "--remote",
        metavar="URL",
        help="A Spark Connect session instead: sc://HOST:PORT, or 'local' for a local "
        "Connect server this kernel starts (once) and stops at shutdown.",
    )

    adopt = add(
        "adopt",
        "Register an existing SparkSession as NAME: the user-namespace VARIABLE, else the "
        "active session. An adopted session is never stopped by this project.",
    )
    adopt.add_argument("name", metavar="NAME")
    adopt.add_argument("variable", metavar="VARIABLE", nargs="?")

    use = add("use", "Bind `spark` to session NAME; later cells' jobs belong to NAME.")
    use.add_argument("name", metavar="NAME")

    add("list", "Show every session: origin, backend, master, id, running jobs, directory.")

    info = add("info", "Show one session in detail.")
    info.add_argument("name", metavar="NAME")

    stop = add(
        "stop",
        "Stop session NAME: cancel its running jobs and release it once they end (created "
        "sessions); only unregister it (adopted ones). Never stops the SparkContext.",
    )
    stop.add_argument("name", metavar="NAME")

    add_file = add(
        "add_file",
        "Add a file to session NAME: its Python UDFs open it as ALIAS (default: the file's "
        "name); the driver's copy is in the session directory.",
    )
    add_file.add_argument("name", metavar="NAME")
    add_file.add_argument("path", metavar="PATH")
    add_file.add_argument("--as", dest="alias", metavar="ALIAS", help="Name in the session.")

    add_archive = add(
        "add_archive",
        "Add a zip, jar, tar, tar.gz or tgz to session NAME, unpacked into ALIAS/ (default: "
        "the archive's base name) for its UDFs and in the session directory.",
    )
    add_archive.add_argument("name", metavar="NAME")
    add_archive.add_argument("path", metavar="PATH")
    add_archive.add_argument("--as", dest="alias", metavar="ALIAS", help="Folder name.")

    add_pyfile = add(
        "add_pyfile", "Add a .py, .zip or .egg that session NAME's Python UDFs can import."
    )
    add_pyfile.add_argument("name", metavar="NAME")
    add_pyfile.add_argument("path", metavar="PATH")

    files = add("files", "Show what was added to session NAME: name, kind, size, when, path.")
    files.add_argument("name", metavar="NAME")

    jobs = add(
        "jobs",
        "Show the job board: one job group per cell execution, with its state, jobs and "
        "task progress (of session NAME only, if given).",
    )
    jobs.add_argument("name", metavar="NAME", nargs="?")

    cancel = add(
        "cancel",
        "Ask Spark to cancel job groups (ids as `jobs` shows them), every group of one "
        "session, or every group; returns at once (`jobs` shows the outcome).",
    )
    cancel.add_argument("groups", metavar="GROUP_ID", nargs="*")
    cancel.add_argument("--session", metavar="NAME", help="Cancel every job of session NAME.")
    cancel.add_argument(
        "--all", action="store_true", help="Cancel every job of every managed session."
    )

    add(
        "panel",
        "Show a live panel of sessions and job groups, with progress bars and Cancel buttons.",
    )

    progress = add(
        "progress",
        "Turn the live view of a cell's Spark jobs under each running cell on or off for "
        "this kernel (default: SparkSessionsConfig.cell_progress); without a value, say "
        "which it is.",
    )
    progress.add_argument("switch", metavar="on|off", nargs="?", choices=("on", "off"))

    add(
        "restart",
        "After the Spark driver was lost (its JVM died) or the SparkContext was stopped: "
        "start a new one on the same master and settings, and make every classic session "
        "again under its name, with its settings and files (adopted ones are dropped).",
    )

    reconnect = add(
        "reconnect",
        "Make Spark Connect session NAME again on its server (after the server restarted "
        "or came back; with --remote local, on a new local server), with its settings and "
        "files.",
    )
    reconnect.add_argument("name", metavar="NAME")

    share = add(
        "share",
        "Change session NAME's share of the task slots for its new jobs (running jobs keep "
        "theirs); what is not given stays. Without options, show it.",
    )
    share.add_argument("name", metavar="NAME")
    _share_options(share)
    return parser, subcommands


def _share_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--weight",
        type=_counting(1),
        metavar="N",
        help="Its share of the task slots against other sessions' (its scheduler pool's "
        "weight; default 1): with 3, it gets three times the slots of a session with 1 "
        "while both have work.",
    )
    sub.add_argument(
        "--min-share",
        type=_counting(0),
        metavar="N",
        help="Task slots it gets first while it has work (its pool's minShare; default 0).",
    )


_PARSER, _SUBCOMMANDS = _build_parser()


def _short_usage() -> str:
    return (
        "Usage: %spark_session SUBCOMMAND ... (" + ", ".join(_SUBCOMMANDS) + "), or "
        "%%spark_session NAME over a cell. `%spark_session?` shows each with an example."
    )


def _parse(line: str) -> argparse.Namespace | None:
    """The parsed line; None for a bare ``%spark_session`` (its usage is printed)."""
    words = arg_split(line, posix=True)
    if not words:
        print(_short_usage())
        return None
    if words[0] not in _SUBCOMMANDS:
        close = difflib.get_close_matches(words[0], _SUBCOMMANDS, n=1, cutoff=0.6)
        known = f"one of {', '.join(_SUBCOMMANDS)}"
        hint = f": did you mean `{close[0]}`?" if close else f" ({known})."
        raise UsageError(
            f"Unknown subcommand '{words[0]}'{hint} `%spark_session?` shows each with an example."
        )
    try:
        return _PARSER.parse_args(words)
    except UsageError as exc:  # argparse's message, with the subcommand's own usage
        usage = " ".join(_SUBCOMMANDS[words[0]].format_usage().split()[1:])
        raise UsageError(f"{exc} (usage: {usage})") from None


def _help_text() -> str:
    usage = [
        "%spark_session SUBCOMMAND ...     manage isolated Spark sessions",
        "%%spark_session NAME              run the cell with `spark` bound to session NAME",
        "",
        "Subcommands:",
        "",
    ]
    details = [sub.format_help().strip() for sub in _SUBCOMMANDS.values()]
    return "\n".join(usage) + "\n" + "\n\n".join(details)


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
        info.session_id,
        info.running_jobs,
        info.share or "-",
        info.directory,
    ]


_LIST_HEADERS: tuple[str, ...] = ("name", "origin", "backend", "master", "session id")
_LIST_HEADERS += ("running jobs", "share", "directory")


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


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
        if info.backend == "connect":
            return f"not linked: {spark_ui.CONNECT_REMOTE_REASON}"
        return "off"
    path = spark_ui.jobs_path(info.ui_url)
    if path is None:
        return f"{info.ui_url} ({spark_ui.no_link_reason(info.ui_url)})"
    through = spark_ui.join_base_url(spark_ui.base_url_from_environ(os.environ), path)
    return f"{info.ui_url}, through the Jupyter server: {through}"


def _print_problems(sessions: Sequence[SessionView]) -> None:
    # One line per session that cannot work now, with the way out.
    for info in sessions:
        if info.disconnected:
            print(f"Session '{info.name}' is unusable: {info.disconnected}.")


@magics_class
class SparkSessionMagics(Magics):
    """Registers ``%spark_session`` / ``%%spark_session`` on a shell."""

    def __init__(
        self, shell: InteractiveShell, registry: SessionRegistry, tagging: CellJobTagging
    ) -> None:
        super().__init__(shell)
        self.ip = shell  # self.shell is typed Optional by IPython
        self.registry = registry
        self.tagging = tagging
        self._panel: BoardPanel | None = None  # one panel per kernel, shown where asked

    @line_cell_magic
    def spark_session(self, line: str, cell: str | None = None) -> Any:
        """Manage isolated Spark sessions (see the subcommands below)."""
        try:
            if cell is not None:
                return self._run_cell_in(line, cell)
            args = _parse(line)
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
        managed = self.registry.create(
            args.name, conf=conf, master=args.master, remote=args.remote, share=share
        )
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
            from pyspark.sql import SparkSession

            target = SparkSession.getActiveSession()
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
            ("directory", info.directory),
            ("files", len(self.registry.files(args.name))),
            ("spark ui", _ui_text(info)),
        ]
        if info.disconnected:
            fields.append(("state", info.disconnected))
        else:
            fields.append(("scheduling", self.registry.get(args.name).backend.scheduling()))
        print("\n".join(f"{k:<13} {v}" for k, v in fields))

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
            f"Added {item.kind} '{item.name}' ({_size(item.size)}) to session '{session}': "
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
                _size(a.size),
                time.strftime("%H:%M:%S", time.localtime(a.added_at)),
                a.path,
            ]
            for a in items
        ]
        print(format_table(("name", "kind", "size", "added", "driver path"), rows))

    def _cmd_jobs(self, args: argparse.Namespace) -> None:
        if args.name is not None:
            self.registry.get(args.name)  # an unknown name is an error, not an empty table
        snapshot = self.registry.board_poller.fresh_snapshot()
        groups = [g for g in snapshot.groups if args.name in (None, g.session)]
        if snapshot.error:
            print(snapshot.error)
        _print_problems([s for s in snapshot.sessions if args.name in (None, s.name)])
        if not groups:
            where = f" in session '{args.name}'" if args.name else ""
            print(f"No job groups{where} yet: run a cell that starts Spark jobs.")
            return
        print(format_table(_JOBS_HEADERS, [_group_row(g, time.time()) for g in groups]))

    def _cmd_cancel(self, args: argparse.Namespace) -> None:
        request = {"groups": args.groups or None, "session": args.session, "all": args.all or None}
        try:  # the protocol's own rules, as for every other channel
            protocol.parse_request(
                {"version": protocol.PROTOCOL_VERSION, "action": "cancel"}
                | {k: v for k, v in request.items() if v is not None}
            )
        except protocol.ProtocolError:
            raise UsageError(
                "Usage: %spark_session cancel GROUP_ID ... | --session NAME | --all "
                "(exactly one of them)."
            ) from None
        outcome = self.registry.board.request_cancel(
            args.groups, session=args.session, everything=args.all, source="magic"
        )
        if outcome.cancelling:
            print(
                f"Cancel requested for {', '.join(outcome.cancelling)}: shown as 'cancelling' "
                "until Spark reports the jobs ended (`%spark_session jobs`)."
            )
        for message in outcome.messages:
            print(message)

    def _cmd_panel(self, args: argparse.Namespace) -> None:
        from IPython.display import display

        from .panel import BoardPanel

        if self._panel is None:
            self._panel = BoardPanel(self.registry.board)
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
            f"with its settings{added}."
        ]
        print("\n".join(lines + self._rebind(old, managed.session)))

    def _rebind(self, old: object, new: object) -> list[str]:
        # The notebook's variables that held the session that was replaced.
        names = [k for k, v in self.ip.user_ns.items() if v is old and not k.startswith("_")]
        for key in names:
            self.ip.user_ns[key] = new
        return [f"`{key}` now refers to the new session." for key in names]

    # -- cell magic ----------------------------------------------------------------------

    def _run_cell_in(self, line: str, cell: str) -> Any:
        names = arg_split(line, posix=True)
        if len(names) != 1:
            raise UsageError("Usage: %%spark_session NAME (then the cell's code).")
        return run_cell_in(self.ip, self.registry, self.tagging, names[0], cell)


SparkSessionMagics.spark_session.__doc__ = _help_text()
