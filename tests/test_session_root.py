"""session_root.py without Spark: where a kernel's private folder is made, which bases
are refused and why, that writes never follow a planted link, and which leftover folders
the next kernel removes. Ownership cases need root (CI runs as root) to hand a folder to
another user; elsewhere they are skipped."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from jupyter_spark_sessions import session_root
from jupyter_spark_sessions.config import SparkSessionsConfig
from jupyter_spark_sessions.errors import ArtifactError, SessionRootError
from jupyter_spark_sessions.files.artifacts import SessionArtifacts
from jupyter_spark_sessions.session_root import (
    FOLDER_PREFIX,
    KernelRoot,
    PrivateFolder,
    check_base,
    kernel_folder_prefix,
    open_private,
    remove_dead_kernel_folders,
)

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a folder away")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A folder of the user's, private, as a configured session_root."""
    folder = tmp_path / "base"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp directory, as the default base: world-writable and sticky."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    folder.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: the pid names no process now
    return child.pid


# -- the kernel's folder --------------------------------------------------------------


def test_default_folder_is_private_unpredictable_and_named_for_this_process(
    temp_dir: Path,
) -> None:
    first, second = KernelRoot(), KernelRoot()
    a, b = first.path(), second.path()
    assert a.parent == b.parent == temp_dir and a != b
    assert a.name.startswith(kernel_folder_prefix()) and a.name.startswith(
        f"{FOLDER_PREFIX}{os.getpid()}-"
    )
    assert mode_of(a) == 0o700 and a.stat().st_uid == os.geteuid()
    assert first.path() == a  # made once
    first.remove()
    assert not a.exists() and b.exists()


def test_session_folders_are_private_and_the_folder_goes_whole_at_shutdown(base: Path) -> None:
    config = SparkSessionsConfig(session_root=str(base))
    session = config.kernel_root().make_dir("a-12345678")
    assert mode_of(session) == 0o700 and session.parent.parent == base
    (session / "data.csv").write_text("x")
    (Path(config.resolved_session_root()) / "connect-server.log").write_text("log")
    config.remove_session_roots()
    assert list(base.iterdir()) == []


def test_a_missing_configured_base_is_made_private(tmp_path: Path) -> None:
    wanted = tmp_path / "new" / "sessions"
    assert check_base(wanted) == wanted
    assert mode_of(wanted) == 0o700 and mode_of(wanted.parent) == 0o700


