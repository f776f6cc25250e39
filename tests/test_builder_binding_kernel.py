"""``SparkSession.builder.getOrCreate()`` in a thread bound to a managed session returns
that session (``backends/builder_binding.py``), through the run's shared kernel: after
``use``, in a ``%%spark_session`` cell, for pandas-on-Spark's default session, on Spark
Connect, unchanged where nothing is bound, its options applied or named in one note
(once, on stdout), and a notebook written for plain PySpark (as getting-started notebooks
are) run unchanged after ``use nb``. So do PySpark's other openings
(``backends/context_binding.py``): ``SparkContext(conf=SparkConf())`` then
``SparkSession(sparkContext=sc)``, ``SparkContext.getOrCreate()``, ``SQLContext``, ...
give the shared context and the bound session. The first two tests check the private
PySpark API the patches wrap, without a kernel."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_spark_sessions.backends import builder_binding, context_binding
from kernel_driver import Kernel

NOTEBOOK = Path(__file__).resolve().parent / "data" / "plain_pyspark_notebook.py"

HELPERS = """
import time as _bb_time
from pyspark.sql import SparkSession
_bb_reg = __import__('jupyter_spark_sessions').default_registry()

def _bb_groups(session, counts, timeout=60):
    '''{group id: job ids} of `session`'s groups, once the board has a finished group with
    jobs for each cell of `counts`.'''
    wanted = [f'{session}:{c}' for c in counts]
    deadline = _bb_time.monotonic() + timeout
    while True:
        _bb_reg.board.wake_now()
        groups = [g for g in _bb_reg.board.snapshot().groups if g.session == session]
        found = {g.id: sorted(j.id for j in g.jobs) for g in groups}
        done = all(g.finished for g in groups if g.id in wanted)
        if (all(found.get(w) for w in wanted) and done) or _bb_time.monotonic() > deadline:
            return found
        _bb_time.sleep(0.1)

def _bb_managed(session):
    found = _bb_reg.find(session)
    return found.name if found is not None else None
