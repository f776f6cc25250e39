"""How the board names groups and jobs (``descriptions``, pure), and the two outside
APIs that naming relies on, checked against the installed IPython and PySpark: the
compiler's cell labels and PySpark's ``SCCallSiteSync`` (``backends/call_site.py``)."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from jupyter_spark_sessions.job_descriptions import (
    Frame,
    call_site,
    cell_label,
    describe_cell,
    first_code_line,
    job_line,
)


@pytest.mark.parametrize(
    ("cell", "description"),
    [
        (
            "%spark_session use a\n# comment\ndef f(x):\n    return x\nspark.range(10).count()",
            "spark.range(10).count()",
        ),
        (
            "import time\nfrom pyspark.sql.functions import udf\n\n@udf('long')\n"
            "def slow(x):\n    time.sleep(0.1)\n    return x\n\n"
            "df = spark.range(0, 100, 1, 10).select(slow('id'))",
            "df = spark.range(0, 100, 1, 10).select(slow('id'))",
        ),
        (
            "%%spark_session b\n\n# why\nclass Row:\n    pass\nspark.sql('SELECT 1').show()",
            "spark.sql('SELECT 1').show()",
        ),
        ("x = %who_ls\n!ls\n'''notes'''\nspark.range(3).collect()", "spark.range(3).collect()"),
        ("for i in range(3):\n    spark.range(i).count()", "for i in range(3):"),
        (
            "\n\n  # indented comment\n  total = spark.range(5).count()",
            "total = spark.range(5).count()",
        ),
    ],
)
def test_a_group_is_described_by_the_first_line_that_runs_something(
    cell: str, description: str
) -> None:
    assert first_code_line(cell) == description


@pytest.mark.parametrize(
    ("cell", "description"),
    [
        ("# only a comment\n\ndef f(x):\n    return x", "def f(x):"),
        ("%spark_session use a", "%spark_session use a"),
        ("%%spark_session a\n", "%%spark_session a"),
        ("# a\n# b", "# a"),
        ("", ""),
        (None, ""),
    ],
)
def test_a_cell_that_only_prepares_falls_back_to_its_first_line(
    cell: str | None, description: str
) -> None:
    assert first_code_line(cell) == description


def test_a_cell_python_cannot_parse_is_described_line_by_line() -> None:
    cell = "%spark_session use a\ndef f(:\n    pass\nimport os\ndf = spark.range(\n"
    assert first_code_line(cell) == "df = spark.range("


def test_a_long_line_is_shortened() -> None:
    line = "spark.range(10).select(" + "x" * 100 + ")"
    shown = first_code_line(line)
    assert len(shown) == 80 and shown.endswith("…") and shown.startswith("spark.range(10)")


# -- a group by the code that ran its job ------------------------------------------------

TIMED = "import time\nt = time.time()\n\nrows = spark.range(10).collect()\nprint(time.time() - t)"


def test_a_group_is_described_by_the_line_its_job_names_not_the_cells_first() -> None:
    code = describe_cell(TIMED)
    assert code.first_line == "t = time.time()"  # what the group showed before
    assert job_line(code, "collect at In [7] line 4", 7) == "rows = spark.range(10).collect()"


@pytest.mark.parametrize(
    ("cell", "name", "shown"),
    [
        # Python names a multi-line call by its last line (`.collect())`): the
        # statement reads as one line.
        (
            "df = (spark.range(10)\n      .groupBy('id')\n      .count())\nout = (df\n"
            "       .collect())",
            "collect at In [3] line 5",
            "out = (df .collect())",
        ),
        # In a loop or a function: the statement, not its block's header.
        ("for i in range(3):\n    spark.range(i).count()", "count at In [3] line 2", None),
        (
            "def work():\n    time.sleep(1)\n    spark.range(7).collect()\n"
            "Thread(target=work).start()",
            "collect at In [3] line 3",
            None,
        ),
        ("for row in spark.range(3).collect():\n    print(row)", "collect at In [3] line 1", None),
        # A cell magic's body keeps the notebook's line numbers (the magic is line 1).
        (
            "%%spark_session a\nimport os\nspark.range(6).collect()",
            "collect at In [3] line 3",
            None,
        ),
        (
            "%spark_session use a\nx = 1\nspark.sql('SELECT 1').show()",
            "show at In [3] line 3",
            None,
        ),
        # Python cannot parse it: the line alone.
        ("x = (\nspark.range(2).count()", "count at In [3] line 2", None),
    ],
)
def test_the_job_line_is_the_statement_holding_the_call_site(
    cell: str, name: str, shown: str | None
) -> None:
    number = int(name.rsplit(" ", 1)[1])
    expected = shown if shown is not None else cell.splitlines()[number - 1].strip()
    assert job_line(describe_cell(cell), name, 3) == expected


@pytest.mark.parametrize(
    "name",
    [
        "collect at In [4] line 4",  # another cell's function
        "collect at In [?] line 4",
        "collect at In [3] line 99",
        "collect at In [3] line 3",  # a blank line
        "copy_local_properties at /site/pyspark/util.py:982",
        "Spark Connect query",  # a Spark Connect operation (no call site)
        "",
    ],
)
def test_a_job_naming_no_line_of_the_cell_leaves_the_first_line(name: str) -> None:
    assert job_line(describe_cell(TIMED), name, 3) == ""


def test_a_long_statement_is_shortened_without_joining_all_its_lines() -> None:
    rows = "\n".join(f"  SELECT {i} AS x UNION ALL" for i in range(500))
    cell = 'spark.sql("""\n' + rows + '\n  SELECT -1""").show()'
    shown = job_line(describe_cell(cell), "show at In [1] line 502", 1)
    assert len(shown) == 80 and shown.endswith("…")
    assert shown.startswith('spark.sql(""" SELECT 0 AS x UNION ALL SELECT 1 AS x')


