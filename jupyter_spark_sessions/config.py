"""Settings of jupyter_spark_sessions, configurable from ``ipython_config.py``.

Example::

    c.SparkSessionsConfig.default_master = "local[2]"
    c.SparkSessionsConfig.session_defaults = {"spark.sql.shuffle.partitions": "8"}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from traitlets import Bool, Dict, Enum, Float, Int, Unicode
from traitlets.config import Configurable

from .session_root import KernelRoot, remove_dead_kernel_folders


class SparkSessionsConfig(Configurable):
    """Defaults and limits for the sessions this project creates."""

    default_master = Unicode(
        "local[*]",
        help="Master URL of the SparkContext started by the first `create` when none runs "
        "(for example local[*], local-cluster[2,1,1024], spark://host:7077, yarn).",
    ).tag(config=True)

    app_name = Unicode(
        "jupyter_spark_sessions",
        help="Application name of the SparkContext this project starts.",
    ).tag(config=True)

    session_root = Unicode(
        help="Folder in which each kernel makes a private folder (mode 0700, an "
        "unpredictable name) for its sessions' directories (their files and unpacked "
        "archives). It must be yours and not writable by group or others, else `create` "
        "refuses it. Default: the system temp directory.",
    ).tag(config=True)

    session_defaults = Dict(
        key_trait=Unicode(),
        value_trait=Unicode(),
        default_value={},
        help="Spark SQL settings applied to every session `create` makes, before its own "
        "--conf values (which win).",
    ).tag(config=True)

    context_conf = Dict(
        key_trait=Unicode(),
        value_trait=Unicode(),
        default_value={},
        help="Spark settings for the SparkContext this project starts (context-wide "
        "settings such as spark.executor.memory, which cannot be set per session). "
        "They win over the project's defaults (spark.ui.killEnabled=false; on a local "
        "master, the driver on 127.0.0.1; see docs/security.md). "
        "Ignored when a SparkContext already runs.",
    ).tag(config=True)

    connect_master = Unicode(
        "local[*]",
        help="Master URL of the Spark Connect server `create NAME --remote local` starts "
        "(once per kernel, in a child process; stopped at kernel shutdown).",
    ).tag(config=True)

    connect_conf = Dict(
        key_trait=Unicode(),
        value_trait=Unicode(),
        default_value={},
        help="Spark settings for the local Spark Connect server (`--remote local`).",
    ).tag(config=True)

    connect_start_timeout = Float(
        120.0,
        help="Seconds to wait for the local Spark Connect server to accept connections.",
    ).tag(config=True)

    default_remote = Unicode(
        "",
        help="Where `create NAME` makes a session when neither --remote nor --master is "
        "given: '' for a classic session on this kernel's SparkContext, 'shared' for the "
        "shared Spark Connect server of this user's notebooks, 'local' or sc://HOST:PORT.",
    ).tag(config=True)

    shared_driver_master = Unicode(
        "local[*]",
        help="Master URL of the shared Spark Connect server (`--remote shared`), started by "
        "the first notebook that asks for it: any Spark master (spark://, yarn, k8s://).",
    ).tag(config=True)

    shared_driver_conf = Dict(
        key_trait=Unicode(),
        value_trait=Unicode(),
        default_value={},
        help="Spark settings for the shared Spark Connect server (`--remote shared`).",
    ).tag(config=True)

    shared_driver_idle_timeout = Float(
        600.0,
        help="Seconds the shared Spark Connect server keeps running with no session on it "
        "before it stops (sooner when every Jupyter server that used it exited: "
        "shared_driver_restart_grace).",
    ).tag(config=True)

    shared_driver_restart_grace = Float(
        30.0,
        help="Seconds the shared Spark Connect server with no session waits, once every "
        "Jupyter server that used it exited, before it stops: a restarted Jupyter server's "
        "notebooks join it meanwhile.",
    ).tag(config=True)

    shared_driver_prewarm = Bool(
        False,
        help="Start the shared Spark Connect server with the Jupyter server (and again when "
        "a kernel starts after it stopped for idleness), so that the first notebook's first "
        "result comes in about a second. The Jupyter server reads it, with the other "
        "shared_driver_* settings, from the kernels' IPython profile (ipython_config.py) "
        "or from its own jupyter_server_config.py (which wins).",
    ).tag(config=True)

    shared_driver_dir = Unicode(
        "",
        help="Folder where the notebooks of a user find their shared Spark Connect server "
        "(default: the user's Jupyter runtime directory).",
    ).tag(config=True)

    connect_retry_seconds = Float(
        5.0,
        help="About how long a Spark Connect call retries an unreachable server before it "
        "fails (the client's default is 10 minutes, which would hang the cell).",
    ).tag(config=True)

    release_timeout = Float(
        600.0,
        help="Seconds `stop` waits in the background for a session's cancelled jobs to "
        "end before releasing the session anyway.",
    ).tag(config=True)

    shutdown_timeout = Float(
        1.0,
        help="Seconds kernel shutdown waits for cancelled jobs to end before releasing "
        "sessions and stopping the SparkContext (Jupyter's kernel manager terminates a "
        "kernel still running 2.5 s after a shutdown request).",
    ).tag(config=True)

    poll_interval = Float(
        0.25,
        help="Seconds between two reads of Spark's job status while jobs run (the job "
        "board's refresh rate).",
    ).tag(config=True)

    cell_progress = Bool(
        True,
        help="Show a live view of a cell's Spark jobs under the cell while it runs, and "
        "a one-line summary when it ends (`%spark_session progress off` turns it off "
        "for the kernel).",
    ).tag(config=True)

    idle_poll_interval = Float(
        2.0,
        help="Seconds between two reads of Spark's job status while no managed job runs.",
    ).tag(config=True)

    interrupt_cancels = Enum(
        ["cell", "all"],
        "cell",
        help="What the kernel's Interrupt cancels during a cell of a managed session: "
        "'cell', the Spark jobs that cell started (in whatever sessions), leaving other "
        "cells' and threads' jobs running; 'all', every job of every managed session "
        "(PySpark's own behaviour, like `%spark_session cancel --all`).",
    ).tag(config=True)

    sql_display_rows = Int(
        20,
        min=1,
        help="Rows a `%%spark_sql` cell shows (and fetches) unless `-n` says otherwise.",
    ).tag(config=True)

    sql_max_rows = Int(
        100_000,
        min=1,
        help="Rows `%%spark_sql -o VAR` fetches into its pandas DataFrame at most, unless "
        "`--max-rows` says otherwise (a cut result says so in one line).",
    ).tag(config=True)

    retained_groups = Int(
        50,
        help="How many finished job groups the job board keeps (the oldest go first).",
    ).tag(config=True)

    # What a group's diagnosis line needs to see (docs/jobs.md, "Inside a job").
    diagnosis_min_seconds = Float(
        3.0,
        min=0.0,
        help="A stage that ran shorter than this gets no line about time (skew, too few "
        "partitions, a straggling executor, GC): in a short stage they cost little.",
    ).tag(config=True)

    diagnosis_skew_ratio = Float(
        5.0,
        min=1.0,
        help="Skew: a stage's slowest task took at least this many times its median "
        "(and at least half the stage's time).",
    ).tag(config=True)

    diagnosis_skew_min_tasks = Int(
        8,
        min=2,
        help="Skew is looked for in stages of at least this many tasks.",
    ).tag(config=True)

    diagnosis_gc_share = Float(
        0.25,
        min=0.0,
        max=1.0,
        help="GC: the share of a stage's task time spent in garbage collection that gets a line.",
    ).tag(config=True)

    diagnosis_straggler_ratio = Float(
        3.0,
        min=1.0,
        help="A straggling executor: its tasks of a stage took at least this many times "
        "as long on average as the other executors'.",
    ).tag(config=True)

    archive_max_bytes = Int(
        4 * 1024**3,
        help="Largest total uncompressed size, in bytes, of an archive `add_archive` "
        "unpacks; larger archives are refused before they fill the disk.",
    ).tag(config=True)

    archive_max_entries = Int(
        100_000,
        help="Most entries (files, folders, links) an archive may hold for `add_archive`.",
    ).tag(config=True)

    env_cache_dir = Unicode(
        help="Folder of the Python environments built for sessions' packages (`create "
        "--pip`, `pip`), one per set of requirements, reused by every kernel of the user; "
        "delete it to free the space. Default: $XDG_CACHE_HOME/jupyter_spark_sessions/envs "
        "(~/.cache/...).",
    ).tag(config=True)

    env_cache_max_bytes = Int(
        5 * 2**30,
        help="Bound of env_cache_dir's size: after a build, the least recently used "
        "environments are removed until it fits, except those of this kernel's sessions "
        "and any used in the last hour (0: no bound).",
    ).tag(config=True)

    env_shipping = Enum(
        ["auto", "path", "archive"],
        default_value="auto",
        help="How a session's packages reach its Python workers: 'path' uses the "
        "environment where it was built (workers on this machine), 'archive' ships it as "
        "the session's archive (executors elsewhere: YARN, Kubernetes, a remote master or "
        "Connect server); 'auto' uses the path for local masters, a standalone master on "
        "this machine and the local Connect server, the archive otherwise.",
    ).tag(config=True)

    archive_max_ratio = Float(
        200.0,
        help="Largest ratio of uncompressed size to archive size `add_archive` accepts "
        "(a zip bomb compresses far better than real data).",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._kernel_roots: dict[str, KernelRoot] = {}

    def kernel_root(self) -> KernelRoot:
        """This kernel's private folder in ``session_root`` (made on first use)."""
        root = self._kernel_roots.get(self.session_root)
        if root is None:
            root = self._kernel_roots.setdefault(self.session_root, KernelRoot(self.session_root))
        return root

    def resolved_session_root(self) -> str:
        """This kernel's private folder for session directories, made (after checking
        ``session_root``) on the first call; SessionRootError when it is unsafe."""
        return str(self.kernel_root().path())

    def remove_session_roots(self) -> None:
        """Remove this kernel's private folders and what is left in them (shutdown)."""
        for root in list(self._kernel_roots.values()):
            root.remove()

    def remove_dead_kernel_folders(self) -> list[Path]:
        """Remove the folders that kernels now gone left in ``session_root``."""
        return remove_dead_kernel_folders(self.session_root)