"""


# -- the private PySpark API the patch wraps (no kernel) ------------------------------


def test_pyspark_builders_are_what_builder_binding_wraps() -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    for cls in (SparkSession, ConnectSession):
        builder = cls.builder
        assert isinstance(builder, cls.Builder), f"{cls}.builder is no longer a Builder"
        assert callable(getattr(cls.Builder, "getOrCreate", None))
        built = builder.appName("x").master("local[1]").config("k", 1)
        options = getattr(built, "_options", None)
        assert isinstance(options, dict), f"{cls}.Builder keeps its options elsewhere"
        assert options.get("spark.app.name") == "x" and options.get("k") == "1", options
        assert "spark.master" in options or cls is ConnectSession, options  # Connect: no-op
        assert cls.builder.remote("sc://h")._options.get("spark.remote") == "sc://h"
    # What ``bound`` reads to tell a usable session.
    assert "is_stopped" in dir(ConnectSession)
    assert "_sc" in inspect.unwrap(SparkSession.__init__).__code__.co_names
    builder_binding.install()
    builder_binding.install()  # idempotent: wrapped once
    for cls in (SparkSession, ConnectSession):
        wrapped = cls.Builder.getOrCreate
        assert getattr(wrapped, builder_binding._MARK, False), f"{cls}: not wrapped"
        assert not getattr(wrapped.__wrapped__, builder_binding._MARK, False), "wrapped twice"


def test_pyspark_constructors_are_what_context_binding_wraps() -> None:
    from pyspark.core.context import SparkContext
    from pyspark.sql import SparkSession, SQLContext

    # __new__ returns the running object, then Python runs __init__ on it: PySpark's own
    # __new__ (none today) would be bypassed, its __init__ must be skipped.
    for cls in (SparkContext, SparkSession):
        own = [
            base.__name__
            for base in cls.__mro__[:-1]
            if "__new__" in vars(base)
            and not getattr(
                getattr(vars(base)["__new__"], "__func__", None), context_binding._MARK, False
            )
        ]
        assert own == [], f"PySpark defines __new__ in {own}: fix backends/context_binding"
    context_init = inspect.signature(inspect.unwrap(SparkContext.__init__)).parameters
    wanted = {"self", "master", "appName", "conf", *context_binding._CONTEXT_ARGUMENTS}
    assert wanted == set(context_init), f"SparkContext.__init__ changed: {list(context_init)}"
    # What the binding spares a bound thread; and what it reads.
    assert "Cannot run multiple SparkContexts" in inspect.getsource(
        SparkContext._ensure_initialized
    )
    assert "_active_spark_context" in vars(SparkContext)
    session_init = inspect.signature(inspect.unwrap(SparkSession.__init__)).parameters
    assert list(session_init) == ["self", "sparkContext", "jsparkSession", "options"]
    assert "_instantiatedSession" in vars(SparkSession)
    assert "_instantiatedContext" in vars(SQLContext)
    assert "cls._get_or_create(sc)" in inspect.getsource(SQLContext.getOrCreate), (
        "SQLContext.getOrCreate no longer goes through _get_or_create"
    )
    assert context_binding.install()
    assert context_binding.install()  # idempotent: wrapped once
    for owner, name in (
        (SparkContext, "__new__"),
        (SparkContext, "__init__"),
        (SparkContext, "getOrCreate"),
        (SparkSession, "__new__"),
        (SparkSession, "__init__"),
        (SQLContext, "_get_or_create"),
    ):
        attribute = inspect.getattr_static(owner, name)
        function = getattr(attribute, "__func__", attribute)
        assert getattr(function, context_binding._MARK, False), f"{owner}.{name}: not wrapped"
        inner = getattr(function, "__wrapped__", None)
        assert not getattr(inner, context_binding._MARK, False), f"{name}: wrapped twice"


# -- through the shared kernel ---------------------------------------------------------


@pytest.fixture(scope="module")
def nb(kernel: Kernel) -> Kernel:
    """The shared kernel with session nb and the helpers."""
    kernel.ok(f"%spark_session create nb\n{HELPERS}")
    return kernel


def run_job(kernel: Kernel, code: str) -> int:
    ran = kernel.ok(code)
    assert ran.execution_count is not None
    return ran.execution_count


def in_groups(kernel: Kernel, session: str, counts: list[int]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = kernel.value(f"_bb_groups({session!r}, {counts!r})")
    missing = [c for c in counts if not groups.get(f"{session}:{c}")]
    assert not missing, f"cells {missing} have no jobs in groups of {session}: {groups}"
    return groups


@pytest.mark.spark
@pytest.mark.kernel
def test_after_use_getorcreate_is_the_bound_session_and_its_jobs_are_its(nb: Kernel) -> None:
    nb.ok("%spark_session use nb")
    count = run_job(
        nb,
        "_same = [SparkSession.builder.getOrCreate() is spark,\n"
        "         SparkSession.builder.appName('x').getOrCreate() is spark]\n"
        "_n = SparkSession.builder.getOrCreate().range(10).count()",
    )
    assert nb.value("_same") == [True, True]
    assert nb.value("_n") == 10
    in_groups(nb, "nb", [count])


@pytest.mark.spark
@pytest.mark.kernel
def test_in_a_spark_session_cell_getorcreate_is_that_session(nb: Kernel) -> None:
    nb.ok("spark = None")  # not bound: only the cell magic binds
    count = run_job(
        nb,
        "%%spark_session nb\n"
        "_s = SparkSession.builder.getOrCreate()\n"
        "_same = [_bb_managed(_s), SparkSession.builder.appName('x').getOrCreate() is _s]\n"
        "_n = _s.range(10).count()",
    )
    assert nb.value("_same") == ["nb", True]
    in_groups(nb, "nb", [count])


@pytest.mark.spark
@pytest.mark.kernel
def test_pandas_on_spark_default_session_is_the_bound_one(nb: Kernel) -> None:
    nb.ok("%spark_session use nb")
    # As the pandas-on-Spark quickstart starts: its own getOrCreate, then ps in cells.
    nb.ok("spark = SparkSession.builder.getOrCreate()\nimport pyspark.pandas as ps")
    assert nb.value("_bb_managed(spark)") == "nb"
    count = run_job(nb, "_pdf = ps.range(5).to_pandas()\n_ps_same = ps.utils.default_session()")
    assert nb.value("_pdf['id'].tolist()") == [0, 1, 2, 3, 4]
    assert nb.value("_bb_managed(_ps_same)") == "nb"
    groups = in_groups(nb, "nb", [count])
    assert not groups.get("nb:background"), groups


@pytest.mark.spark
@pytest.mark.kernel
def test_where_nothing_is_bound_getorcreate_is_pysparks(nb: Kernel) -> None:
    nb.ok("spark = None")
    nb.ok(
        "_plain = SparkSession.builder.getOrCreate()\n"
        "_plain_same = [_plain is SparkSession._instantiatedSession, _bb_managed(_plain)]"
    )
    assert nb.value("_plain_same") == [True, None]
    # A plain thread started from a bound cell is bound to nothing either.
    nb.ok("%spark_session use nb")
    nb.ok(
        "import threading as _bb_threading\n_in_thread = []\n"
        "_t = _bb_threading.Thread(target=lambda: _in_thread.append("
        "SparkSession.builder.getOrCreate() is SparkSession._instantiatedSession))\n"
        "_t.start(); _t.join()"
    )
    assert nb.value("_in_thread") == [True]


@pytest.mark.spark
@pytest.mark.kernel
def test_options_are_applied_or_named_in_one_line(nb: Kernel) -> None:
    nb.ok("%spark_session use nb")
    ran = nb.ok(
        "_s = (SparkSession.builder.appName('x').master('local[1]')\n"
        "      .config('spark.sql.shuffle.partitions', '7')\n"
        "      .config('spark.executor.memory', '3g').getOrCreate())"
    )
    assert nb.value("_s is spark") is True
    # A note on stdout (not red, as an error on stderr is), in one line.
    assert ran.stderr.strip() == "", ran.stderr
    lines = [ln for ln in ran.stdout.splitlines() if ln.strip()]
    assert lines == [
        "Note: getOrCreate() gave the bound session 'nb' of jupyter_spark_sessions: "
        "appName, master, spark.executor.memory cannot change a running context "
        "(ignored; runtime SQL settings were applied)."
    ], ran.stdout
    assert "Using an existing Spark session" not in ran.stdout + ran.stderr
    assert nb.value("spark.conf.get('spark.sql.shuffle.partitions')") == "7"
    assert (
        nb.value("SparkSession._instantiatedSession.conf.get('spark.sql.shuffle.partitions')")
        != "7"
    )
    assert nb.value("spark.sparkContext.appName") != "x"
    # Options already in effect say nothing.
    quiet = nb.ok(
        "_s = SparkSession.builder.config('spark.sql.shuffle.partitions', '7').getOrCreate()"
    )
    assert quiet.stderr.strip() == quiet.stdout.strip() == "", quiet.stdout + quiet.stderr
    # The same settings asked again: told once already.
    again = nb.ok(
        "_s = SparkSession.builder.appName('x').master('local[1]')"
        ".config('spark.executor.memory', '3g').getOrCreate()"
    )
    assert again.stderr.strip() == again.stdout.strip() == "", again.stdout + again.stderr


def notebook_cells() -> list[tuple[str, str]]:
    """(number, code) of the plain-PySpark notebook's cells."""
    text = NOTEBOOK.read_text()
    parts = re.split(r"^# %% (\d+)\n", text, flags=re.MULTILINE)
    return [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts), 2)]


