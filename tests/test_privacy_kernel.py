"""Private on a shared machine and on the network, through real kernels and real Spark:
a second, unprivileged user (made here with ``useradd``; its steps run with ``runuser``)
cannot list or read the session files or Spark's copies of them; a session_root that
user could change is refused with one line; links planted in a session's folder are not
followed; a context started on a local master listens on loopback only and its UI
refuses to kill jobs, unless the user's own settings say otherwise; and the next kernel
removes the folders of a killed kernel, never those of a live one.

The steps as another user need root (CI runs as root); elsewhere they are skipped."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest
from conftest import OTHER_USER

from jupyter_spark_sessions.backends.local_master import UI_SECRET_CONF, UI_SECRET_HEADER
from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"
DRIVER = "__import__('jupyter_spark_sessions.backends.driver', fromlist=['driver'])"
CONTEXT = "__import__('pyspark').SparkContext._active_spark_context"
#: What the session's files hold: found nowhere the other user can read.
SECRET = f"jss-secret-{uuid.uuid4().hex}"


# -- set-up ---------------------------------------------------------------------------


def as_other(*command: str) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as the other user."""
    return subprocess.run(
        ["runuser", "-u", OTHER_USER, "--", *command], capture_output=True, text=True, timeout=120
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_kernel(tmp_path_factory: pytest.TempPathFactory, config: str) -> Kernel:
    """A kernel with jupyter_spark_sessions loaded and ``config`` in its profile, without
    any SPARK_LOCAL_IP / SPARK_LOCAL_DIRS of the machine (those would rightly win)."""
    profile = tmp_path_factory.mktemp("ipython")
    (profile / "profile_default").mkdir()
    (profile / "profile_default" / "ipython_config.py").write_text(config)
    kernel = Kernel(
        env={"IPYTHONDIR": str(profile)},
        cwd=str(tmp_path_factory.mktemp("cwd")),
        drop_env=("SPARK_LOCAL_IP", "SPARK_LOCAL_DIRS"),
    )
    kernel.ok("%load_ext jupyter_spark_sessions")
    return kernel


def write_inputs(folder: Path) -> dict[str, Path]:
    """A file and an archive holding SECRET; the archive's entry is world-readable."""
    secret = folder / "secret.csv"
    secret.write_text(SECRET + "\n")
    archive = folder / "lookup.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        entry = zipfile.ZipInfo("inner/secret.txt")
        entry.external_attr = (stat.S_IFREG | 0o644) << 16
        zipped.writestr(entry, SECRET + "\n")
    return {"file": secret, "archive": archive}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_inputs(tmp_path_factory.mktemp("inputs"))


@pytest.fixture(scope="module")
def started() -> Iterator[Path]:
    """A file in the temp directory made before this module's kernel and inputs: what
    changed after it is what this module (and whatever runs beside it) wrote."""
    marker = Path(tempfile.gettempdir()) / f"jss-started-{uuid.uuid4().hex}"
    marker.touch()
    marker.chmod(0o644)
    yield marker
    marker.unlink()


@pytest.fixture(scope="module")
def private(
    tmp_path_factory: pytest.TempPathFactory, started: Path, inputs: dict[str, Path]
) -> Iterator[Kernel]:
    """A kernel with the defaults (the UI on, on a free port) and a session ``a`` holding
    a file and an archive."""
    kernel = start_kernel(
        tmp_path_factory,
        "c.SparkSessionsConfig.default_master = 'local[2]'\n"
        f"c.SparkSessionsConfig.context_conf = {{'spark.ui.port': '{free_port()}'}}\n",
    )
    kernel.ok("%spark_session create a")
    kernel.ok(f"%spark_session add_file a {inputs['file']}")
    kernel.ok(f"%spark_session add_archive a {inputs['archive']}")
    yield kernel
    kernel.shutdown()


def session_dir(kernel: Kernel, name: str) -> Path:
    return Path(kernel.value(f"str({REGISTRY}.get({name!r}).directory)"))


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # Java binds IPv4 addresses on IPv6 sockets: ::ffff:127.0.0.1
    return ip.is_loopback


def jvm_listening(kernel: Kernel) -> list[tuple[str, int]]:
    """(address, port) of every listening socket of the kernel's JVM and its children."""
    jvm = psutil.Process(kernel.value(f"{DRIVER}.gateway_process().pid"))
    return sorted(
        (conn.laddr.ip, conn.laddr.port)
        for process in [jvm, *jvm.children(recursive=True)]
        for conn in process.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    )


def context_conf(kernel: Kernel, key: str) -> Any:
    return kernel.value(
        f"__import__('pyspark').SparkContext._active_spark_context.getConf().get({key!r})"
    )


def ui_address(kernel: Kernel, session: str) -> str:
    """The UI address `info` shows (before its path through the Jupyter server)."""
    out = kernel.ok(f"%spark_session info {session}").stdout
    line = next(line for line in out.splitlines() if line.startswith("spark ui"))
    return line.split(None, 2)[2].split(",")[0]


# -- files ----------------------------------------------------------------------------


def test_the_other_user_cannot_list_or_read_the_session_root_or_any_session_file(
    private: Kernel, other_user: str, inputs: dict[str, Path], started: Path
) -> None:
    directory = session_dir(private, "a")
    root = directory.parent
    kernel_pid = private.manager.provisioner.process.pid  # type: ignore[union-attr]
    # Not the old predictable /tmp/jupyter_spark_sessions/<pid>: made by mkdtemp.
    assert root.parent == Path(tempfile.gettempdir()).resolve()
    assert root.name.startswith(f"jupyter_spark_sessions-{kernel_pid}-")
    files = [directory / "secret.csv", directory / "lookup" / "inner" / "secret.txt"]
    assert mode_of(root) == mode_of(directory) == 0o700
    assert [mode_of(path) for path in files] == [0o600, 0o600]
    # A UDF reads the files (so the executor's copies exist) and a shuffle holds SECRET.
    private.ok(
        "%%spark_session a\n"
        "from pyspark.sql.functions import udf\n"
        "@udf('string')\n"
        "def read(_):\n"
        "    return open('secret.csv').read() + open('lookup/inner/secret.txt').read()\n"
        "_seen = spark.range(2).select(read('id')).collect()\n"
        f"spark.createDataFrame([({SECRET!r},)] * 50, 'v string').repartition(3)"
        ".groupBy('v').count().collect()"
    )
    assert private.value("_seen[0][0]") == (SECRET + "\n") * 2

    for folder in (root, directory):
        listed = as_other("ls", str(folder))
        assert listed.returncode != 0 and "Permission denied" in listed.stderr, listed
    for path in files:
        read = as_other("cat", str(path))
        assert read.returncode != 0 and "Permission denied" in read.stderr, read
        assert SECRET not in read.stdout
    assert_no_copy_the_other_user_can_read(started)


def assert_no_copy_the_other_user_can_read(started: Path) -> None:
    """Nowhere in the temp directory (the session's tree, Spark's artifact folders and
    scratch files) can the other user read SECRET; a readable copy would be found.
    Only files made since the module started are read (their ctime cannot be carried
    over by a copy): a long-lived machine's /tmp can hold gigabytes of older files; nor
    installed code (site-packages, node_modules, .git)."""
    control = Path(tempfile.gettempdir()) / f"jss-readable-{uuid.uuid4().hex}"
    control.write_text(SECRET)
    control.chmod(0o644)
    try:
        found = as_other(
            "sh",
            "-c",
            # Installed code is no place a copy lands (and the run's venvs and packages
            # are most of the files: ~90 s of grep): not searched.
            'find "$1" -xdev \\( -name site-packages -o -name node_modules -o -name .git \\) '
            '-prune -o -type f -cnewer "$2" -print0 | xargs -0 -r grep -lsF -e "$3" --',
            "search",
            tempfile.gettempdir(),
            str(started),
            SECRET,
        )
    finally:
        control.unlink()
    assert found.stdout.split() == [str(control)]


def test_sparks_own_copies_of_a_classic_and_a_connect_sessions_files_stay_in_the_kernels_folder(
    private: Kernel, other_user: str, inputs: dict[str, Path], started: Path
) -> None:
    # Spark copies every added file into its artifact folder, made in its JVM's temp
    # folder: for a Connect session as a 0644 file. Both JVMs this kernel started (its
    # driver, its local Connect server) have theirs in the kernel's private folder,
    # which goes with the kernel (also a killed one's: the last test).
    root = session_dir(private, "a").parent
    java_tmp = private.value(
        "__import__('pyspark').SparkContext._jvm.System.getProperty('java.io.tmpdir')"
    )
    assert java_tmp == str(root / ".spark-java-tmp")
    private.ok("%spark_session create c --remote local")
    private.ok(f"%spark_session add_file c {inputs['file']}")
    private.ok(
        "%%spark_session c\n"
        "from pyspark.sql.functions import udf\n"
        "_seen_c = spark.range(1).select(udf(lambda _: open('secret.csv').read())('id'))"
        ".first()[0]"
    )
    assert private.value("_seen_c") == SECRET + "\n"
    copies = {
        owner: sorted(root.glob(f".{owner}-java-tmp/artifacts-*/*/files/secret.csv"))
        for owner in ("spark", "connect")
    }
    assert all(copies.values()), copies
    for folder in (root / ".spark-java-tmp", root / ".connect-java-tmp"):
        assert mode_of(folder) == 0o700
        listed = as_other("ls", str(folder))
        assert listed.returncode != 0 and "Permission denied" in listed.stderr, listed
    assert_no_copy_the_other_user_can_read(started)
    private.ok("%spark_session stop c")


@pytest.fixture
def planted(other_user: str) -> Iterator[dict[str, Path]]:
    """Candidate session_roots another user could change, in the shared temp directory."""
    tag = uuid.uuid4().hex[:8]
    base = Path(tempfile.gettempdir())
    theirs = base / f"jss-planted-{tag}"
    subprocess.run(
        ["runuser", "-u", other_user, "--", "mkdir", "-m", "700", str(theirs)], check=True
    )
    link = base / f"jss-planted-link-{tag}"
    subprocess.run(
        ["runuser", "-u", other_user, "--", "ln", "-s", str(theirs), str(link)], check=True
    )
    made = {"theirs": theirs, "their link": link}
    for name, mode in (("group-writable", 0o770), ("world-writable", 0o777)):
        folder = base / f"jss-planted-{name}-{tag}"
        folder.mkdir()
        folder.chmod(mode)
        made[name] = folder
    yield made
    for path in made.values():
        if path.is_symlink():
            path.unlink()
        else:
            shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("theirs", f"it belongs to user '{OTHER_USER}'"),
        ("their link", f"it belongs to user '{OTHER_USER}'"),
        ("group-writable", "it is writable by group or others (mode 0770)"),
        ("world-writable", "it is writable by group or others (mode 0777)"),
    ],
)
def test_a_session_root_the_other_user_could_change_is_refused_and_nothing_is_written(
    private: Kernel, planted: dict[str, Path], case: str, reason: str
) -> None:
    folder = planted[case]
    names = private.value(f"{REGISTRY}.names()")
    private.ok(f"{REGISTRY}.config.session_root = {str(folder)!r}")
    try:
        refused = private.execute("%spark_session create planted")
    finally:
        private.ok(f"{REGISTRY}.config.session_root = ''")
    assert refused.usage_error.startswith(f"Refusing session_root {folder}: {reason}"), (
        refused.stderr
    )
    assert "\n" not in refused.usage_error and "Traceback" not in refused.stderr
    target = folder.resolve()
    assert list(target.iterdir()) == []
    assert private.value(f"{REGISTRY}.names()") == names
    private.ok("%spark_session files a")  # the kernel's own folder still serves


