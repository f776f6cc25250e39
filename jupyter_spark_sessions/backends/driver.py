"""The kernel's Spark driver: the running SparkContext, its py4j gateway and JVM, and
whether it still runs (stopped, or its JVM lost), with the one-line story and way out
of each; after a loss, letting PySpark launch a new JVM. Private PySpark APIs, each
behind one wrapper (``tests/test_private_apis.py``).
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
import time
import warnings
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ContextStoppedError
from .spark_error_reading import error_chain

if TYPE_CHECKING:
    from pyspark import SparkContext


def active_context() -> SparkContext | None:
    """The SparkContext running in this process, or None."""
    from pyspark import SparkContext

    sc: SparkContext | None = SparkContext._active_spark_context  # private
    return sc


def gateway_process() -> subprocess.Popen[bytes] | None:
    """The JVM process PySpark launched for this kernel, or None (no JVM yet, or one
    started outside Python and reached through PYSPARK_GATEWAY_PORT)."""
    pyspark = sys.modules.get("pyspark")
    if pyspark is None:  # never imported: no JVM, and no reason to import it now
        return None
    gateway = pyspark.SparkContext._gateway  # private; class attribute set on first start
    proc: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)  # private
    return proc


DriverState = Literal["running", "stopped", "lost"]


def driver_state(sc: SparkContext, recent: bool = False) -> DriverState:
    """ "running"; "stopped" (``stop()`` from Python, or a fatal error in the JVM); or
    "lost": its JVM exited or cannot be reached (killed, out of memory), or a newer
    driver replaced it (``forget_lost_driver``). ``recent``: a "running" seen within
    the last second will do (the board's views, asked for every session of a poll)."""
    from py4j.protocol import Py4JError

    if getattr(sc, "_jss_driver_lost", False):  # forgotten after its JVM died
        return "lost"
    if sc._jsc is None:  # private; PySpark sets it to None on stop()
        return "stopped"
    gateway = _gateway_of(sc)
    proc = getattr(gateway, "proc", None)  # private; None for a JVM started outside Python
    if gateway is None or (proc is not None and proc.poll() is not None):
        return "lost"  # known without a round trip (which would end in ConnectionRefused)
    checked = getattr(sc, "_jss_running_at", None)
    if recent and checked is not None and time.monotonic() - checked < _RUNNING_FOR:
        return "running"
    try:
        stopped = bool(scala_context(sc).isStopped())
    except (Py4JError, OSError):  # the JVM died a moment ago
        return "lost"
    if stopped:
        return "stopped"
    sc._jss_running_at = time.monotonic()  # type: ignore[attr-defined]
    return "running"


#: How long a context seen running is taken to still run by views (``recent``), unless
#: Python stopped it or its JVM exited (both seen without a round trip). A JVM dying
#: this moment is seen at once everywhere else: by the cell's error, the magics.
_RUNNING_FOR = 1.0


def scala_context(sc: SparkContext) -> Any:
    """The JVM's (Scala) SparkContext of ``sc``: the one way this package reaches PySpark's
    private ``sc._jsc`` for it (the status store, the task scheduler, job cancel by id).
    Kept on ``sc``: asked anew, it costs a round trip and another to free it."""
    scala = getattr(sc, "_jss_scala_context", None)
    if scala is None or scala._gateway_client is not sc._jsc._gateway_client:  # private
        scala = sc._jss_scala_context = sc._jsc.sc()  # type: ignore[attr-defined]
    return scala


def set_call_site(sc: SparkContext, call_site: str | None) -> None:
    """Name the thread's next jobs ``call_site`` (None: Spark's own again), as PySpark's
    ``SCCallSiteSync`` does through the private ``sc._jsc``."""
    sc._jsc.setCallSite(call_site)  # private


def _gateway_of(sc: SparkContext) -> Any:
    """PySpark's gateway if ``sc`` talks through it (None once it was replaced)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway  # private; class attribute, None once forgotten
    client = getattr(gateway, "_gateway_client", None)  # private (py4j)
    jsc = sc._jsc  # private
    if gateway is None or jsc is None or jsc._gateway_client is not client:
        return None
    return gateway


def reachable(sc: SparkContext) -> bool:
    # Without a round trip: a context stopped from Python, or a JVM known to be gone.
    gateway = _gateway_of(sc)
    proc = getattr(gateway, "proc", None)  # private
    return gateway is not None and (proc is None or proc.poll() is None)


def context_is_stopped(sc: SparkContext) -> bool:
    """True when ``sc`` cannot run jobs: stopped, or its driver lost."""
    return driver_state(sc) != "running"


def restart_hint(master: str | None) -> str:
    return (
        f"run `%spark_session restart` to start a new one on {master} with your sessions "
        "and their files"
    )


def driver_problem(sc: SparkContext, recent: bool = False) -> str:
    """Why ``sc`` cannot run jobs, in one line with the way out; "" when it can
    (``recent``: as for ``driver_state``)."""
    state = driver_state(sc, recent)
    if state == "running":
        return ""
    if state == "stopped":
        return (
            "its SparkContext was stopped outside jupyter_spark_sessions (spark.stop()?): "
            + restart_hint(sc.master)
        )
    proc = getattr(_gateway_of(sc), "proc", None)  # private
    code = None
    if proc is not None:  # a JVM that just broke its connection may still be exiting
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = proc.wait(0.5)
    how = "its JVM cannot be reached"
    if code is not None:
        how = f"its JVM exited with signal {-code}" if code < 0 else f"its JVM exited ({code})"
    return f"the Spark driver of this kernel is gone ({how}): " + restart_hint(sc.master)


def raised_by_a_gone_driver(error: BaseException) -> bool:
    # How PySpark fails on a dead JVM (py4j, sockets) or a stopped context (its
    # ``_jsc`` is None); a Java exception from a live driver is a Py4JError too, which
    # the caller tells apart by asking the driver.
    from py4j.protocol import Py4JError

    return any(
        isinstance(current, (Py4JError, ConnectionError, EOFError))
        or (isinstance(current, AttributeError) and "'NoneType' object" in str(current))
        for current in error_chain(error)
    )


def require_running(sc: SparkContext, name: str) -> None:
    """Raise ContextStoppedError, saying how to recover, unless ``sc`` runs."""
    problem = driver_problem(sc)
    if problem:
        raise ContextStoppedError(f"Session '{name}' is unusable: {problem}.")


def forget_lost_driver(sc: SparkContext) -> None:
    """Let PySpark launch a new JVM after ``sc``'s died or was stopped: clear what it
    keeps of the old one (the gateway, the active context and sessions). Private."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if driver_state(sc) == "lost":
        sc._jss_driver_lost = True  # type: ignore[attr-defined]  # still lost once forgotten
    with warnings.catch_warnings(), contextlib.suppress(Exception):
        warnings.simplefilter("ignore")  # "Unable to cleanly shutdown Spark JVM process"
        sc.stop()
    # What stop() does after its JVM call, which raises (not only Py4JError) on a dead JVM.
    sc._jsc = None
    server, sc._accumulatorServer = getattr(sc, "_accumulatorServer", None), None  # type: ignore[assignment]
    if server is not None:
        with contextlib.suppress(Exception):
            server.shutdown()
    with SparkContext._lock:
        if SparkContext._active_spark_context is sc:
            SparkContext._active_spark_context = None
    gateway = SparkContext._gateway
    if gateway is not None and _gateway_is_dead(gateway):
        SparkContext._gateway, SparkContext._jvm = None, None
        with contextlib.suppress(Exception):
            gateway.close()  # the Python side of the dead connection
    SparkSession._instantiatedSession = None  # private
    SparkSession._activeSession = None  # private


def end_jvm(timeout: float) -> None:
    """Kernel shutdown, once the context is stopped: end the JVM PySpark launched by
    closing its stdin (PySpark's gateway server then exits, running Spark's shutdown
    hooks, which delete its scratch folders) and wait for it, ``timeout`` s at most.
    Nothing when no JVM of PySpark's runs, or a context still runs on it.

    Why: ipykernel's shutdown then finds no child left. It sends SIGTERM to every
    process of the kernel's group, again and again while one is left; a JVM it ends
    that way runs those hooks meanwhile, and the ``rm -rf`` they start is killed too:
    ``WARN JavaUtils: Attempt to delete using native Unix OS command failed`` and a Java
    stack in the server's log, and folders left for the next start to remove."""
    from pyspark import SparkContext

    gateway = current_gateway()
    proc = getattr(gateway, "proc", None)  # private
    if proc is None or proc.poll() is not None:
        return
    sc = active_context()
    if sc is not None and sc._jsc is not None:  # private; None once stopped
        return
    with contextlib.suppress(OSError, ValueError):
        if proc.stdin is not None:
            proc.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)
    if proc.returncode is not None:  # a later start launches a new JVM
        SparkContext._gateway, SparkContext._jvm = None, None  # private
        with contextlib.suppress(Exception):
            gateway.close()