#: What plain PySpark prints for the notebook's cells (worked out from its data; ``show``
#: ends with an empty line).
PLAIN_OUTPUTS = {
    "3": "+------+-----+\n|region|total|\n+------+-----+\n|  east|    7|\n"
    "| north|   42|\n| south|   19|\n+------+-----+\n\n",
    "4": "+---+\n|big|\n+---+\n|  3|\n+---+\n\n",
    "5": "+-------+-----+\n|product|twice|\n+-------+-----+\n|    tea|    8|\n"
    "| coffee|   14|\n|    tea|   24|\n|  cocoa|   30|\n| coffee|   60|\n+-------+-----+\n\n",
    "6": "4 ['cocoa', 'coffee', 'coffee', 'tea']\n",
}


@pytest.mark.spark
@pytest.mark.kernel
def test_a_plain_pyspark_notebook_runs_in_the_bound_session(nb: Kernel) -> None:
    nb.ok("%spark_session use nb")
    counts: dict[str, int] = {}
    outputs: dict[str, str] = {}
    for number, code in notebook_cells():
        ran = nb.execute(code)
        assert ran.status == "ok", f"cell {number}: {ran.error_name}: {ran.error_value[:300]}"
        assert ran.execution_count is not None
        counts[number], outputs[number] = ran.execution_count, ran.stdout
    assert nb.value("_bb_managed(spark)") == "nb", "the notebook's getOrCreate left nb"
    assert {n: outputs[n] for n in PLAIN_OUTPUTS} == PLAIN_OUTPUTS
    # Its settings and its temp view went to nb, not to the context's root session.
    assert nb.value("spark.conf.get('spark.sql.repl.eagerEval.enabled')") == "true"
    root = "SparkSession._instantiatedSession"
    assert nb.value(f"{root}.conf.get('spark.sql.repl.eagerEval.enabled')") == "false"
    assert nb.value(f"{root}.catalog.tableExists('sales')") is False
    groups = in_groups(nb, "nb", [counts[n] for n in ("3", "4", "5", "6")])
    assert not groups.get("nb:background"), groups