def test_a_link_to_the_users_own_folder_is_resolved_once(base: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(base)
    made = KernelRoot(str(link)).path()
    assert made.parent == base  # the real path, not the link


# -- refused bases --------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o770, 0o702, 0o777, 0o1777])
def test_a_base_others_can_write_to_is_refused_and_nothing_is_written(
    base: Path, mode: int
) -> None:
    base.chmod(mode)
    with pytest.raises(SessionRootError) as refused:
        KernelRoot(str(base)).path()
    message = str(refused.value)
    assert message.startswith(f"Refusing session_root {base}: it is writable by group or others")
    assert f"mode {mode:04o}" in message and "\n" not in message
    assert list(base.iterdir()) == []


@as_root
def test_a_base_of_another_user_is_refused_and_nothing_is_written(base: Path) -> None:
    os.chown(base, NOBODY, NOBODY)
    with pytest.raises(SessionRootError, match=r"belongs to (user '\w+' \()?uid 65534"):
        KernelRoot(str(base)).path()
    assert list(base.iterdir()) == []


@as_root
def test_a_link_to_another_users_folder_is_refused(base: Path, tmp_path: Path) -> None:
    os.chown(base, NOBODY, NOBODY)
    link = tmp_path / "mine"
    link.symlink_to(base)
    with pytest.raises(SessionRootError, match="belongs to"):
        KernelRoot(str(link)).path()
    assert list(base.iterdir()) == []


@as_root
def test_a_folder_inside_another_users_folder_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    mine = theirs / "mine"
    mine.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(SessionRootError, match=f"its folder {theirs} belongs to"):
        KernelRoot(str(mine)).path()
    assert list(mine.iterdir()) == []


def test_a_folder_under_a_writable_not_sticky_folder_is_refused_before_making_it(
    tmp_path: Path,
) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    with pytest.raises(SessionRootError, match=f"its folder {open_dir} is writable"):
        KernelRoot(str(open_dir / "sessions")).path()
    assert list(open_dir.iterdir()) == []  # not even the missing folder was made


def test_a_folder_under_a_sticky_folder_is_accepted(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert KernelRoot(str(shared / "mine")).path().parent == shared / "mine"


def test_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(SessionRootError, match="it is not a folder"):
        KernelRoot(str(file)).path()


def test_a_temp_dir_others_can_write_to_without_sticky_bit_is_refused(
    temp_dir: Path,
) -> None:
    temp_dir.chmod(0o777)
    with pytest.raises(SessionRootError, match=f"Refusing temp directory {temp_dir}: it is"):
        KernelRoot().path()
    assert list(temp_dir.iterdir()) == []


def test_the_session_folder_is_not_made_through_a_swapped_kernel_folder(
    base: Path, tmp_path: Path
) -> None:
    root = KernelRoot(str(base))
    folder = root.path()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.rename(tmp_path / "moved")
    folder.symlink_to(elsewhere)
    with pytest.raises(SessionRootError, match="no longer the folder"):
        root.make_dir("a-12345678")
    assert list(elsewhere.iterdir()) == []


# -- writes in a folder this project made -------------------------------------------------


def test_copies_are_new_private_files(tmp_path: Path) -> None:
    source = tmp_path / "source.csv"
    source.write_text("data")
    source.chmod(0o644)
    folder = tmp_path / "session"
    folder.mkdir(mode=0o700)
    private = PrivateFolder(folder)
    private.copy_in(source, "copy.csv")
    private.write_in("shim.py", "x = 1")
    assert (folder / "copy.csv").read_text() == "data"
    assert mode_of(folder / "copy.csv") == mode_of(folder / "shim.py") == 0o600


@pytest.mark.parametrize("dangling", [True, False])
def test_a_link_planted_at_the_name_is_refused_not_written_through(
    tmp_path: Path, dangling: bool
) -> None:
    folder = tmp_path / "session"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    if not dangling:
        victim.write_text("original")
    (folder / "name").symlink_to(victim)
    private = PrivateFolder(folder)
    with pytest.raises(ArtifactError, match="did not make"):
        private.write_in("name", "payload")
    assert victim.exists() != dangling and (dangling or victim.read_text() == "original")


def test_nothing_is_written_once_the_folder_was_swapped_for_a_link(tmp_path: Path) -> None:
    folder = tmp_path / "session"
    folder.mkdir(mode=0o700)
    private = PrivateFolder(folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.rename(tmp_path / "moved")
    folder.symlink_to(elsewhere)
    with pytest.raises(ArtifactError, match="no longer the folder"):
        private.write_in("x", "payload")
    with pytest.raises(ArtifactError, match="no longer the folder"):
        private.check()
    assert list(elsewhere.iterdir()) == []


def test_add_file_refuses_a_planted_link_with_one_line(tmp_path: Path) -> None:
    source = tmp_path / "lookup.csv"
    source.write_text("data")
    folder = tmp_path / "session"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim.csv"
    (folder / "lookup.csv").symlink_to(victim)
    store = SessionArtifacts("a", folder, lambda *args: None)
    with pytest.raises(ArtifactError) as refused:
        store.add_file(source)
    assert str(refused.value) == (
        f"Refused: {folder / 'lookup.csv'} is a link that jupyter_spark_sessions did not "
        "make; nothing was written through it."
    )
    assert not victim.exists() and store.list() == []
    assert [p.name for p in folder.iterdir()] == ["lookup.csv"]


def test_open_private_refuses_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.log"
    (tmp_path / "server.log").symlink_to(victim)
    with pytest.raises(OSError):
        open_private(tmp_path / "server.log")
    assert not victim.exists()
    with open_private(tmp_path / "fresh.log") as log:
        log.write(b"x")
    assert mode_of(tmp_path / "fresh.log") == 0o600


# -- leftovers of dead kernels ----------------------------------------------------------------


def leftover(base: Path, prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    (folder / "a-12345678").mkdir()
    (folder / "a-12345678" / "data.csv").write_text("x")
    return folder


def test_folders_of_dead_kernels_go_and_live_ones_stay(base: Path) -> None:
    gone = leftover(base, kernel_folder_prefix(dead_pid()))
    mine = leftover(base, kernel_folder_prefix())
    # The same pid, started at another time: a reused pid, not this kernel.
    reused = leftover(base, f"{FOLDER_PREFIX}{os.getpid()}-1-{session_root._pid_namespace()}-")
    other_namespace = leftover(base, f"{FOLDER_PREFIX}{dead_pid()}-0-1-")
    unrelated = base / "jupyter_spark_sessions-notes"
    unrelated.mkdir()
    removed = remove_dead_kernel_folders(base)
    assert sorted(removed) == sorted([gone, reused])
    assert not gone.exists() and not reused.exists()
    assert mine.exists() and other_namespace.exists() and unrelated.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_exited_kernel_not_yet_reaped_counts_as_gone(base: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    folder = leftover(base, kernel_folder_prefix(child.pid))
    deadline = time.monotonic() + 30
    while session_root._proc_stat(child.pid)[:1] != ["Z"]:  # a zombie until waited for
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.01)
    assert remove_dead_kernel_folders(base) == [folder]
    child.wait()


@as_root
def test_another_users_folder_and_a_link_are_left_alone(base: Path, tmp_path: Path) -> None:
    theirs = leftover(base, kernel_folder_prefix(dead_pid()))
    os.chown(theirs, NOBODY, NOBODY)
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("x")
    (base / f"{kernel_folder_prefix(dead_pid())}link").symlink_to(target)
    assert remove_dead_kernel_folders(base) == []
    assert theirs.exists() and (target / "keep.txt").exists()


def test_an_unsafe_or_missing_base_is_not_swept(base: Path, tmp_path: Path) -> None:
    gone = leftover(base, kernel_folder_prefix(dead_pid()))
    base.chmod(0o777)
    assert remove_dead_kernel_folders(base) == [] and gone.exists()
    missing = tmp_path / "missing"
    assert remove_dead_kernel_folders(missing) == [] and not missing.exists()


def test_a_new_kernel_folder_sweeps_its_base_first(base: Path) -> None:
    gone = leftover(base, kernel_folder_prefix(dead_pid()))
    KernelRoot(str(base)).path()
    assert not gone.exists()