def test_a_link_planted_in_a_session_folder_is_not_followed(
    private: Kernel, inputs: dict[str, Path], tmp_path: Path
) -> None:
    directory = session_dir(private, "a")
    outside = tmp_path / "outside"
    outside.mkdir()
    before = private.value(f"[x.name for x in {REGISTRY}.files('a')]")
    (directory / "planted.csv").symlink_to(outside / "victim.csv")
    (directory / "planted").symlink_to(outside)
    try:
        as_file = private.execute(f"%spark_session add_file a {inputs['file']} --as planted.csv")
        as_archive = private.execute(
            f"%spark_session add_archive a {inputs['archive']} --as planted"
        )
    finally:
        (directory / "planted.csv").unlink()
        (directory / "planted").unlink()
    for refused, name in ((as_file, "planted.csv"), (as_archive, "planted")):
        assert refused.usage_error == (
            f"Refused: {directory / name} is a link that jupyter_spark_sessions did not "
            "make; nothing was written through it."
        ), refused.stderr
    assert list(outside.iterdir()) == []
    assert private.value(f"[x.name for x in {REGISTRY}.files('a')]") == before


def test_a_session_folder_swapped_for_a_link_is_not_written_through(
    private: Kernel, inputs: dict[str, Path], tmp_path: Path
) -> None:
    private.ok("%spark_session create swapped")
    directory = session_dir(private, "swapped")
    outside = tmp_path / "outside"
    outside.mkdir()
    moved = directory.with_name(directory.name + "-moved")
    directory.rename(moved)
    directory.symlink_to(outside)
    try:
        as_file = private.execute(f"%spark_session add_file swapped {inputs['file']}")
        as_archive = private.execute(f"%spark_session add_archive swapped {inputs['archive']}")
    finally:
        directory.unlink()
        moved.rename(directory)
    for refused in (as_file, as_archive):
        assert refused.usage_error.startswith(f"Refused to write in {directory}: it is no"), (
            refused.stderr
        )
        assert "\n" not in refused.usage_error
    assert list(outside.iterdir()) == []
    private.ok(f"%spark_session add_file swapped {inputs['file']}")  # its own folder again
    private.ok("%spark_session stop swapped")


