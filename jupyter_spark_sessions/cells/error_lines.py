"""How a cell ends when Spark failed for an expected reason: one line a user can read.

- A cancel (the sidebar, the panel, ``cancel``, the REST relay, ``stop``, the kernel's
  Interrupt) makes the cell's Spark call fail with a Java or gRPC error of a hundred
  lines. The cell shows ``JobsCancelled: The Spark jobs of a:4 (job 3) were cancelled
  from the sidebar.`` (the board knows which groups, jobs and from where; Spark's own
  ``[SPARK_JOB_CANCELLED] ...`` line when the board knows nothing), and ends with
  ``KeyboardInterrupt`` when the kernel's Interrupt caused it.
- A lost driver, a stopped context, a lost Connect server: the session's backend
  explains it in one line with the way out (``restart``, ``reconnect``).
- An object made before its session or driver went away (``sessions/gone_objects``): whose it
  was and what to run again.
- A column or UDF of the other PySpark flavour: what to do instead.
- The RDD API or ``sparkContext`` asked of a Spark Connect session: the classic way.
- An import of a module only a session's own packages have (``package_hints``).
- A SQL cell's statement Spark refused: its error class, message and position marker
  (``magics/sql_magic``, ``sql/error_text``), named as Spark's error.

Every other error keeps its traceback; ``%tb`` still shows the full one of these.
"""

from __future__ import annotations

import sys
import threading
import traceback
from types import TracebackType
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..backends.spark_error_reading import cancellation_line, connect_lacks, mixes_flavours
from ..errors import JobsCancelled, SessionLostError, SqlStatementError
from ..kernel import ipykernel_internals
from ..sessions.gone_objects import OLD_DRIVER, gone_object_line, looks_gone, sessions_used
from .package_hints import package_hint

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..app import SparkSessionsApp

#: What a cell sees when it hands a column or UDF of one PySpark flavour (classic or
#: Spark Connect) to a session of the other: PySpark's own messages explain nothing.
MIXED_FLAVOURS = (
    "This mixes PySpark's classic and Spark Connect APIs: a column or UDF made in a cell "
    "bound to one kind of session is used in the other kind. Make it in a cell bound to "
    "the session that runs it (`%%spark_session NAME`, or after `%spark_session use NAME`)."
)


#: A JVM-only API asked of a Spark Connect session or DataFrame (issue 38).
CONNECT_LACKS = (
    "Spark Connect has no `{}`: the RDD API, `sparkContext` and other JVM objects need a "
    "classic session, which runs its driver in this kernel: `%spark_session create NAME` "
    "(without --remote)."
)


#: How a cancelled cell names where the cancel came from (``JobBoard.request_cancel``).
CANCEL_FROM = {
    "sidebar": "from the sidebar",
    "panel": "from the panel",
    "cell": "from the cell's progress view",
    # The server's REST route: the sidebar's Shared driver section, or anyone's script.
    "relay": "from the sidebar's Shared driver section or by a script",
    "magic": "by `%spark_session cancel`",
    "stop": "by `%spark_session stop`",
    "interrupt": "by the kernel's Interrupt",
}


def cancel_story(cancels: list[tuple[str, str | None, list[int]]]) -> str:
    """``The Spark jobs of a:4 (job 3) were cancelled from the sidebar.`` for the
    groups a cell's cancel reached (``JobBoard.cancels_of_cell``, which leaves out a
    group that ran nothing): one clause per place the cancels came from."""
    by_source: dict[str | None, list[str]] = {}
    for group_id, source, job_ids in cancels:
        jobs = ""
        if job_ids:
            word = "job" if len(job_ids) == 1 else "jobs"
            jobs = f" ({word} {', '.join(map(str, job_ids))})"
        by_source.setdefault(source, []).append(f"{group_id}{jobs}")
    clauses = []
    for source, groups in by_source.items():
        where = f" {CANCEL_FROM[source]}" if source in CANCEL_FROM else ""
        named = ", ".join(groups[:-1]) + " and " + groups[-1] if len(groups) > 1 else groups[0]
        clauses.append(f"{named} were cancelled{where}")
    return "The Spark jobs of " + "; ".join(clauses) + "."


