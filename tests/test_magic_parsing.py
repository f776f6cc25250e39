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

SUBCOMMANDS = ("create", "adopt", "use", "list", "info", "stop")


def test_conf_pairs_parse_and_keep_equals_in_values() -> None:
    assert parse_conf_pairs(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}


@pytest.mark.parametrize("bad", ["novalue", "=1", " =1"])
def test_bad_conf_pair_is_a_conf_error(bad: str) -> None:
    with pytest.raises(ConfError, match="expected KEY=VALUE"):
        parse_conf_pairs([bad])


def test_help_documents_every_subcommand_and_its_options() -> None:
    doc = SparkSessionMagics.spark_session.__doc__ or ""
    for sub in SUBCOMMANDS:
        assert f"%spark_session {sub}" in doc
    assert "--conf" in doc and "--master" in doc and "%%spark_session NAME" in doc


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


def test_help_is_plain_line_magic_text_with_an_example_per_subcommand() -> None:
    doc = SparkSessionMagics.spark_session.__doc__ or ""
    assert "::" not in doc and "%%spark_session create" not in doc
    for sub in (*SUBCOMMANDS, "add_file", "add_archive", "add_pyfile", "jobs", "cancel"):
        assert f"Example: %spark_session {sub}" in doc


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