def current_gateway() -> Any:
    """PySpark's py4j gateway (to the JVM it launched, or was given), or None."""
    from pyspark import SparkContext

    return SparkContext._gateway  # private


def _gateway_is_dead(gateway: Any, wait: float = 0.0) -> bool:
    # ``wait``: a JVM whose connection just broke may still be exiting.
    from py4j.protocol import Py4JError

    proc = getattr(gateway, "proc", None)  # private
    if proc is not None:
        if not wait:
            return proc.poll() is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
        return proc.returncode is not None
    try:  # a JVM started outside Python (PYSPARK_GATEWAY_PORT): ask it
        gateway.jvm.java.lang.System.currentTimeMillis()
    except (Py4JError, OSError):
        return True
    return False


#: Seconds after an Interrupt ended a py4j call during which a failed call of another
#: thread is taken for one of the connections py4j closed then.
_INTERRUPT_AFTERMATH = 5.0
_interrupted_at = float("-inf")


def interrupting_a_call() -> None:
    """The Interrupt is about to end a py4j call (a wait on a streaming query). py4j's
    clean-up of that call closes every connection to the JVM
    (``GatewayClient.send_command`` matches them by the JVM's address, which they all
    share): a call another thread (the board's poll) has in flight then fails once, and
    py4j logs its traceback. That traceback is dropped for a few seconds."""
    global _interrupted_at
    _interrupted_at = time.monotonic()


