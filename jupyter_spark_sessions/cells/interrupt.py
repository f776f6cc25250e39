"""The kernel's Interrupt during a managed cell: cancel that cell's Spark jobs, and
only those, then end the cell with ``KeyboardInterrupt``.

ipykernel turns SIGINT into ``KeyboardInterrupt`` for the whole execute request (its
``pre_handler_hook`` installs ``default_int_handler``). Raised while the cell waits on
the JVM, it breaks PySpark's py4j connection ("Answer from Java side is empty") and
the job goes on running; raised in a Spark Connect call, it ends the cell with a
gRPC traceback; PySpark's own handler (replaced by ipykernel's) would cancel every job
of every session. Instead, while a cell runs, this handler asks the job board to
cancel the cell's jobs (``JobBoard.request_interrupt``): every job of the cell, in
whatever session, threads it started with the cell's tags included (the board files
their jobs under the cell too). When the cell is waiting on Spark (the JVM or the
Connect server) it returns: the job ends cancelled, the Spark call fails, and
``cells/error_lines`` ends the cell with ``KeyboardInterrupt`` in one line. Anywhere else it
raises ``KeyboardInterrupt`` at once, as usual (a cell waiting on a thread it started whose
Spark job the Interrupt cancelled ends in that one line too; pure Python code keeps its
traceback); a second Interrupt always does.
``SparkSessionsConfig.interrupt_cancels = "all"`` brings PySpark's behaviour back.

A cell waiting on a streaming query (``awaitTermination``, ``processAllAvailable``,
``awaitAnyTermination``) has no job a cancel could end: the Interrupt raises
``KeyboardInterrupt`` in the wait itself, as plain PySpark's does (also when it came a
moment before the wait, in a py4j call that was no job: a watch re-sends it once the
cell waits), and the cell ends in one line saying what became of the query (stopped if
this cell started it, else left running: docs/jobs.md). The stop and the cancel of the
cell's jobs are asked for once the cell ended, after py4j's clean-up of the ended call
(``backends/driver``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, Any

from .. import job_tags
from ..backends import driver, streaming_calls
from ..errors import SparkSessionsError
from .tagging import count_of_cell

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..app import SparkSessionsApp
    from .error_lines import CancelledCellErrors


class CellInterrupts:
    """SIGINT handling for the cells of one shell (main thread only: signals are
    delivered there; cells on subshells keep ipykernel's behaviour): the second step
    of a cell's life (``cells/lifecycle``)."""

    def __init__(
        self, shell: InteractiveShell, app: SparkSessionsApp, errors: CancelledCellErrors
    ) -> None:
        self.shell = shell
        self.registry = app.registry
        self.board = app.board
        self.tagger = app.tagger
        self.errors = errors
        self._saved: Any = None
        self._waiting = False
        #: The query whose wait the Interrupt ended and that this cell started: stopped
        #: once the cell ended (``_end_stream_wait``).
        self._stop_after_cell: str | None = None
        #: The cell whose jobs that Interrupt cancels, once it ended.
        self._interrupt_after_cell: tuple[str, int] | None = None
        #: Cells ended so far: a watch started in a cell ends with it.
        self._cells_ended = 0
        #: The cell, after an Interrupt that cancelled its jobs, waits on a query: the
        #: watch re-sent the Interrupt, which ends that wait.
        self._late_wait = False

    def pre_run_cell(self, info: Any) -> None:
        self.errors.cell_started(count_of_cell(self.shell, info))
        if not len(self.registry) or threading.current_thread() is not threading.main_thread():
            return
        self.errors.install()
        self._waiting = self._late_wait = False
        self._saved = signal.signal(signal.SIGINT, self._on_interrupt)

    def post_run_cell(self, result: Any) -> None:
        if threading.current_thread() is threading.main_thread():  # not a subshell's cell
            self._cells_ended += 1
        if self.errors.interrupted_wait is not None:
            driver.drop_interrupted_connection()
        self.errors.ended(result)
        if self._interrupt_after_cell is not None:
            cell, self._interrupt_after_cell = self._interrupt_after_cell, None
            self.board.request_interrupt(*cell)
        if self._stop_after_cell is not None:
            run_id, self._stop_after_cell = self._stop_after_cell, None
            with contextlib.suppress(SparkSessionsError):  # it ended meanwhile
                self.board.queries.request_stop(run_id, "interrupt")
        if self._saved is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._saved)
            self._saved = None

    def _on_interrupt(self, signum: int, frame: FrameType | None) -> None:
        board = self.board
        if self.registry.config.interrupt_cancels == "all":
            board.request_cancel(everything=True)
            raise KeyboardInterrupt
        cell = self.tagger.current_cell()
        waited = streaming_calls.waited_on(frame)
        if waited is not None and (not self._waiting or self._late_wait):
            # No job cancel ends a wait on a streaming query: the Interrupt ends the wait
            # itself (py4j and gRPC close that call's connection), as plain PySpark's.
            # The cell's jobs are cancelled once it ended: py4j's clean-up of the ended
            # wait breaks every call in flight meanwhile, a cancel's included.
            self._interrupt_after_cell = cell
            self.errors.interrupted_wait = self._end_stream_wait(waited, cell)
            driver.interrupting_a_call()
            raise KeyboardInterrupt
        if cell is None or self._waiting:
            raise KeyboardInterrupt
        board.request_interrupt(*cell)
        group = job_tags.group_id(*cell)
        # The cell's error says which of its Spark jobs the Interrupt cancelled.
        self.errors.interrupted = f"Interrupted: the Spark jobs of {group} were cancelled"
        if _waiting_on_spark(frame):
            self._waiting = True
            # The cancelled Spark call ends the cell; unless the call was no job (a
            # query's start, a setting read) and the cell then waits on a query.
            self._watch_for_a_late_wait(self._cells_ended)
            return
        raise KeyboardInterrupt

    def _watch_for_a_late_wait(self, cells_ended: int) -> None:
        """Until this cell ends: should it block in a wait on a streaming query, which no
        job cancel ends, interrupt that wait as a first Interrupt there would have."""
        main = threading.main_thread()

        def watch() -> None:
            while self._cells_ended == cells_ended and main.is_alive():
                frame = sys._current_frames().get(main.ident or 0)
                if streaming_calls.waited_on(frame) is not None:
                    self._late_wait = True
                    signal.pthread_kill(main.ident or 0, signal.SIGINT)
                    return
                time.sleep(LATE_WAIT_LOOK)

        threading.Thread(target=watch, name="jss-late-stream-wait", daemon=True).start()

    def _end_stream_wait(self, waited: object, cell: tuple[str, int] | None) -> str:
        """What becomes of the query a cell waited on (docs/jobs.md): stopped when this
        cell started it (the cell's own work, as its jobs), else left running. No Spark
        call here: the main thread's py4j connection is in the middle of the wait. The
        stop is asked for once the cell ended: py4j's clean-up of the ended wait closes
        every connection to the JVM, a ``stop()`` in flight included."""
        queries = self.board.queries
        record = queries.of_object(waited)
        if record is None:  # a query manager's wait, or a query not on the board
            return (
                "Interrupted: stopped waiting; the streaming queries keep running "
                "(`%spark_session stop_query NAME` or `q.stop()` stops one)."
            )
        label = f"'{record.name}'" if record.name else record.id
        if cell is not None and record.started_count == cell[1] and not record.ended:
            self._stop_after_cell = record.run_id
            return f"Interrupted: streaming query {label} was stopped (this cell started it)."
        return (
            f"Interrupted: stopped waiting for streaming query {label}, which keeps running "
            f"(`%spark_session stop_query {record.name or record.id}` stops it)."
        )


#: Seconds between two looks at a cell after an Interrupt cancelled its jobs (its wait on
#: a streaming query, if it comes to one, ends this long after at most).
LATE_WAIT_LOOK = 0.1

#: Where a cell waits on Spark: a py4j call (raising there would leave its connection
#: half-read) or a Spark Connect call (gRPC's stream, the client's retries).
_SPARK_CLIENT_MODULES = ("py4j.", "grpc.", "pyspark.sql.connect.client.")


def _waiting_on_spark(frame: FrameType | None) -> bool:
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(_SPARK_CLIENT_MODULES):
            return True
        frame = frame.f_back
    return False
