"""Every change this package makes to what PySpark, py4j, gRPC, IPython or ipykernel
hold for the whole process, in one table: what it changes, why, what breaks without it,
and the test that fails loudly when an upgrade moves what it relies on.

A kernel runs one PySpark and one ipykernel for every session, the user's own code
included, so these changes reach code that never asked for them. Listed: methods,
signal handlers and logging filters replaced; class attributes (PySpark's state for the
process) set; environment variables set, even briefly, in ``os.environ`` (every thread
and child process sees them); the JVM's Spark internals reached by reflection or
replaced. Not listed: public settings of the context this project starts
(``context_start.OWNED_CONTEXT_DEFAULTS``, checked by
``tests/test_private_apis.py::test_owned_context_defaults_are_applied``), public traits
and hooks (the kernel's ``help_links``, IPython's events, magics), and state of one
thread or one object (the JVM thread's cell scope, Connect's thread-local active
session, a comm's router): their tests live beside their wrappers.

One entry is a read, not a change (``backends/spark_objects.py``): PySpark's private
``_session``, listed because it is read for every failed cell's traceback.

Data only: nothing here imports PySpark. ``tests/test_process_wide.py`` checks that each
entry's ``where`` still holds its ``mark`` and that each ``guard`` test exists, and that
no module outside the table sets ``os.environ``, a signal handler or a PySpark class
attribute.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessWideChange:
    """One change to a library's process-wide state (see the module's docstring)."""

    #: What is changed, in the library's own names.
    what: str
    #: The module that makes it, relative to the package (``backends/driver.py``), or
    #: a Java source relative to the repository (``java/jss/...``).
    where: str
    #: Text in ``where`` that identifies the change (checked to be there).
    mark: str
    #: Why the package changes it.
    why: str
    #: What goes wrong without it.
    breaks_without: str
    #: The test that fails when an upgrade changes what this relies on:
    #: ``tests/<file>.py::<test function>``.
    guard: str


_PRIVATE_APIS = "tests/test_private_apis.py::"

PROCESS_WIDE_CHANGES: tuple[ProcessWideChange, ...] = (
    ProcessWideChange(
        what="pyspark.traceback_utils.SCCallSiteSync: __init__, __enter__ and __exit__ "
        "replaced (class-wide, from the first classic session on)",
        where="backends/call_site.py",
        mark="def _patch_call_site_sync(",
        why="name each classic job after the user's line (`count at In [5] line 3`), "
        "not PySpark's thread wrapper; count nesting per thread, not in PySpark's "
        "class-wide counter",
        breaks_without="jobs of pyspark.InheritableThread are named after PySpark's "
        "threading.py; while one thread's job runs inside collect, every other "
        "thread's jobs get no name (the board and Spark's UI show JVM frames)",
        guard=_PRIVATE_APIS + "test_classic_jobs_are_named_after_the_users_line",
    ),
    ProcessWideChange(
        what="classic DataFrame.count/show/isEmpty/checkpoint/localCheckpoint/toArrow "
        "and DataFrameWriter.save/saveAsTable/insertInto/json/parquet/text/csv/orc/jdbc "
        "wrapped in SCCallSiteSync (class attributes replaced)",
        where="backends/call_site.py",
        mark="_UNNAMED_ACTIONS = (",
        why="PySpark sets no call site for these actions",
        breaks_without="their jobs are named after a JVM frame "
        "(`$anonfun$withThreadLocalCaptured$1 at CompletableFuture.java:1768`); if an "
        "upgrade moves a class, install() only logs a warning",
        guard=_PRIVATE_APIS + "test_classic_jobs_are_named_after_the_users_line",
    ),
    ProcessWideChange(
        what="pyspark.sql.SparkSession._activeSession (one per process) set to the "
        "cell's session while a bound cell runs, restored after; set to the context's "
        "default session when a session is stopped",
        where="backends/classic.py",
        mark="SparkSession._activeSession = self.session",
        why="SparkSession.getActiveSession()/active() (and PySpark code that reads "
        "them) answer the session the cell is bound to, as the JVM's active session "
        "does (cell_scope)",
        breaks_without="code that asks PySpark for the active session gets another "
        "session: its temporary views, settings and files, not the cell's",
        guard=_PRIVATE_APIS
        + "test_a_tagged_thread_has_the_session_active_in_the_jvm_and_in_pyspark",
    ),
    ProcessWideChange(
        what="getOrCreate of PySpark's builders (pyspark.sql.session and, once "
        "imported, pyspark.sql.connect.session SparkSession.Builder) wrapped "
        "class-wide; reads the builder's private _options",
        where="backends/builder_binding.py",
        mark="builder.getOrCreate = _wrap(",
        why="in a thread bound to a managed session, `SparkSession.builder.getOrCreate()` "
        "returns that session (with the builder's runtime SQL options), as Spark's Scala "
        "builder returns the thread's session",
        breaks_without="a notebook's first line `spark = SparkSession.builder."
        "getOrCreate()` silently rebinds `spark` to the context's root session: no "
        "isolation, no board, no Cancel",
        guard=_PRIVATE_APIS + "test_pysparks_builders_return_the_bound_session_from_getorcreate",
    ),
    ProcessWideChange(
        what="pyspark SparkContext and SparkSession given a __new__ and their __init__ "
        "wrapped, SparkContext.getOrCreate and SQLContext._get_or_create wrapped "
        "(class-wide, from the first classic binding on); reads the private "
        "SparkContext._active_spark_context and SparkSession._instantiatedSession",
        where="backends/context_binding.py",
        mark="cls.__new__ = staticmethod(__new__)",
        why="in a thread bound to a managed classic session, `SparkContext(conf=...)`, "
        "`SparkSession(sc)` and `SQLContext.getOrCreate(sc)` give the running context and "
        "the bound session, as notebooks written for plain PySpark expect",
        breaks_without="a tutorial's `sc = SparkContext(conf=SparkConf())` raises `Cannot "
        "run multiple SparkContexts at once` after `use`, and `SparkSession(sc)` puts the "
        "notebook's work in the context's root session: no isolation, no board, no Cancel",
        guard="tests/test_builder_binding_kernel.py::"
        "test_pyspark_constructors_are_what_context_binding_wraps",
    ),
    ProcessWideChange(
        what="environment variable SPARK_CONNECT_MODE_ENABLED set (Connect) or removed "
        "(classic) while a bound cell runs, and removed while a context starts or a "
        "classic session is made",
        where="backends/api_flavour.py",
        mark='VARIABLE = "SPARK_CONNECT_MODE_ENABLED"',
        why="pyspark.sql.functions, Column helpers and getActiveSession pick classic "
        "or Connect at each call from it (pyspark.sql.utils.is_remote)",
        breaks_without="after a Connect session exists, classic cells build Connect "
        "columns (`'Column' object is not callable`, NOT_EXPECTED_TYPE), and a JVM "
        "launched then inherits the Connect setting",
        guard=_PRIVATE_APIS + "test_pyspark_reads_its_api_flavour_from_the_variable_we_set",
    ),
    ProcessWideChange(
        what="PySpark's Python worker daemon replaced (spark.python.daemon.module = "
        "jupyter_spark_sessions.backends.spark_daemon) on contexts and Connect "
        "servers this project starts on a local master",
        where="backends/local_master.py",
        mark='"spark.python.daemon.module": "jupyter_spark_sessions.backends.spark_daemon"',
        why="the daemon and its workers leave the kernel's process group before running "
        "pyspark.daemon.manager",
        breaks_without="the kernel's Interrupt (SIGINT to its process group) kills the "
        "Python workers of every session, not only the interrupted cell's jobs",
        guard=_PRIVATE_APIS
        + "test_pyspark_daemon_can_be_replaced_and_our_daemon_leaves_the_kernels_group",
    ),
    ProcessWideChange(
        what="environment variable PYSPARK_PYTHON set to the kernel's interpreter "
        "(os.environ.setdefault: the user's value wins) at a context start, for good",
        where="backends/context_start.py",
        mark='os.environ.setdefault("PYSPARK_PYTHON", sys.executable)',
        why="PySpark's workers run os.environ['PYSPARK_PYTHON'] (default python3): "
        "they need the kernel's packages, pyarrow and this package (spark_daemon)",
        breaks_without="workers start another Python: UDFs fail (no module "
        "jupyter_spark_sessions, no pyarrow, or a Python version mismatch)",
        guard=_PRIVATE_APIS + "test_python_workers_run_the_kernels_interpreter",
    ),
    ProcessWideChange(
        what="a warnings filter ignoring the Spark Connect client's UserWarning "
        "[RETRIES_EXCEEDED] (for every thread, once a Connect session was made)",
        where="backends/connect.py",
        mark='warnings.filterwarnings("ignore", message=r"\\[RETRIES_EXCEEDED\\]"',
        why="the client warns before it raises; the cell's one-line error already says "
        "the server cannot be reached and how to get back",
        breaks_without="a lost server's cell shows the client's warning with its gRPC "
        "debug string above the one line that explains it",
        guard="tests/test_connect_kernel.py::"
        "test_local_server_killed_mid_query_then_reconnect_brings_the_session_back",
    ),
    ProcessWideChange(
        what="environment variables SPARK_LOCAL_IP, SPARK_LOCAL_DIRS and "
        "SPARK_SUBMIT_OPTS (log4j configuration, java.io.tmpdir) set in os.environ "
        "only while PySpark launches the JVM, then restored",
        where="backends/context_start.py",
        mark="def _environ(",
        why="PySpark gives the JVM it launches a copy of os.environ: the only way to "
        "set the JVM's environment and options before it starts",
        breaks_without="a local master's UI listens on every interface, its scratch "
        "files and the JVM's temp files go to /tmp, and Spark's INFO logging lands "
        "in cells; any thread starting a process meanwhile inherits them",
        guard=_PRIVATE_APIS
        + "test_the_jvm_gets_the_environment_set_around_its_launch_and_the_kernel_keeps_its_own",
    ),
    ProcessWideChange(
        what="the JVM's stderr is a pipe read by a thread of the kernel (PySpark's "
        "private launch_gateway with popen_kwargs), not the kernel's stderr",
        where="backends/jvm_stderr.py",
        mark='popen_kwargs={"stderr": stderr.write_fd}',
        why="drop the lines every start prints that read as errors (incubator "
        "modules warning) and retell a lost executor's ERROR in one line",
        breaks_without="every context start prints warnings into the running cell, in red",
        guard=_PRIVATE_APIS
        + "test_the_jvm_pyspark_launches_for_us_writes_its_stderr_through_the_filter",
    ),
    ProcessWideChange(
        what="a filter on the root logger drops py4j's 'Exception while sending "
        "command.' record when PySpark's JVM is dead or an Interrupt ended a call in the "
        "last seconds (py4j's clean-up then breaks other threads' calls), and its "
        "'KeyboardInterrupt while sending command.' record",
        where="backends/driver.py",
        mark="logging.getLogger().addFilter(_DEAD_JVM_LOG_FILTER)",
        why="py4j logs it with a traceback through the root logger "
        "(logging.exception in GatewayClient.send_command)",
        breaks_without="a dead JVM shows a py4j traceback in the cell besides the "
        "cell's one-line error",
        guard=_PRIVATE_APIS + "test_py4j_reports_a_dead_jvm_through_the_root_logger_we_filter",
    ),
    ProcessWideChange(
        what="pyspark DataStreamWriter.start and toTable (classic and Spark Connect) "
        "wrapped (class attributes replaced, from the first session on)",
        where="backends/streaming_calls.py",
        mark="setattr(writer, name, _reporting(method, session_attr))",
        why="put every streaming query of a managed session on the board as it starts, "
        "with the cell that started it, and start it without the cell's job tags",
        breaks_without="queries are invisible on the board and cannot be stopped from "
        "it; a query's micro-batch jobs carry the starting cell's tags, so cancelling "
        "that cell's group hits the query's current batch",
        guard="tests/test_streaming_kernel.py::test_a_query_is_on_the_board_under_its_session",
    ),
    ProcessWideChange(
        what="a filter on PySpark's SQLQueryContextLogger and DataFrameQueryContextLogger "
        "drops the records of the thread running a %%spark_sql cell, while it runs",
        where="backends/sql_runs.py",
        mark="logger.addFilter(quiet)",
        why="PySpark logs every SQL error with a query context as a JSON line on stderr "
        "(PySparkException._log_exception), beside the error itself",
        breaks_without="a SQL cell's short error comes under a JSON ERROR line of the "
        "same message, in red",
        guard="tests/test_sql_magic_kernel.py::test_a_syntax_error_is_at_most_four_lines_with_the_caret",
    ),
    ProcessWideChange(
        what="a filter on the py4j.clientserver logger drops its 'Exception occurred while "
        "shutting down connection' record",
        where="backends/driver.py",
        mark='logging.getLogger("py4j.clientserver").addFilter(_INTERRUPTED_CALL_LOG_FILTER)',
        why="py4j logs it with a traceback when the socket of a call the kernel's Interrupt "
        "ended (a wait on a streaming query) cannot be shut down cleanly",
        breaks_without="an interrupted awaitTermination() shows a py4j traceback in the "
        "cell besides its one-line KeyboardInterrupt",
        guard="tests/test_streaming_kernel.py::test_interrupt_ends_a_wait_on_a_query_in_one_line",
    ),
    ProcessWideChange(
        what="handle_error of PySpark's accumulator server (SparkContext._accumulatorServer, "
        "one socketserver per context) replaced",
        where="backends/driver.py",
        mark="server.handle_error = handle_error",
        why="ignore the broken connection of a JVM that died (EOF, reset); print any "
        "other error as before",
        breaks_without="a dead JVM prints a socketserver traceback into the running cell",
        guard=_PRIVATE_APIS + "test_a_killed_jvm_is_lost_and_a_new_one_starts_once_it_is_forgotten",
    ),
    ProcessWideChange(
        what="PySpark's class attributes SparkContext._gateway, _jvm and "
        "_active_spark_context, SparkSession._instantiatedSession and _activeSession "
        "cleared after the JVM died or was ended (forget_lost_driver, end_jvm)",
        where="backends/driver.py",
        mark="SparkContext._gateway, SparkContext._jvm = None, None",
        why="PySpark reuses its gateway and sessions forever: it cannot launch a new "
        "JVM after its first one died",
        breaks_without="`%spark_session restart` after a killed JVM fails with py4j "
        "connection errors instead of starting a new driver",
        guard=_PRIVATE_APIS + "test_a_killed_jvm_is_lost_and_a_new_one_starts_once_it_is_forgotten",
    ),
    ProcessWideChange(
        what="Spark's BasePythonRunner$MonitorThread (private fields by reflection) "
        "and SparkEnv.destroyPythonWorker: the board reader ends killed tasks' Python "
        "workers itself, taking the monitor's releasedOrClosed flag",
        where="java/jss/KilledTaskWorkers.java",
        mark='"BasePythonRunner$MonitorThread"',
        why="Spark's monitor looks every 2 s: a cancelled task holds its slot until then",
        breaks_without="cancelled Python tasks keep their slots 0-2 s longer (the reader "
        "logs why and goes on without it)",
        guard=_PRIVATE_APIS + "test_the_board_reader_ends_the_python_workers_of_killed_tasks",
    ),
    ProcessWideChange(
        what="Spark's map of Python worker factories (SparkEnv.pythonWorkers, private, by "
        "reflection): on a Connect server this project starts, the factory of each "
        "session the server no longer has is taken out and stopped "
        "(jss.EndedSessionDaemons, spark.extraListeners)",
        where="java/jss/EndedSessionDaemons.java",
        mark='getDeclaredField("pythonWorkers")',
        why="Spark keeps a Python worker daemon per Connect session that ran Python, for "
        "the server's life: a shared driver used all day kept one per session ever made",
        breaks_without="each ended session's daemon process and its JVM threads stay "
        "(the listener logs why and the server runs on)",
        guard=_PRIVATE_APIS + "test_the_ended_sessions_sweep_finds_the_spark_members_it_uses",
    ),
    ProcessWideChange(
        what="the Spark UI's root handler (SparkContext.ui(), WebUI.detachHandler/"
        "attachHandler) replaced by a relative redirect, on contexts this project starts",
        where="java/jss/UiRootRedirect.java",
        mark='ui.get().detachHandler("/")',
        why="Spark's root redirect is an absolute URL, which leaves the Jupyter server's proxy",
        breaks_without="a click on the UI's logo through the proxy lands on a page of "
        "the Jupyter server that does not exist (start_context logs a warning)",
        guard=_PRIVATE_APIS + "test_the_ui_root_redirect_finds_the_spark_ui_members_it_uses",
    ),
    ProcessWideChange(
        what="environment variable GRPC_ENABLE_FORK_SUPPORT=false "
        "(os.environ.setdefault: the user's value wins) at %load_ext; gRPC reads it "
        "when imported",
        where="__init__.py",
        mark='os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")',
        why="gRPC's fork handlers run in every forked child, also PySpark's JVM launch; "
        "the kernel never uses gRPC across a fork",
        breaks_without="a fork during a Spark Connect call crashes the child "
        "(`Check failed: next_worker->state == KICKED`): a classic create after a "
        "Connect session fails with JAVA_GATEWAY_EXITED",
        guard=_PRIVATE_APIS + "test_grpc_reads_its_fork_support_switch_from_the_variable_we_set",
    ),
    ProcessWideChange(
        what="one entry (protocol.CONTROL_REQUEST) added to ipykernel's "
        "Kernel.control_handlers table",
        where="kernel/ipykernel_internals.py",
        mark="handlers[msg_type] = handler",
        why="the sidebar's requests (the board, cancel) are answered on the control "
        "thread while the main shell runs a cell",
        breaks_without="the sidebar, cancel included, waits for the running cell to "
        "end (%load_ext refuses a kernel without the table)",
        guard="tests/test_ipykernel_internals.py::"
        "test_kernel_dispatches_control_messages_through_control_handlers",
    ),
    ProcessWideChange(
        what="the shell's showtraceback replaced (at the first cell with a session): "
        "Spark's expected errors shown in one line through IPython's _showtraceback",
        where="kernel/ipykernel_internals.py",
        mark="shell.showtraceback = showtraceback",
        why="a cancelled job, a lost driver or a gone object fail with tracebacks of a "
        "hundred lines (set_custom_exc would show them twice)",
        breaks_without="those cells end with PySpark's, py4j's or gRPC's whole traceback",
        guard=_PRIVATE_APIS
        + "test_ipython_shows_each_cells_error_through_the_showtraceback_we_wrap",
    ),
    ProcessWideChange(
        what="the SIGINT handler (ipykernel's default_int_handler for the request) "
        "replaced while a cell runs on the main shell with sessions registered",
        where="cells/interrupt.py",
        mark="signal.signal(signal.SIGINT, self._on_interrupt)",
        why="an Interrupt cancels the cell's own Spark jobs, and ends the cell when the "
        "cancelled call returns",
        breaks_without="KeyboardInterrupt breaks py4j's connection mid-call and the job "
        "runs on (classic), or ends the cell with a gRPC traceback (Connect)",
        guard=_PRIVATE_APIS
        + "test_ipykernel_puts_keyboard_interrupt_on_sigint_around_each_request",
    ),
    ProcessWideChange(
        what="reads (changes nothing) PySpark's private DataFrame._session (classic and "
        "Connect) from a failed cell's frames",
        where="backends/spark_objects.py",
        mark='SESSION_ATTRIBUTE = "_session"',
        why="name the session a failed call's DataFrame belongs to (sessions/gone_objects)",
        breaks_without="a DataFrame of a stopped or replaced session fails with a "
        "traceback instead of `This DataFrame belongs to session ...`",
        guard=_PRIVATE_APIS + "test_session_of_reads_the_session_pysparks_dataframes_hold",
    ),
)
