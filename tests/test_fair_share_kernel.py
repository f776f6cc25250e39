"""Sessions' weights, through a real kernel on a 4-slot context (``local[4]``): weights
1:3 need more than 2 slots to show (on 2, the lighter session's first task already
takes one of them).

The kernel is this module's own: its context has 4 slots, the run's shared one 2.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import start_extension_kernel

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

CONFIG = (
    "c.SparkSessionsConfig.default_master = 'local[4]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false'}\n"
)

SETUP = """
import threading
from pyspark.sql.functions import udf

_reg = __import__('jupyter_spark_sessions').default_registry()
_root = _reg.session('light').sparkContext._jsc.sc().taskScheduler().rootPool()


@udf('long')
def _half_second(x):
    import time
    time.sleep(0.5)
    return x


def _busy(name):
    '''A job of 400 half-second tasks in session `name`, from a thread.'''
    df = _reg.session(name).range(0, 400, 1, 400).select(_half_second('id'))
    threading.Thread(target=lambda: _outcome.update({name: _run(df)}), daemon=True).start()


def _run(df):
    try:
        return len(df.collect())
    except Exception as exc:
        return type(exc).__name__


def _warm(name):
    _reg.session(name).range(0, 4, 1, 4).select(_half_second('id')).collect()


def _running(pool):
    return _root.getSchedulableByName(pool).runningTasks()


def _completed():
    tracker = _reg.session('light').sparkContext.statusTracker()
    stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
    return sum(s.numCompletedTasks for s in stages if s is not None)


_outcome = {}
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    k = start_extension_kernel(tmp_path_factory, CONFIG)
    k.ok("%spark_session create light\n%spark_session create heavy --weight 3")
    k.ok(SETUP)
    yield k
    k.shutdown()


def test_weights_1_to_3_give_the_sessions_running_tasks_in_that_ratio(kernel: Kernel) -> None:
    heavy = "heavy (weight 3, min share 0)"
    # Both sessions' Python workers first: a cold worker's first task takes seconds.
    kernel.ok("_warm('light')\n_warm('heavy')")
    kernel.ok("_busy('light')\n_busy('heavy')")
    deadline = time.monotonic() + 60
    both = f"[_running('light'), _running({heavy!r})]"
    while 0 in (running := kernel.value(both)) or sum(running) < 4:
        assert time.monotonic() < deadline, f"both sessions never ran together: {running}"
        time.sleep(0.2)
    # Spark shares slots as tasks end (it never preempts one): the window starts once
    # every slot has turned over twice since both ran.
    turned = kernel.value("_completed()") + 8
    while kernel.value("_completed()") < turned:
        assert time.monotonic() < deadline, "the sessions' tasks did not end"
        time.sleep(0.2)
    # Over a window where both have work: the mean running tasks of each.
    samples = []
    for _ in range(25):
        samples.append(kernel.value(both))
        time.sleep(0.2)
    light = sum(s[0] for s in samples) / len(samples)
    weighted = sum(s[1] for s in samples) / len(samples)
    assert 0.8 * 3 <= weighted / light <= 1.2 * 3, f"light {light}, heavy {weighted}: {samples}"
    assert kernel.value("_outcome") == {}, "a job ended inside the window"
    kernel.ok("%spark_session cancel --all")
