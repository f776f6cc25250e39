"""One Spark scheduler pool per session, so that one session's big job does not keep
another's jobs waiting for every slot (Spark's FIFO queue) on a context this project
started (FAIR scheduling between pools; FIFO inside each).

A session's SQL jobs reach its pool from any thread: Spark copies a session's
``spark.*`` settings into the local properties of each job it runs
(``SQLExecution.withSQLConfPropagated``), ``spark.scheduler.pool`` included. A pool is
made before the session's first job, with its weight and minimum share (Spark would
make an unknown pool on first use, with weight 1 and a WARN line in the cell): through
the task scheduler's root pool, a private API (``tests/test_private_apis.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .driver import scala_context

if TYPE_CHECKING:
    from pyspark import SparkContext

MODE = "spark.scheduler.mode"
POOL = "spark.scheduler.pool"


@dataclass(frozen=True)
class PoolShare:
    """A session's share of the task slots against other sessions' (Spark's pool
    ``weight`` and ``minShare``), fixed when its pool is made."""

    weight: int = 1
    min_share: int = 0


DEFAULT_SHARE = PoolShare()


def pool_name(session: str, share: PoolShare) -> str:
    """The pool a session with ``share`` runs its jobs in: named after the session, and
    after the share unless it is the default. Spark fixes a pool's shares when it is
    made, so a new share is a new pool (Spark's UI lists it under that name)."""
    if share == DEFAULT_SHARE:
        return session
    return f"{session} (weight {share.weight}, min share {share.min_share})"


def describe(share: PoolShare) -> str:
    """The share in a user's words: "weight 3", "weight 3, at least 2 slots" (Spark's
    minShare, named only when it asks for something)."""
    if not share.min_share:
        return f"weight {share.weight}"
    slots = "slot" if share.min_share == 1 else "slots"
    return f"weight {share.weight}, at least {share.min_share} {slots}"


def mode(sc: SparkContext) -> str:
    """The context's scheduling mode between jobs: "FAIR" or "FIFO" (Spark's default)."""
    return str(sc.getConf().get(MODE, "FIFO")).upper()


def ensure_pool(sc: SparkContext, name: str, weight: int = 1, min_share: int = 0) -> None:
    """Make the pool ``name`` (FIFO inside) unless the context has one of that name."""
    root = scala_context(sc).taskScheduler().rootPool()  # private
    if root.getSchedulableByName(name) is not None:
        return
    jvm: Any = sc._jvm
    fifo = jvm.org.apache.spark.scheduler.SchedulingMode.FIFO()
    root.addSchedulable(jvm.org.apache.spark.scheduler.Pool(name, fifo, min_share, weight))


def pool_weights(sc: SparkContext, name: str) -> tuple[int, int] | None:
    """(weight, minimum share) of the pool ``name``; None when there is none."""
    pool = scala_context(sc).taskScheduler().rootPool().getSchedulableByName(name)  # private
    return None if pool is None else (int(pool.weight()), int(pool.minShare()))