# -- ports ------------------------------------------------------------------------------------


def test_a_local_master_listens_on_loopback_only(private: Kernel) -> None:
    listening = jvm_listening(private)
    ports = {port for _, port in listening}
    # py4j's gateway, the driver's RPC and block manager, the UI: all found, all loopback.
    assert int(context_conf(private, "spark.driver.port")) in ports
    assert urlsplit(ui_address(private, "a")).port in ports
    assert len(listening) >= 4, listening
    assert [entry for entry in listening if not is_loopback(entry[0])] == []
    assert context_conf(private, "spark.driver.bindAddress") == "127.0.0.1"
    # SPARK_LOCAL_IP was set for the JVM's launch only, not for the kernel's children.
    assert private.value("'SPARK_LOCAL_IP' in __import__('os').environ") is False


def non_loopback_ipv4() -> str | None:
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not is_loopback(address.address):
                return str(address.address)
    return None


def test_the_ui_answers_on_loopback_only_and_info_shows_it(private: Kernel) -> None:
    ui = ui_address(private, "a")
    parts = urlsplit(ui)
    assert parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.port
    owner = owner_request(private, f"{ui}/jobs/")  # the secret the owner's route adds
    with urllib.request.urlopen(owner, timeout=30) as page:
        assert page.status == 200 and b"Spark Jobs" in page.read()
    host = non_loopback_ipv4()
    if host is not None:  # this machine's network address: nothing answers there
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, parts.port), timeout=5).close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def owner_request(kernel: Kernel, url: str, method: str = "GET") -> urllib.request.Request:
    """A request to the kernel's Spark UI as its owner's Jupyter server makes it: with the
    UI's secret (``UiSecretFilter``; tests/test_spark_ui_privacy.py tests the filter)."""
    secret = kernel.value(f"{CONTEXT}.getConf().get({UI_SECRET_CONF!r}, '')")
    return urllib.request.Request(
        url,
        method=method,
        data=b"" if method == "POST" else None,
        headers={UI_SECRET_HEADER: secret} if secret else {},
    )