# -- PySpark's other openings (context_binding) ----------------------------------------

#: How many tutorials open (the notebook's first cell, PySpark's own examples).
TUTORIAL_OPENING = (
    "from pyspark import SparkContext, SparkConf\n"
    "sc = SparkContext(conf=SparkConf())\n"
    "from pyspark.sql import SparkSession\n"
    "spark = SparkSession(sparkContext=sc)\n"
)


@pytest.mark.spark
@pytest.mark.kernel
def test_a_tutorial_opening_runs_in_the_bound_session(nb: Kernel) -> None:
    nb.ok("%spark_session use nb")
    ran = nb.execute(
        TUTORIAL_OPENING + "_n = spark.range(10).count()\n"
        "_r = sc.parallelize(range(4), 2).map(lambda x: x * 2).sum()"
    )
    assert ran.status == "ok", f"{ran.error_name}: {ran.error_value[:300]}"
    assert ran.execution_count is not None
    # Nothing asked that the running context cannot take: nothing said.
    assert ran.stdout == "" and ran.stderr.strip() == "", ran.stdout + ran.stderr
    assert nb.value("[_bb_managed(spark), sc is spark.sparkContext, _n, _r]") == [
        "nb",
        True,
        10,
        12,
    ]
    # `spark` is still nb: the next cells are nb's too.
    later = run_job(nb, "_n = spark.range(5).count()")
    groups = in_groups(nb, "nb", [ran.execution_count, later])
    assert len(groups[f"nb:{ran.execution_count}"]) >= 2, groups  # the SQL and the RDD job
    root = "SparkSession._instantiatedSession"
    assert nb.value(f"{root} is not spark and _bb_managed({root}) is None") is True


@pytest.mark.spark
@pytest.mark.kernel
def test_settings_a_running_context_cannot_take_are_noted_once_on_stdout(nb: Kernel) -> None:
    # A session of its own: a note is once per session and set of settings. (The
    # kernel runs local[2]: a master asked for and in effect is not ignored.)
    nb.ok("%spark_session create notes")
    nb.ok("%spark_session use notes")
    opening = TUTORIAL_OPENING.replace(
        "SparkConf()",
        "SparkConf().setAppName('tutorial').setMaster('local[1]')"
        ".set('spark.sql.shuffle.partitions', '5')",
    )
    runs = [nb.execute(opening + "_n = spark.range(3).count()") for _ in range(3)]
    for ran in runs:
        assert ran.status == "ok", f"{ran.error_name}: {ran.error_value[:300]}"
        assert ran.stderr.strip() == "", ran.stderr
    assert runs[0].stdout.splitlines() == [
        "Note: SparkContext() gave the running context of the bound session 'notes' of "
        "jupyter_spark_sessions: appName, master cannot change a running context "
        "(ignored; runtime SQL settings were applied)."
    ], runs[0].stdout
    assert [ran.stdout for ran in runs[1:]] == ["", ""]
    # The runtime SQL setting went to the bound session, as to a context's sessions.
    assert nb.value("[_bb_managed(spark), spark.conf.get('spark.sql.shuffle.partitions')]") == [
        "notes",
        "5",
    ]
    assert nb.value("spark.sparkContext.appName") != "tutorial"
    # The same settings through the builder: told already.
    quiet = nb.ok("_s = SparkSession.builder.appName('t2').master('local[1]').getOrCreate()")
    assert quiet.stdout == "" and quiet.stderr.strip() == "", quiet.stdout + quiet.stderr
    nb.ok("%spark_session use nb")
    nb.ok("_bb_reg.stop('notes').wait(30)")


#: PySpark's other ways to the context and a session, each checked in a bound cell.
SIBLINGS = {
    "SparkContext.getOrCreate()": "SparkContext.getOrCreate() is _ctx",
    "SparkContext.getOrCreate(conf)": "SparkContext.getOrCreate(SparkConf()) is _ctx",
    "SparkContext(master, appName)": "SparkContext('local[2]', 'tutorial') is _ctx",
    "SparkContext()": "SparkContext() is _ctx",
    "SparkSession(sc)": "SparkSession(_ctx) is spark",
    "SparkSession(sc, options)": "SparkSession(_ctx, options={'k': 'v'}) is spark",
    "SparkSession(sc).builder.getOrCreate()": "SparkSession(_ctx).builder.getOrCreate() is spark",
    "SQLContext(sc)": "SQLContext(_ctx).sparkSession is spark",
    "SQLContext.getOrCreate(sc)": "SQLContext.getOrCreate(_ctx).sparkSession is spark",
    "SQLContext.getOrCreate(sc) again": "SQLContext.getOrCreate(_ctx) is _sql",
}


