"""A ``%%spark_session NAME`` cell's error shows the traceback the same cell shows after
``%spark_session use NAME`` (issue 47, item 2): the same frames and the same number of
lines, none of them the extension's (the magic, ``cells/run_in_session``) nor the cell's
own ``get_ipython().run_cell_magic(...)`` line; ``%tb`` shows it the same way, ``%debug``
skips the extension's frames, and an error of the extension itself keeps its frames.
A ``%%spark_sql`` statement Spark refuses ends in its one line; one whose error keeps its
traceback (a Python UDF's) shows none of the extension's frames either.

Through the run's shared kernel (a real kernel over the Jupyter protocol, real Spark)."""

from __future__ import annotations

import re

import pytest

from kernel_driver import CellResult, Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

#: Failing cells (the body after the magic's line), as a user writes them.
FAILING = {
    # ANSI is on by default in Spark 4: an overflow is an error.
    "ansi_overflow": 'spark.sql("select 2147483647 + 1").collect()',
    "raising_udf": (
        "from pyspark.sql.functions import udf\n"
        "spark.range(2).select(udf(lambda x: 1 // (x - x))('id')).collect()"
    ),
    "missing_column": "spark.range(1).select('nope').collect()",
}

_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def shown_lines(result: CellResult) -> list[str]:
    """The lines a notebook shows for the cell's error (its traceback, uncoloured)."""
    return _COLOURS.sub("", "\n".join(result.traceback)).splitlines()


def frames(lines: list[str]) -> list[str]:
    """Where each frame of a shown traceback is (``Cell In[N]`` without its N)."""
    return [
        re.sub(r"^Cell In\[\d+\]", "Cell In[]", line)
        for line in lines
        if line.startswith(("File ", "Cell In["))
    ]


def extension_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if "jupyter_spark_sessions" in line]


@pytest.fixture(scope="module")
def sessions(kernel: Kernel) -> Kernel:
    """The shared kernel with session a."""
    kernel.ok("%spark_session create a")
    return kernel


@pytest.mark.parametrize("failing", sorted(FAILING))
def test_a_cell_magic_cell_shows_the_traceback_of_a_use_cell(
    sessions: Kernel, failing: str
) -> None:
    body = FAILING[failing]
    bound = sessions.execute(f"%spark_session use a\n{body}")
    magic = sessions.execute(f"%%spark_session a\n{body}")
    assert bound.status == magic.status == "error"
    assert magic.error_name == bound.error_name, (magic.error_name, bound.error_name)
    bound_lines, magic_lines = shown_lines(bound), shown_lines(magic)
    assert len(bound_lines) > 1, bound_lines  # a traceback, not one rewritten line
    assert not extension_lines(magic_lines), "\n".join(magic_lines)
    assert frames(magic_lines) == frames(bound_lines), "\n".join(magic_lines)
    assert len(magic_lines) == len(bound_lines), (
        f"{failing}: use cell {len(bound_lines)} lines, %%spark_session cell "
        f"{len(magic_lines)}:\n" + "\n".join(magic_lines)
    )
    # The cell's own failing line, where the notebook shows it (line 2 or 3).
    last = body.splitlines()[-1]
    assert any(line.endswith(last) and line.startswith("----> ") for line in magic_lines)


def test_tb_shows_the_same_traceback_and_debug_skips_the_extensions_frames(
    sessions: Kernel,
) -> None:
    failed = sessions.execute(f"%%spark_session a\n{FAILING['missing_column']}")
    assert failed.status == "error"
    again = sessions.execute("%tb")
    assert shown_lines(again) == shown_lines(failed)
    # %debug (and IPython's debugger after an error) walks sys.last_traceback: every
    # frame of the extension on the way to the cell's code says to skip it.
    sessions.ok(
        "import sys as _sys, traceback as _traceback\n"
        "_ours = [(f.f_code.co_name, bool(f.f_locals.get('__tracebackhide__')))\n"
        "         for f, _ in _traceback.walk_tb(_sys.last_traceback)\n"
        "         if f.f_globals.get('__name__', '').startswith('jupyter_spark_sessions')]"
    )
    ours = sessions.value("_ours")
    assert ours and all(hidden for _, hidden in ours), ours


def test_an_error_of_the_extension_itself_keeps_its_frames(sessions: Kernel) -> None:
    sessions.ok(
        "import contextlib\n"
        "import jupyter_spark_sessions.cells.run_in_session as _runner\n"
        "_bind = _runner._spark_bound_to\n"
        "@contextlib.contextmanager\n"
        "def _broken(shell, session):\n"
        "    raise RuntimeError('a bug of the extension')\n"
        "    yield\n"
        "_runner._spark_bound_to = _broken"
    )
    try:
        failed = sessions.execute("%%spark_session a\nspark.range(1).count()")
    finally:
        sessions.ok("_runner._spark_bound_to = _bind")
    assert failed.error_name == "RuntimeError", failed.error_value
    lines = shown_lines(failed)
    text = "\n".join(lines)
    assert "skipping hidden" not in text, text
    assert any("run_in_session.py" in line for line in extension_lines(lines)), text
    assert any("session_magics.py" in line for line in extension_lines(lines)), text


def test_a_refused_sql_statement_ends_in_its_one_line(sessions: Kernel) -> None:
    for statement in ("select nope from range(1)", "select 2147483647 + 1"):
        failed = sessions.execute(f"%%spark_sql a\n{statement}")
        assert failed.status == "error", statement
        assert len(failed.traceback) == 1, failed.traceback
        assert not extension_lines(shown_lines(failed)), failed.traceback
        # The same statement by %spark_sql in a %%spark_session cell: the same line
        # (the cell magic passes on its code's errors as they are).
        inner = sessions.execute(f"%%spark_session a\n%spark_sql {statement}")
        assert (inner.error_name, inner.traceback) == (failed.error_name, failed.traceback)


def test_a_sql_statement_whose_udf_raises_shows_no_frame_of_the_extension(
    sessions: Kernel,
) -> None:
    sessions.ok("%%spark_session a\nspark.udf.register('boom', lambda x: 1 // (x - x), 'int')")
    failed = sessions.execute("%%spark_sql a\nselect boom(id) from range(2)")
    assert failed.error_name == "PythonException", failed.error_value
    assert "ZeroDivisionError" in failed.error_value, failed.error_value
    lines = shown_lines(failed)
    assert not extension_lines(lines), "\n".join(lines)
    # From PySpark's first frame: what the same statement shows after `use`, less the
    # line of Python that ran it (a SQL cell has none).
    bound = sessions.execute(
        "%spark_session use a\nspark.sql('select boom(id) from range(2)').limit(21).collect()"
    )
    assert frames(lines) == frames(shown_lines(bound))[1:], "\n".join(lines)