def request_status(request: urllib.request.Request) -> int:
    """The HTTP status of one request, redirects not followed."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            status: int = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    return status


SLOW_JOB = """
import threading, time
_sc = __import__('pyspark').SparkContext._active_spark_context
_outcome = {}
def _slow():
    _sc.setJobGroup('jss-ui-kill', 'slow', interruptOnCancel=True)
    try:
        _sc.parallelize(range(240), 240).map(lambda x: __import__('time').sleep(0.5)).count()
        _outcome['r'] = 'done'
    except Exception:
        _outcome['r'] = 'failed'
_slow_thread = threading.Thread(target=_slow, daemon=True)
_slow_thread.start()
while not _sc.statusTracker().getJobIdsForGroup('jss-ui-kill'):
    time.sleep(0.05)
_slow_job = _sc.statusTracker().getJobIdsForGroup('jss-ui-kill')[0]

def _tasks_done(job):
    tracker = _sc.statusTracker()
    info = tracker.getJobInfo(job)
    stages = [tracker.getStageInfo(s) for s in info.stageIds] if info else []
    return sum(s.numCompletedTasks for s in stages if s is not None)

def _outlived(job, done_before, timeout=60):
    '''Once the job has ended, or finished four more tasks than done_before: whether it
    still runs.'''
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if job not in _sc.statusTracker().getActiveJobsIds():
            return False
        if _tasks_done(job) >= done_before + 4:
            return True
        time.sleep(0.1)
    raise TimeoutError(f'job {job} neither ended nor moved on in {timeout} s')
