"""The first rows of a DataFrame as pandas, as ``limit(n).toPandas()`` gives them, without
the stage that call adds on classic PySpark under Arrow (``java/jss/FirstRows.java``
says why): what ``%%spark_sql -o`` fetches (``sql_runs.as_pandas``).

On a classic session the limited DataFrame's ``toPandas()`` runs as usual, PySpark's
checks and conversion to pandas included, but its Arrow batches come from
``jss.FirstRows`` (the partitions read in waves as ``collect()`` reads them, each task
turning its first rows into Arrow; the limit's rows kept here) instead of from
``_collect_as_arrow``. Private PySpark API, in this module only: that method (which
``toPandas`` calls for its batches: replaced on the one DataFrame), ``_jdf``,
``SCCallSiteSync``, ``_load_from_socket`` and ``ArrowCollectSerializer``;
``tests/test_private_apis.py`` checks them against the installed PySpark. Without Arrow,
or on Spark Connect, ``limit(n).toPandas()`` as is (the former has no such stage; the
latter's server plans the limit).
"""

from __future__ import annotations

from typing import Any

from . import driver_jar

CLASS_NAME = "jss.FirstRows"


def as_pandas(frame: Any, rows: int) -> Any:
    """The first ``rows`` rows of ``frame`` as the pandas DataFrame ``toPandas()`` gives."""
    return limited(frame, rows).toPandas()


def limited(frame: Any, rows: int) -> Any:
    """``frame.limit(rows)``, whose ``toPandas()`` takes its Arrow batches from
    ``jss.FirstRows`` on a classic session."""
    first = frame.limit(rows)
    if is_classic(frame):
        first._collect_as_arrow = ArrowBatchesOfFirstRows(first)  # private
    return first


def is_classic(frame: Any) -> bool:
    from pyspark.sql.classic.dataframe import DataFrame

    return isinstance(frame, DataFrame)


class ArrowBatchesOfFirstRows:
    """Stands in for ``DataFrame._collect_as_arrow`` (``toPandas``'s one call of it)."""

    def __init__(self, limited: Any) -> None:
        self.limited = limited
        #: Whether ``toPandas`` asked for them (the upgrade test's check).
        self.called = False

    def __call__(self, split_batches: bool = False, **options: Any) -> list[Any]:
        from pyspark.errors.exceptions.captured import unwrap_spark_exception
        from pyspark.sql.pandas.serializers import ArrowCollectSerializer
        from pyspark.traceback_utils import SCCallSiteSync
        from pyspark.util import _load_from_socket

        self.called = True
        sc = self.limited.sparkSession.sparkContext
        with SCCallSiteSync(sc):  # type: ignore[no-untyped-call]  # the job name, as toPandas
            served = driver_jar.instance(sc, CLASS_NAME).serveArrow(self.limited._jdf)
        if served is None:  # no limit left in the plan: PySpark's own way costs nothing more
            method = type(self.limited)._collect_as_arrow
            return method(self.limited, split_batches=split_batches, **options)  # type: ignore[no-any-return]
        connection, secret, server, keep = served
        try:
            loaded: Any = _load_from_socket((connection, secret), ArrowCollectSerializer())
            if hasattr(loaded, "__enter__"):  # PySpark 4.3: closes the socket on exit
                with loaded as stream:
                    batches = _cut_to_rows(_in_order(list(stream)), keep)
            else:  # 4.1: the stream itself
                batches = _cut_to_rows(_in_order(list(loaded)), keep)
        finally:
            with unwrap_spark_exception():
                server.getResult()
        if split_batches:  # self-destruct: each column in an allocation of its own
            import pyarrow as pa  # type: ignore[import-untyped]

            batches = [
                pa.RecordBatch.from_arrays(
                    [pa.concat_arrays([array]) for array in batch], schema=batch.schema
                )
                for batch in batches
            ]
        return batches


def _cut_to_rows(batches: list[Any], rows: int) -> list[Any]:
    """The batches cut to their first ``rows`` rows (the tasks' last batch may hold more
    than the limit left)."""
    kept = []
    for batch in batches:
        if rows <= 0:
            break
        kept.append(batch if batch.num_rows <= rows else batch.slice(0, rows))
        rows -= batch.num_rows
    return kept


def _in_order(items: list[Any]) -> list[Any]:
    """The batches ``ArrowCollectSerializer`` read, in order: PySpark 4.3's orders them
    itself; earlier ones (4.1) yield the order last, as a list of indices."""
    if items and isinstance(items[-1], list):
        *batches, order = items
        return [batches[index] for index in order]
    return items
