"""Which sessions hold a temporary view: asked once a query of one session missed a
table or view, so that its error can name the session that has it (temporary views
belong to the session that made them).

One analysis per session, public and the same for classic and Spark Connect sessions:
the schema of ``system.session.`name```, the qualified name Spark 4 gives temporary
views (a table of that name does not answer to it). It runs no Spark job and no Spark
Connect operation (an AnalyzePlan request, which the board does not list): 20-40 ms on
a warm local[1] driver, hit or miss. Not ``SHOW VIEWS``: a Connect session runs it as an
operation, which the board would file under the cell that asked (as a failed one, since
the cell is handling an error); nor ``Catalog.listTables``: PySpark reads its result with
``toLocalIterator``, a Spark job (0.3-0.9 s warm, 4 s the first time).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)


def has_temp_view(session: Any, name: str) -> bool:
    """Whether ``session`` (classic or Spark Connect) has a temporary view ``name``
    (compared as Spark compares names: without case by default)."""
    quoted = "`" + name.replace("`", "``") + "`"
    try:
        return session.table(f"system.session.{quoted}").schema is not None
    except Exception as exc:
        if "TABLE_OR_VIEW_NOT_FOUND" in str(exc):
            return False
        raise


def sessions_with_temp_view(sessions: Iterable[tuple[str, Any]], name: str) -> list[str]:
    """The names of those of ``sessions`` ((name, SparkSession) pairs) that have a
    temporary view ``name``; a session that cannot answer now is left out."""
    found = []
    for label, session in sessions:
        try:
            if has_temp_view(session, name):
                found.append(label)
        except Exception as exc:  # stopped, unreachable: not one to name
            log.debug("session %s: no answer about temporary views (%s)", label, exc)
    return found