"""

# The token Spark's UI puts in its kill forms (when killing is on) and checks on the kill
# endpoint (Spark >= 4.1): read from the UI's jobs tab (private API; test only).
CSRF_TOKEN = """
try:
    _tabs = _sc._jsc.sc().ui().get().getTabs()
    _csrf = [t.csrfToken() for t in (_tabs.apply(i) for i in range(_tabs.length()))
             if t.getClass().getName().endswith('.JobsTab')][0]
except Exception:  # a Spark without CSRF tokens
    _csrf = ''
"""


def try_ui_kill(kernel: Kernel, session: str) -> tuple[dict[str, int], list[int], bytes]:
    """Start a slow job, ask the UI to kill it (as anyone who reaches the UI could, the
    UI's token included), and return the statuses, the running jobs once the job either
    ended or finished four more tasks (its id while it still runs) and the jobs page seen
    meanwhile. The job is cancelled afterwards."""
    ui = ui_address(kernel, session)
    kernel.ok(SLOW_JOB + CSRF_TOKEN)
    job = kernel.value("_slow_job")
    token = kernel.value("_csrf")
    try:
        page = urllib.request.urlopen(owner_request(kernel, f"{ui}/jobs/"), timeout=30).read()
        kill = f"{ui}/jobs/job/kill/?id={job}"
        statuses = {
            "GET": request_status(owner_request(kernel, kill)),
            "POST without token": request_status(owner_request(kernel, kill, "POST")),
            "POST": request_status(owner_request(kernel, f"{kill}&csrfToken={token}", "POST")),
        }
        # A killed job ends (Spark handles the kill within milliseconds); one the kill
        # missed goes on finishing tasks, a pair every half second.
        done_after_kill = kernel.value(f"_tasks_done({job})")
        kernel.value(f"_outlived({job}, {done_after_kill})")
        running = kernel.value("[j for j in _sc.statusTracker().getActiveJobsIds()]")
    finally:
        kernel.ok("_sc.cancelJobGroup('jss-ui-kill'); _slow_thread.join(60)")
    return statuses, running, page


def test_the_ui_does_not_kill_jobs(private: Kernel) -> None:
    statuses, running, page = try_ui_kill(private, "a")
    job = private.value("_slow_job")
    # Measured on Spark 4.3: GET is not allowed (405), a POST without the token is
    # refused (403), and one with it reaches the kill handler (a redirect to /jobs/),
    # which does nothing because spark.ui.killEnabled is false.
    assert statuses == {"GET": 405, "POST without token": 403, "POST": 302}
    assert job in running
    assert private.value("_outcome") == {"r": "failed"}  # ended by our cancel only
    assert b"csrfToken" not in page  # no kill link offered beside the running job


# -- the user's settings win ------------------------------------------------------------------


def test_context_conf_wins_over_the_loopback_kill_and_scheduling_defaults(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    kernel = start_kernel(
        tmp_path_factory,
        "c.SparkSessionsConfig.default_master = 'local[2]'\n"
        "c.SparkSessionsConfig.context_conf = {"
        f"'spark.ui.port': '{free_port()}', 'spark.ui.killEnabled': 'true', "
        "'spark.driver.bindAddress': '0.0.0.0', 'spark.scheduler.mode': 'FIFO'}\n",
    )
    try:
        kernel.ok("%spark_session create a")
        # The user's FIFO wins over the per-session pools, and info says so.
        info = kernel.ok("%spark_session info a").stdout
        assert "scheduling    FIFO: one queue for every session's jobs" in info, info
        rpc_port = int(context_conf(kernel, "spark.driver.port"))
        listening = {port: address for address, port in jvm_listening(kernel)}
        assert not is_loopback(listening[rpc_port])  # every interface, as asked
        assert is_loopback(listening[urlsplit(ui_address(kernel, "a")).port or 0])
        statuses, running, page = try_ui_kill(kernel, "a")
        # The same request as in test_the_ui_does_not_kill_jobs now kills the job.
        assert statuses["POST"] == 302 and running == [] and b"csrfToken" in page
    finally:
        kernel.shutdown()


# -- leftovers ---------------------------------------------------------------------------


def test_a_killed_kernels_folders_go_when_the_next_kernel_starts_a_live_ones_stay(
    tmp_path_factory: pytest.TempPathFactory, inputs: dict[str, Path]
) -> None:
    base = tmp_path_factory.mktemp("shared-root")
    config = (
        "c.SparkSessionsConfig.default_master = 'local[1]'\n"
        "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false'}\n"
        f"c.SparkSessionsConfig.session_root = {str(base)!r}\n"
    )
    root_of = f"__import__('pathlib').Path({REGISTRY}.config.resolved_session_root())"
    killed = start_kernel(tmp_path_factory, config)
    live = start_kernel(tmp_path_factory, config)
    later: Kernel | None = None
    try:
        killed.ok("%spark_session create a")
        killed.ok(f"%spark_session add_file a {inputs['file']}")
        killed_root = Path(killed.value(f"str({root_of})"))
        killed_session = session_dir(killed, "a")
        jvm = psutil.Process(killed.value(f"{DRIVER}.gateway_process().pid"))
        live_root = Path(live.value(f"str({root_of})"))
        assert killed_root.parent == live_root.parent == base and killed_root != live_root

        process = killed.manager.provisioner.process  # type: ignore[union-attr]
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        killed.client.stop_channels()
        killed.manager.cleanup_resources()  # its connection file
        _, alive = psutil.wait_procs([jvm], timeout=60)  # PySpark's JVM exits with it
        for orphan in alive:
            orphan.kill()
        assert killed_session.exists() and killed_session.parent == killed_root  # left over

        later = start_kernel(tmp_path_factory, config)  # %load_ext removes the leftovers
        assert not killed_root.exists()
        assert live_root.exists()
        assert live.value(f"str({REGISTRY}.config.kernel_root().make_dir('x-00000000'))")
        assert (live_root / "x-00000000").is_dir()
    finally:
        live.shutdown()
        if later is not None:
            later.shutdown()