@pytest.mark.spark
@pytest.mark.kernel
def test_pysparks_other_openings_give_the_shared_context_and_the_bound_session(
    nb: Kernel,
) -> None:
    nb.ok("%spark_session use nb")
    checks = ",\n".join(f"    {name!r}: {check}" for name, check in SIBLINGS.items())
    count = run_job(
        nb,
        "import warnings\n"
        "from pyspark import SparkContext, SparkConf\n"
        "from pyspark.sql import SQLContext\n"
        "_ctx = spark.sparkContext\n"
        # The process's first SQLContext is another session's (the root's).
        "_first = SQLContext._instantiatedContext\n"
        "SQLContext._instantiatedContext = SQLContext(_ctx, SparkSession._instantiatedSession)\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', FutureWarning)  # SQLContext is deprecated\n"
        "    _sql = SQLContext.getOrCreate(_ctx)\n"
        "    _got = {\n" + checks + "\n    }\n"
        "    _n = SQLContext.getOrCreate(_ctx).range(6).count()\n"
        "SQLContext._instantiatedContext = _first\n",
    )
    assert nb.value("_got") == dict.fromkeys(SIBLINGS, True)
    assert nb.value("[_n, spark.conf.get('k')]") == [6, "v"]
    in_groups(nb, "nb", [count])


@pytest.mark.spark
@pytest.mark.kernel
def test_where_nothing_is_bound_pysparks_constructors_are_unchanged(nb: Kernel) -> None:
    nb.ok("spark = None")  # no managed session bound
    probe = (
        "from pyspark import SparkContext, SparkConf\n"
        "from pyspark.sql import SQLContext\n"
        "def _probe():\n"
        "    ctx = SparkContext._active_spark_context\n"
        "    try:\n"
        "        SparkContext(conf=SparkConf())\n"
        "        raised = ''\n"
        "    except ValueError as error:\n"
        "        raised = str(error)\n"
        "    plain = SparkSession(ctx)\n"
        "    return [raised.split(';')[0], _bb_managed(plain), plain is SparkSession(ctx),\n"
        "            SQLContext.getOrCreate(ctx) is SQLContext._instantiatedContext]\n"
    )
    unchanged = ["Cannot run multiple SparkContexts at once", None, False, True]
    nb.ok(probe + "_plain = _probe()")
    assert nb.value("_plain") == unchanged
    # A plain thread started from a bound cell is bound to nothing either.
    nb.ok("%spark_session use nb")
    nb.ok(
        "import threading as _bb_threading\n_in_thread = []\n"
        "_t = _bb_threading.Thread(target=lambda: _in_thread.append(_probe()))\n"
        "_t.start(); _t.join()"
    )
    assert nb.value("_in_thread") == [unchanged]


# -- Spark Connect, in the same shared kernel ------------------------------------------


@pytest.fixture(scope="module")
def connect_c(nb: Kernel) -> Iterator[Kernel]:
    """Connect session c on a local server this module starts in the shared kernel,
    stopped again (session and server) at the module's end."""
    nb.ok(
        "_bb_reg.config.connect_master = 'local[2]'\n"
        "_bb_reg.config.connect_conf = {'spark.ui.enabled': 'false'}"
    )
    nb.ok("%spark_session create c --remote local", timeout=240)
    yield nb
    nb.ok("%spark_session use nb")
    nb.ok("_bb_reg.stop('c').wait(30)\n_bb_reg.connect_endpoints.stop_local_server(timeout=20)")


@pytest.mark.spark
@pytest.mark.kernel
def test_connect_bound_getorcreate_is_the_bound_session(connect_c: Kernel) -> None:
    kernel = connect_c
    kernel.ok("%spark_session use c")
    count = run_job(
        kernel,
        "from pyspark.sql.connect.session import SparkSession as _CS\n"
        "_same = [SparkSession.builder.getOrCreate() is spark,\n"
        "         SparkSession.builder.appName('x').getOrCreate() is spark,\n"
        "         _CS.builder.getOrCreate() is spark]\n"
        "_n = SparkSession.builder.getOrCreate().range(10).count()",
    )
    assert kernel.value("_same") == [True, True, True]
    assert kernel.value("_n") == 10
    in_groups(kernel, "c", [count])
    ran = kernel.ok(
        "_s = SparkSession.builder.config('spark.sql.shuffle.partitions', '9').getOrCreate()\n"
        "_p = spark.conf.get('spark.sql.shuffle.partitions')"
    )
    assert kernel.value("_p") == "9" and ran.stderr.strip() == "", ran.stderr
