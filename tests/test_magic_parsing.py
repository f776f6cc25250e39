"""Argument parsing, help and tables of the magics (no Spark needed)."""

from __future__ import annotations

import pytest

from jupyter_spark_sessions.board.snapshot import SessionView
from jupyter_spark_sessions.errors import ConfError
from jupyter_spark_sessions.magics.session_magics import (
    _LIST_HEADERS,
    SparkSessionMagics,
    _info_row,
    format_table,
    parse_conf_pairs,
)


def test_conf_pairs_parse_and_keep_equals_in_values() -> None:
    assert parse_conf_pairs(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}


@pytest.mark.parametrize("bad", ["novalue", "=1", " =1"])
def test_bad_conf_pair_is_a_conf_error(bad: str) -> None:
    with pytest.raises(ConfError, match="expected KEY=VALUE"):
        parse_conf_pairs([bad])


def test_format_table_aligns_columns() -> None:
    table = format_table(["name", "jobs"], [["a", 1], ["long-name", 22]])
    lines = table.splitlines()
    assert lines[0] == "name       jobs"
    assert lines[1] == "---------  ----"
    assert lines[3] == "long-name  22"


def test_list_shows_each_sessions_share_and_packages_before_its_directory() -> None:
    plain = SessionView("plain", "created", "classic", "local[2]", "u-1", True, "/tmp/plain")
    own = SessionView(
        "own",
        "created",
        "classic",
        "local[2]",
        "u-2",
        True,
        "/tmp/own",
        share="weight 3, min share 1",
        packages="jsspkg==1.0, -r req.txt",
    )
    lines = format_table(_LIST_HEADERS, [_info_row(plain), _info_row(own)]).splitlines()
    assert lines[0].split()[-2:] == ["share", "packages"]
    start = lines[0].index("packages")
    assert lines[2][start:].strip() == "-"  # none: "-"
    assert lines[3][start:].strip() == "jsspkg==1.0, -r req.txt"
    # The session id and directory are `info`'s: the table fits a notebook's width.
    assert "u-2" not in lines[3] and "/tmp/own" not in lines[3]
    assert max(map(len, lines)) < 100, lines


def test_help_is_a_pager_sized_page_naming_every_subcommand_with_an_example() -> None:
    # IPython's convention: `%spark_session?` fits a pager (it printed 231 lines).
    from jupyter_spark_sessions.magics.parser import _SUBCOMMANDS

    doc = SparkSessionMagics.spark_session.__doc__ or ""
    lines = doc.splitlines()
    assert len(lines) <= 40 and max(map(len, lines)) <= 90, doc
    assert "::" not in doc and "%%spark_session create" not in doc  # plain text
    assert "%%spark_session NAME" in doc and "%spark_session help SUBCOMMAND" in doc
    for sub in _SUBCOMMANDS:
        assert f"%spark_session {sub}" in doc, sub
    assert "%spark_session create etl --conf spark.sql.shuffle.partitions=8" in doc


def help_output(line: str, capsys: pytest.CaptureFixture[str]) -> str:
    """What ``%spark_session LINE`` (a help line) prints."""
    from jupyter_spark_sessions.magics.parser import parse_line as _parse

    args = _parse(line)
    assert args is not None and args.command == "help"
    SparkSessionMagics._cmd_help(None, args)  # type: ignore[arg-type]
    return capsys.readouterr().out


def test_help_subcommand_shows_its_usage_every_option_and_its_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = help_output("help create", capsys)
    assert out.startswith("usage: %spark_session create [--conf KEY=VALUE] [--master URL]")
    for option in ("--conf", "--master", "--weight", "--min-share", "--pip", "--remote"):
        assert option in out, option
    assert "only when no context runs yet" in " ".join(out.split())  # not on the short page
    assert out.rstrip().endswith(
        "Example: %spark_session create etl --conf spark.sql.shuffle.partitions=8"
    )
    assert "%spark_session adopt" not in out


def test_every_subcommands_full_help_stays_reachable(capsys: pytest.CaptureFixture[str]) -> None:
    # All that `%spark_session?` showed before: each subcommand's description and the
    # help of each of its options.
    from jupyter_spark_sessions.magics.parser import _SUBCOMMANDS

    for name, sub in _SUBCOMMANDS.items():
        out = " ".join(help_output(f"help {name}", capsys).split())
        assert f"usage: %spark_session {name}" in out
        assert " ".join((sub.description or "").split()) in out, name
        for action in sub._actions:
            assert " ".join((action.help or "").split()) in out, (name, action.dest)
        assert f"Example: %spark_session {name}" in out


def test_help_alone_is_the_short_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert help_output("help", capsys).strip() == SparkSessionMagics.spark_session.__doc__


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "help creat",
            "Unknown subcommand 'creat': did you mean `create`? "
            "`%spark_session?` shows each with an example.",
        ),
        ("help zzz", "Unknown subcommand 'zzz' (one of create, adopt, use,"),
        ("help create list", "unrecognized arguments: list (usage: %spark_session help"),
    ],
)
def test_help_of_an_unknown_subcommand_is_one_line(
    line: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from IPython.core.error import UsageError

    from jupyter_spark_sessions.magics.parser import parse_line as _parse

    with pytest.raises(UsageError) as raised:
        args = _parse(line)
        assert args is not None
        SparkSessionMagics._cmd_help(None, args)  # type: ignore[arg-type]
    text = str(raised.value)
    assert text.startswith(message) and "\n" not in text, text
    assert capsys.readouterr().out == ""


def test_a_bare_magic_prints_the_short_usage(capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_spark_sessions.magics.parser import parse_line as _parse

    assert _parse("   ") is None
    out = capsys.readouterr().out
    assert out.startswith("Usage: %spark_session SUBCOMMAND ...") and "restart, reconnect" in out


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        ("creat a", "did you mean `create`?"),
        ("lst", "did you mean `list`?"),
        ("zzz", "'zzz' (one of create, adopt, use,"),
    ],
)
def test_an_unknown_subcommand_suggests_the_closest(line: str, hint: str) -> None:
    from IPython.core.error import UsageError

    from jupyter_spark_sessions.magics.parser import parse_line as _parse

    with pytest.raises(UsageError, match="Unknown subcommand") as raised:
        _parse(line)
    assert hint in str(raised.value)


def test_a_subcommand_missing_an_argument_shows_its_usage() -> None:
    from IPython.core.error import UsageError

    from jupyter_spark_sessions.magics.parser import parse_line as _parse

    with pytest.raises(UsageError) as raised:
        _parse("reconnect")
    assert str(raised.value) == (
        "the following arguments are required: NAME (usage: %spark_session reconnect NAME)"
    )
