"""The ``%spark_session`` line's grammar: one argparse subparser per subcommand, each
with an example. ``%spark_session?`` is a pager-sized page (``help_text``: one example
per subcommand), ``%spark_session help SUBCOMMAND`` a subcommand's full help (every
option), and a mistake is one line with the subcommand's own usage (IPython's
``MagicArgumentParser`` raises ``UsageError``)."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Sequence

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser
from IPython.utils.process import arg_split  # type: ignore[attr-defined]

from ..errors import ConfError


def whole_number(minimum: int) -> Callable[[str], int]:
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


def python_name(text: str) -> str:
    """An argparse type: a Python variable name (the magics bind results to one)."""
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not a Python variable name")
    return text


def parse_conf_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; ConfError for an entry that is not KEY=VALUE."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfError(f"Bad --conf {pair!r}: expected KEY=VALUE.")
        conf[key.strip()] = value
    return conf


#: One example per subcommand, shown in ``%spark_session?`` (with a few words on what
#: it does, unless the example is long) and under the subcommand's full help.
_EXAMPLES = {
    "create": ("%spark_session create etl --conf spark.sql.shuffle.partitions=8", "new, isolated"),
    "adopt": ("%spark_session adopt mine spark", "register a SparkSession of yours"),
    "use": ("%spark_session use etl", "bind `spark` (and later cells) to it"),
    "list": ("%spark_session list", "every session"),
    "info": ("%spark_session info etl", "one session in detail"),
    "stop": ("%spark_session stop etl", "cancel its jobs, release it"),
    "add_file": ("%spark_session add_file etl data/lookup.csv --as lookup.csv", "for its UDFs"),
    "add_archive": ("%spark_session add_archive etl models.zip --as models", "unpacked"),
    "add_pyfile": ("%spark_session add_pyfile etl helpers.py", "importable by its UDFs"),
    "files": ("%spark_session files etl", "what was added to it"),
    "jobs": ("%spark_session jobs etl", "its job groups, one per cell"),
    "cancel": ("%spark_session cancel etl:12", "or --session NAME, --all"),
    "queries": ("%spark_session queries", "their batches and rates"),
    "stop_query": ("%spark_session stop_query clicks", "a streaming query, by name or id"),
    "panel": ("%spark_session panel", "live progress, Cancel buttons"),
    "progress": ("%spark_session progress off", "no live view under cells"),
    "restart": ("%spark_session restart", "after the driver was lost"),
    "reconnect": ("%spark_session reconnect remote1", "a Connect session again"),
    "share": ("%spark_session share etl --weight 3", "its share of the task slots"),
    "pip": ("%spark_session pip etl 'scikit-learn==1.5.2'", "packages for its UDFs"),
    "help": ("%spark_session help create", "a subcommand's every option"),
}

#: How ``%spark_session?`` groups the subcommands (each in one group).
_GROUPS = (
    ("Sessions", ("create", "adopt", "use", "list", "info", "stop")),
    ("Files and packages of a session", ("add_file", "add_archive", "add_pyfile", "files", "pip")),
    ("Jobs", ("jobs", "cancel", "panel", "progress")),
    ("Streaming queries", ("queries", "stop_query")),
    ("Slots and recovery", ("share", "restart", "reconnect")),
)


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
            epilog=f"Example: {_EXAMPLES[name][0]}",
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
    _package_options(create, required=False)
    create.add_argument(
        "--remote",
        metavar="URL",
        help="A Spark Connect session instead: sc://HOST:PORT, 'local' for a local "
        "Connect server this kernel starts (once) and stops at shutdown, or 'shared' for "
        "the one server of this user's notebooks (started by the first that asks).",
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
    queries = add(
        "queries",
        "The streaming queries of the sessions: state, the cell that started each, last "
        "batch, input and processing rates (running ones, and the last ended ones).",
    )
    queries.add_argument("name", metavar="NAME", nargs="?", help="Only session NAME's.")
    stop_query = add(
        "stop_query",
        "Ask Spark to stop a streaming query (by name, id or run id); returns at once, "
        "and `queries` shows it stopping, then stopped.",
    )
    stop_query.add_argument("query", metavar="NAME_OR_ID")

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

    pip = add(
        "pip",
        "Add Python packages to session NAME's own environment (built once, cached): its "
        "new jobs' UDFs see them, over the kernel's; running jobs keep theirs.",
    )
    pip.add_argument("name", metavar="NAME")
    pip.add_argument("pip", metavar="SPEC", nargs="*", help="As for --pip.")
    _package_options(pip, required=True)

    help_ = add("help", "Show a subcommand's full help: what it does and every option.")
    help_.add_argument("subcommand", metavar="SUBCOMMAND", nargs="?")
    return parser, subcommands


def _package_options(sub: argparse.ArgumentParser, required: bool) -> None:
    if not required:
        sub.add_argument(
            "--pip",
            nargs="+",
            default=[],
            metavar="SPEC",
            help="Python packages for this session's UDFs, in an environment of its own "
            "(anything pip accepts: 'pandas==2.2.3', a path to a wheel); they win over "
            "the kernel's, whose PySpark, pyarrow and pandas the UDFs still see.",
        )
    sub.add_argument(
        "--requirements",
        action="append",
        default=[],
        metavar="FILE",
        help="A requirements file of packages for it; repeat for more.",
    )


def _share_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--weight",
        type=whole_number(1),
        metavar="N",
        help="Its share of the task slots against other sessions' (its scheduler pool's "
        "weight; default 1): with 3, it gets three times the slots of a session with 1 "
        "while both have work.",
    )
    sub.add_argument(
        "--min-share",
        type=whole_number(0),
        metavar="N",
        help="Task slots it gets first while it has work (its pool's minShare; default 0).",
    )


_PARSER, _SUBCOMMANDS = _build_parser()


def short_usage() -> str:
    return (
        "Usage: %spark_session SUBCOMMAND ... (" + ", ".join(_SUBCOMMANDS) + "), or "
        "%%spark_session NAME over a cell. `%spark_session?` shows each with an example, "
        "`%spark_session help SUBCOMMAND` one in full."
    )


def parse_line(line: str) -> argparse.Namespace | None:
    """The parsed line; None for a bare ``%spark_session`` (its usage is printed)."""
    words = arg_split(line, posix=True)
    if not words:
        print(short_usage())
        return None
    _check_subcommand(words[0])
    try:
        return _PARSER.parse_args(words)
    except UsageError as exc:  # argparse's message, with the subcommand's own usage
        usage = " ".join(_SUBCOMMANDS[words[0]].format_usage().split()[1:])
        raise UsageError(f"{exc} (usage: {usage})") from None


def _check_subcommand(word: str) -> None:
    # One line for a name that is no subcommand: the closest one, else the list.
    if word in _SUBCOMMANDS:
        return
    close = difflib.get_close_matches(word, _SUBCOMMANDS, n=1, cutoff=0.6)
    known = f"one of {', '.join(_SUBCOMMANDS)}"
    hint = f": did you mean `{close[0]}`?" if close else f" ({known})."
    raise UsageError(
        f"Unknown subcommand '{word}'{hint} `%spark_session?` shows each with an example."
    )


def help_text() -> str:
    """``%spark_session?``: the usage and one example per subcommand, pager-sized;
    ``%spark_session help SUBCOMMAND`` (``subcommand_help``) has the rest."""
    width = max(len(example) for example, _ in _EXAMPLES.values() if len(example) <= 44)
    lines = [
        "Isolated Spark sessions on the kernel's shared SparkContext.",
        "",
        "  %spark_session SUBCOMMAND ...     one example of each subcommand below",
        "  %%spark_session NAME              run the cell with `spark` bound to session NAME",
        "  %%spark_sql NAME                  a SQL cell in session NAME (`%spark_sql?`)",
        "  %spark_session help SUBCOMMAND    a subcommand in full: what it does, every option",
    ]
    for title, names in _GROUPS:
        lines += ["", f"{title}:"]
        for name in names:
            example, gloss = _EXAMPLES[name]
            fits = len(example) <= width  # a longer one says what it does itself
            lines.append(f"  {example:<{width}}  # {gloss}" if fits else f"  {example}")
    return "\n".join(lines)


def subcommand_help(name: str | None) -> str:
    """``%spark_session help NAME``: the subcommand's usage, what it does, each option
    and an example (``help_text`` without a name); UsageError, one line, for a name
    that is no subcommand."""
    if name is None:
        return help_text()
    _check_subcommand(name)
    return _SUBCOMMANDS[name].format_help().strip()