class CancelledCellErrors:
    """How the shell shows the errors of Spark calls (wrapping ``showtraceback``)."""

    def __init__(self, shell: InteractiveShell, app: SparkSessionsApp | None = None) -> None:
        self.shell = shell
        self.app = app
        self.registry = app.registry if app else None
        self.installed = False
        #: Set by the Interrupt handler (main thread) when it cancels the running cell.
        self.interrupted: str | None = None
        #: Set by the Interrupt handler when it ended a wait on a streaming query: what
        #: became of the query, the cell's one line.
        self.interrupted_wait: str | None = None
        # Per thread that runs cells (the main shell, each subshell): the running
        # cell's count, and the one line its error was shown as.
        self._cell = threading.local()

    def cell_started(self, count: int) -> None:
        """Cell ``count`` (as frontends show it) begins on this thread: its cancelled
        groups are looked up by it, also once the session it ran in is no longer the
        thread's (a ``%%spark_session`` body's tags are gone before IPython shows the
        error that ended it)."""
        self._cell.count = count
        self._cell.shown = None

    def install(self) -> None:
        """Shorten Spark's errors from now on (at the first managed cell)."""
        if not self.installed:
            ipykernel_internals.wrap_showtraceback(self.shell, self._show)
            self.installed = True

    def _show(self, error: tuple[type[BaseException], BaseException, TracebackType | None]) -> bool:
        """Show ``error`` in one line if it is expected (a cancellation, a lost driver or
        server, mixed flavours); False (IPython shows the whole traceback) otherwise."""
        etype, value, tb = error
        if isinstance(value, UsageError):  # the magics' own one-line messages
            return False
        shown: tuple[type[BaseException], str] | None = None
        spark_line = cancellation_line(value)
        if spark_line is not None:
            story = self._cancels_of_this_cell()
            shown = (JobsCancelled, story) if story else (etype, spark_line)
            if (interrupted := self._interrupted()) is not None:
                shown = (KeyboardInterrupt, story or f"{interrupted} ({spark_line})")
            self._cell.shown = shown
        elif self._interrupted_wait() is not None and _raised_by_interrupt(value):
            # py4j's clean-up of the ended wait may itself fail (a Py4JError raised while
            # handling the KeyboardInterrupt): the Interrupt ended the cell all the same.
            shown = (KeyboardInterrupt, self._interrupted_wait() or "")
            self._cell.shown = shown
        elif isinstance(value, KeyboardInterrupt) and self._interrupted() is not None:
            # The Interrupt found the cell waiting on something else than Spark (a
            # thread it started, say): KeyboardInterrupt came at once, and the Spark jobs
            # the cell had running were cancelled. Pure Python code keeps its traceback.
            story = self._cancels_of_this_cell(with_jobs=True)
            shown = (KeyboardInterrupt, story) if story else None
            self._cell.shown = shown
        elif isinstance(value, SqlStatementError):  # a SQL cell's: named as Spark's error
            cause = value.__cause__
            shown = (type(cause) if cause is not None else etype, str(value))
        elif lacked := connect_lacks(
            value, [(f.filename, f.name) for f in traceback.extract_tb(tb)]
        ):
            shown = (etype, CONNECT_LACKS.format(lacked))
        elif mixes_flavours(value, [f.filename for f in traceback.extract_tb(tb)]):
            shown = (etype, MIXED_FLAVOURS)
        elif looks_gone(value):
            # An object of a session given up first: a live session's backend would
            # otherwise take its error for its own loss.
            line = gone_object_line(tb)
            shown = (SessionLostError, line) if line else self._lost(value, tb)
            if shown is None and self.app and self.app.context.replaced:
                shown = (SessionLostError, OLD_DRIVER)
        elif (hint := package_hint(value, self.registry)) is not None:
            shown = (ModuleNotFoundError, hint)
        else:
            shown = self._lost(value, tb)
        if shown is None:
            return False
        sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %tb
        ipykernel_internals.show_error(self.shell, *shown)
        return True

    def _interrupted(self) -> str | None:
        # Signals reach the main thread only: a subshell's cell was not interrupted.
        if threading.current_thread() is not threading.main_thread():
            return None
        return self.interrupted

    def _interrupted_wait(self) -> str | None:
        if threading.current_thread() is not threading.main_thread():
            return None
        return self.interrupted_wait

    def _cancels_of_this_cell(self, with_jobs: bool = False) -> str:
        """The cancel story of the cell this thread runs (``with_jobs``: only if a
        cancel reached a job of it the board had seen)."""
        if self.app is None:
            return ""
        count: int | None = getattr(self._cell, "count", None)
        if count is None:  # (a cell that began before the extension was loaded)
            cell = self.app.tagger.current_cell()
            count = cell[1] if cell else self.shell.execution_count
        cancels = self.app.board.cancels_of_cell(count)
        if with_jobs and not any(job_ids for _, _, job_ids in cancels):
            return ""
        return cancel_story(cancels) if cancels else ""

    def _lost(
        self, error: BaseException, tb: TracebackType | None
    ) -> tuple[type[BaseException], str] | None:
        # The bound session first: its backend knows best whether this is its loss. When
        # the failed calls show which sessions they used, only those may claim it.
        if self.registry is None:
            return None
        bound = self.registry.find(self.shell.user_ns.get("spark"))
        names = self.registry.names()
        if bound is not None:
            names = [bound.name] + [n for n in names if n != bound.name]
        used = sessions_used(tb)
        for name in names:
            if used and not any(s is self.registry.get(name).session for s in used):
                continue
            # Its own: the cell ran bound to it, or the failed calls used it.
            own = bool(used) or (bound is not None and name == bound.name)
            try:
                line = self.registry.get(name).backend.explain(error, bound=own)
            except Exception:  # never hide the user's error behind one of ours
                continue
            if line:
                return (SessionLostError, line)
        return None

    def ended(self, result: Any) -> None:
        """After the cell: the kernel's reply names a cancelled cell's error as its one
        line does (``JobsCancelled``, or ``KeyboardInterrupt`` when the kernel's
        Interrupt caused it), with the same text."""
        shown: tuple[type[BaseException], str] | None = getattr(self._cell, "shown", None)
        self._cell.count = self._cell.shown = None
        interrupted = None
        if threading.current_thread() is threading.main_thread():
            interrupted, self.interrupted = self.interrupted, None
            self.interrupted_wait = None
        error = getattr(result, "error_in_exec", None)
        if error is None:
            return
        if shown is not None and shown[0] in (JobsCancelled, KeyboardInterrupt):
            replacement = shown[0](shown[1])
            replacement.__cause__ = error  # what %tb shows stays Spark's own error
            result.error_in_exec = replacement
        elif interrupted is not None and cancellation_line(error):
            result.error_in_exec = KeyboardInterrupt(interrupted)


def _raised_by_interrupt(error: BaseException | None) -> bool:
    """``error`` is a KeyboardInterrupt, or was raised while handling one."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__context__
    return False