# -- call sites ------------------------------------------------------------------------

PYSPARK = "/site/pyspark/"
LIB = "/usr/lib/python3.11/"
CELLS = {"/tmp/ipykernel_1/11.py": "In [4]", "/tmp/ipykernel_1/12.py": "In [5]"}


def site(*stack: tuple[str, int, str]) -> str | None:
    return call_site(
        [Frame(*f) for f in stack],
        is_spark=lambda f: f.startswith(PYSPARK),
        is_library=lambda f: f.startswith(LIB) or f.startswith("/site/"),
        cell_label=CELLS.get,
    )


def test_a_job_is_named_after_the_cell_line_that_called_spark() -> None:
    assert (
        site(
            ("/site/ipykernel/kernelbase.py", 10, "execute"),
            ("/tmp/ipykernel_1/12.py", 5, "<module>"),
            (PYSPARK + "sql/dataframe.py", 300, "count"),
            (PYSPARK + "traceback_utils.py", 60, "__init__"),
        )
        == "count at In [5] line 5"
    )


def test_a_thread_job_is_named_after_the_users_function_not_pysparks_wrapper() -> None:
    # What PySpark itself names `copy_local_properties at .../threading.py:982`.
    assert (
        site(
            (LIB + "threading.py", 1002, "_bootstrap_inner"),
            (LIB + "threading.py", 982, "run"),
            (PYSPARK + "util.py", 612, "copy_local_properties"),
            ("/tmp/ipykernel_1/11.py", 3, "work"),
            (PYSPARK + "core/rdd.py", 1697, "collect"),
        )
        == "collect at In [4] line 3"
    )


def test_a_cell_calling_a_library_is_named_by_the_cell_then_a_module_by_its_file() -> None:
    cell_to_library = site(
        ("/tmp/ipykernel_1/12.py", 2, "<module>"),
        ("/site/delta/tables.py", 40, "merge"),
        (PYSPARK + "sql/dataframe.py", 10, "collect"),
    )
    assert cell_to_library == "merge at In [5] line 2"
    own_module = site(
        (LIB + "threading.py", 982, "run"),
        ("/home/me/jobs.py", 7, "nightly"),
        (PYSPARK + "sql/readwriter.py", 10, "save"),
    )
    assert own_module == "save at /home/me/jobs.py:7"


def test_no_user_frame_leaves_the_name_to_pyspark() -> None:
    assert site((LIB + "threading.py", 982, "run"), (PYSPARK + "util.py", 1, "f")) is None


def test_ipythons_compiler_labels_each_cell_by_its_execution_count() -> None:
    from IPython.core.compilerop import CachingCompiler

    compiler = CachingCompiler()
    name = compiler.cache("x = 1\n", number=7)
    assert cell_label(compiler.format_code_name(name)) == "In [7]"
    assert cell_label(compiler.format_code_name("/somewhere/else.py")) is None
    assert cell_label(compiler.format_code_name(compiler.cache("y = 2\n"))) == "In [?]"


class RecordingContext:
    """What SCCallSiteSync calls on a SparkContext: ``_jsc.setCallSite``."""

    def __init__(self) -> None:
        self.call_sites: list[str | None] = []
        self._jsc = self

    def setCallSite(self, site: str | None) -> None:  # the JVM's name
        self.call_sites.append(site)


def test_pysparks_call_site_sync_takes_the_call_site_we_compute() -> None:
    """``backends/call_site.install`` replaces how ``SCCallSiteSync`` computes the call
    site and relies on its ``_call_site``/``_context`` fields; if an upgrade changes
    them, jobs go back to PySpark's names and this fails."""
    import pyspark
    import pyspark.traceback_utils

    from jupyter_spark_sessions.backends import call_site as hook

    assert hook.install()
    # A function whose code lives in PySpark's folder, as `collect` does.
    pyspark_file = os.path.join(os.path.dirname(pyspark.__file__), "fake_action.py")
    namespace: dict[str, Any] = {"SCCallSiteSync": pyspark.traceback_utils.SCCallSiteSync}
    exec(
        compile("def collect(sc):\n    return SCCallSiteSync(sc)\n", pyspark_file, "exec"),
        namespace,
    )
    context = RecordingContext()
    sync, line = namespace["collect"](context), sys._getframe().f_lineno
    with sync:
        pass
    assert context.call_sites == [f"collect at {os.path.abspath(__file__)}:{line}", None]


def test_a_threads_call_site_is_set_while_another_thread_is_inside_collect() -> None:
    """PySpark's class-wide nesting counter skipped every other thread's call site
    while one thread's job ran (a background job made the cell's job unnamed)."""
    import threading

    import pyspark
    import pyspark.traceback_utils

    from jupyter_spark_sessions.backends import call_site as hook

    assert hook.install()
    pyspark_file = os.path.join(os.path.dirname(pyspark.__file__), "fake_action.py")
    namespace: dict[str, Any] = {"SCCallSiteSync": pyspark.traceback_utils.SCCallSiteSync}
    exec(compile("def sum(sc):\n    return SCCallSiteSync(sc)\n", pyspark_file, "exec"), namespace)
    background, inside, leave = RecordingContext(), threading.Event(), threading.Event()

    def background_job() -> None:
        with namespace["sum"](background):
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=background_job)
    thread.start()
    assert inside.wait(10)
    cell = RecordingContext()
    with namespace["sum"](cell):
        pass
    leave.set()
    thread.join(10)
    assert cell.call_sites[0] is not None and cell.call_sites[0].startswith("sum at ")
    assert cell.call_sites[1:] == [None] and background.call_sites[1:] == [None]