def drop_interrupted_connection() -> None:
    """After an Interrupt ended a py4j call of this thread (a wait on a streaming query):
    close this thread's py4j connection if py4j's clean-up left it open. That clean-up
    can fail half-way (a Py4JError for a callback connection that had already closed,
    e.g. a ``foreachBatch``'s), and the JVM then writes the ended call's answer on that
    connection once the wait ends: the thread's next call would read it as its own. A
    closed connection makes py4j open a new one at the next call."""
    client = getattr(current_gateway(), "_gateway_client", None)  # private
    get_connection = getattr(client, "get_thread_connection", None)  # private; pinned mode
    connection = get_connection() if get_connection is not None else None
    if connection is not None and connection.socket is not None:
        with contextlib.suppress(Exception):
            connection.close()


class _DeadJvmLogFilter(logging.Filter):
    """py4j logs a traceback through the root logger for the call that finds the JVM
    dead; the cell's own error already says so in one line (``ClassicBackend.explain``).
    It logs one too for a call the kernel's Interrupt ended, and for the calls of other
    threads its clean-up broke (``interrupting_a_call``): the cell ends with the
    KeyboardInterrupt in one line (``cells/interrupt``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message == "KeyboardInterrupt while sending command.":
            return False
        if message != "Exception while sending command.":
            return True
        if time.monotonic() - _interrupted_at < _INTERRUPT_AFTERMATH:
            return False
        gateway = current_gateway()
        return not (gateway is not None and _gateway_is_dead(gateway, wait=0.5))


_DEAD_JVM_LOG_FILTER = _DeadJvmLogFilter()


class _InterruptedCallLogFilter(logging.Filter):
    """After an Interrupt ended a call (a wait on a streaming query), py4j asks the JVM
    to drop that call's socket (``ClientServerConnection.shutdown_socket``, used for
    nothing else) and logs a traceback when that fails: the cell already ended in one
    line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Exception occurred while shutting down connection"


_INTERRUPTED_CALL_LOG_FILTER = _InterruptedCallLogFilter()


def drop_py4j_tracebacks_of_a_dead_jvm() -> None:
    logging.getLogger().addFilter(_DEAD_JVM_LOG_FILTER)  # once: filters are a set
    logging.getLogger("py4j.clientserver").addFilter(_INTERRUPTED_CALL_LOG_FILTER)


def quiet_accumulator_server(sc: SparkContext) -> None:
    """PySpark's accumulator server (a socketserver thread, private) prints a traceback
    to stderr, into the running cell, when the JVM's connection to it breaks (the JVM
    died: the cell says so in one line); any other error it still prints."""
    server = getattr(sc, "_accumulatorServer", None)  # private
    if server is None or getattr(server, "_jss_quiet", False):
        return
    report = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        # Called inside the handler's except block; a JVM that went away mid-read
        # shows as EOF or a reset connection (it may not be reaped yet).
        if not isinstance(sys.exc_info()[1], (EOFError, ConnectionError)):
            report(request, client_address)

    server.handle_error = handle_error
    server._jss_quiet = True
