"""The private folder tree that holds the sessions' files on the driver.

Each kernel has a folder of its own, ``jupyter_spark_sessions-<pid>-<start>-<ns>-<random>``,
made by ``tempfile.mkdtemp`` (an unpredictable name, mode 0700) in the *base*: the system
temp directory, or ``SparkSessionsConfig.session_root`` when set. Each session's
directory is made inside it, mode 0700 too.

Why it is built this way:

- **No predictable shared path.** A folder at a fixed name in a shared directory
  (``/tmp/jupyter_spark_sessions/<pid>``) can be made first by another user, who then
  owns it and can swap a kernel's folder for a link: the next session's files are
  written wherever the link points (the insecure-temp-directory pattern). ``mkdtemp``
  never reuses a name somebody else made.
- **A configured base is checked before anything is written in it**: a real folder,
  owned by the user, not writable by group or others, reached through folders that only
  root or the user can change (a world-writable one must be sticky, as ``/tmp`` is).
  Links in the configured path are resolved once, when it is checked; only the resolved
  path is used afterwards. A refusal is one line that says why (``SessionRootError``).
- **Writes never follow a link planted in the tree.** Files are created relative to an
  open handle of the folder this project made (checked to still be that folder), with
  ``O_EXCL | O_NOFOLLOW`` and mode 0600: a link planted in the folder, or in place of it,
  is refused, never written through.
- **Folders of dead kernels go at the next start.** The name carries the kernel's pid,
  the process's start time and its pid namespace (Linux), so a folder is removed only
  when that very process is gone, never for a live kernel, and only if the user owns it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from .errors import ArtifactError, SessionRootError

#: Start of every kernel folder's name.
FOLDER_PREFIX = "jupyter_spark_sessions-"
_CHUNK = 1024 * 1024
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_BINARY: int = getattr(os, "O_BINARY", 0)
_FOLDER_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


# -- checking a base folder ---------------------------------------------------------------


def check_base(path: str | os.PathLike[str], configured: bool = True) -> Path:
    """The resolved, checked base folder ``path`` (a missing configured one is made,
    mode 0700); SessionRootError when another user could change what is in it.

    A configured base must be the user's own and not writable by group or others. The
    default base (the system temp directory) may be shared, like ``/tmp``, if it is
    sticky: nobody can then rename or replace the folders the user makes there."""
    if configured:
        what, hint = f"session_root {os.fspath(path)}", "leave session_root unset"
    else:
        what, hint = f"temp directory {path}", "set session_root to a folder of your own"
    real = Path(os.path.realpath(os.fspath(path)))
    missing: list[Path] = []
    existing = real
    while not os.path.lexists(existing):
        missing.append(existing)
        existing = existing.parent
    # Every folder above the first one made here must be safe before anything is made.
    for folder in existing.parents:
        _check_folder(folder, what, hint, mine=False, ancestor=True)
    if missing:
        if not configured:
            raise SessionRootError(f"Refusing {what}: it does not exist.")
        _check_folder(existing, what, hint, mine=False, ancestor=True)
        for folder in reversed(missing):
            try:
                os.mkdir(folder, 0o700)
            except OSError as exc:
                raise SessionRootError(
                    f"Cannot make session_root {folder}: {exc.strerror or exc}."
                ) from None
    _check_folder(real, what, hint, mine=configured)
    return real


def _check_folder(folder: Path, what: str, hint: str, mine: bool, ancestor: bool = False) -> None:
    try:
        st = os.lstat(folder)
    except OSError as exc:
        raise SessionRootError(f"Refusing {what}: {folder}: {exc.strerror or exc}.") from None
    where = f"its folder {folder}" if ancestor else "it"
    if stat.S_ISLNK(st.st_mode):  # realpath resolved it: it was swapped meanwhile
        raise SessionRootError(f"Refusing {what}: {where} changed into a link while checked.")
    if not stat.S_ISDIR(st.st_mode):
        raise SessionRootError(f"Refusing {what}: {where} is not a folder.")
    if os.name != "posix":  # no POSIX owners and modes to check
        return
    if st.st_uid != os.geteuid() and (mine or st.st_uid != 0):
        raise SessionRootError(
            f"Refusing {what}: {where} belongs to {_user(st.st_uid)}, who could replace "
            f"what is in it; use a folder of your own, or {hint}."
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & _OTHERS_WRITE and (mine or not mode & stat.S_ISVTX):
        raise SessionRootError(
            f"Refusing {what}: {where} is writable by group or others (mode {mode:04o}), "
            f"who could replace what is in it; `chmod go-w {folder}`, or {hint}."
        )


def _user(uid: int) -> str:
    try:
        import pwd

        return f"user {pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


# -- the kernel's folder ------------------------------------------------------------------


class KernelRoot:
    """This kernel's private folder in a base folder: made (after checking the base and
    removing dead kernels' folders there) on first use, removed at shutdown."""

    def __init__(self, base: str = "") -> None:
        #: The configured base, or "" for the system temp directory.
        self.base = base
        self._path: Path | None = None
        self._identity: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def path(self) -> Path:
        """The folder, made on the first call; SessionRootError when the base is unsafe
        (then nothing is written in it)."""
        with self._lock:
            if self._path is None:
                base = check_base(self.base or tempfile.gettempdir(), configured=bool(self.base))
                remove_dead_kernel_folders(self.base)
                try:
                    made = Path(tempfile.mkdtemp(prefix=kernel_folder_prefix(), dir=base))
                except OSError as exc:
                    raise SessionRootError(
                        f"Cannot make a private folder in {base}: {exc.strerror or exc}."
                    ) from None
                self._identity = _identity(os.lstat(made))
                self._path = made
            return self._path

    def make_dir(self, name: str) -> Path:
        """A new private folder ``name`` in the kernel's folder (a session's directory)."""
        root = self.path()
        with _open_folder(root, self._identity, SessionRootError) as fd:
            try:
                os.mkdir(name, 0o700, dir_fd=fd)
            except OSError as exc:
                raise SessionRootError(
                    f"Cannot make the session folder {root / name}: {exc.strerror or exc}."
                ) from None
        return root / name

    def scratch_dir(self, owner: str = "spark") -> Path:
        """Where a Spark this project starts keeps its scratch files (``spark.local.dir``),
        in the kernel's folder under a name no session folder can have; Spark makes it."""
        return self.path() / f".{owner}-scratch"

    def java_tmp_dir(self, owner: str = "spark") -> Path:
        """The temp folder (``java.io.tmpdir``) of a JVM this project starts, in the
        kernel's folder under a name no session folder can have (``java_tmpdir``)."""
        return self.path() / f".{owner}-java-tmp"

    def remove(self) -> None:
        """Remove the folder and everything in it (kernel shutdown)."""
        with self._lock:
            made, self._path = self._path, None
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


def kernel_folder_prefix(pid: int | None = None) -> str:
    """``jupyter_spark_sessions-<pid>-<start>-<ns>-``: what names a kernel's folder."""
    pid = os.getpid() if pid is None else pid
    return f"{FOLDER_PREFIX}{pid}-{_start_time(pid) or 0}-{_pid_namespace()}-"


def _start_time(pid: int) -> str:
    """The process's start time (clock ticks since boot; Linux), "" when unknown."""
    fields = _proc_stat(pid)
    return fields[19] if len(fields) > 19 else ""


def _proc_stat(pid: int) -> list[str]:
    # /proc/<pid>/stat after the command name: state, ppid, ..., starttime (22nd field).
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].decode().split()
    except (OSError, IndexError, UnicodeDecodeError):
        return []


def _pid_namespace() -> str:
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "0"
    return "".join(ch for ch in link if ch.isdigit()) or "0"


def _is_alive(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a process of another user has the pid
    fields = _proc_stat(pid)
    if not fields:
        return True  # no /proc: the pid exists, so it may be the kernel
    if fields[0] in ("Z", "X"):
        return False  # exited, not yet reaped by its parent
    return start == "0" or len(fields) <= 19 or fields[19] == start


def remove_dead_kernel_folders(base: str | os.PathLike[str] = "") -> list[Path]:
    """Remove the folders that kernels now gone left in ``base`` (default: the system
    temp directory): only folders the user owns, only when their kernel's process (same
    pid, start time and pid namespace) no longer exists. A base that fails the checks is
    left alone. Returns what was removed."""
    configured = bool(os.fspath(base))
    if os.name != "posix" or (configured and not os.path.isdir(base)):
        return []  # no pids and owners to go by; or nothing to remove (and nothing is made)
    try:
        folder = check_base(base if configured else tempfile.gettempdir(), configured)
        entries = list(os.scandir(folder))
    except (SessionRootError, OSError):
        return []
    me, namespace = os.geteuid(), _pid_namespace()
    removed = []
    for entry in entries:
        parts = entry.name[len(FOLDER_PREFIX) :].split("-")
        if not entry.name.startswith(FOLDER_PREFIX) or len(parts) != 4:
            continue
        pid, start, ns, _ = parts
        if not pid.isdigit() or ns != namespace or _is_alive(int(pid), start):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == me:
            shutil.rmtree(entry.path, ignore_errors=True)  # never follows links (fd-based)
            removed.append(Path(entry.path))
    return removed


# -- writing inside a folder this project made ---------------------------------------------


class PrivateFolder:
    """A folder this project made, written only through handles that refuse links."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._identity = _identity(os.lstat(path))

    def check(self) -> None:
        """ArtifactError unless the folder is still the one this project made."""
        with _open_folder(self.path, self._identity, ArtifactError):
            pass

    def copy_in(self, source: Path, name: str) -> None:
        """Copy ``source`` to the new file ``name`` (mode 0600)."""
        with open(source, "rb") as src, self._create(name) as out:
            shutil.copyfileobj(src, out, _CHUNK)

    def write_in(self, name: str, text: str) -> None:
        """Write ``text`` to the new file ``name`` (mode 0600)."""
        with self._create(name) as out:
            out.write(text.encode("utf-8"))

    def link(self, existing: str, name: str) -> None:
        """A hard link ``name`` to the file ``existing`` (a link is never followed)."""
        with _open_folder(self.path, self._identity, ArtifactError) as fd:
            os.link(existing, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)

    def replace(self, old: str, new: str) -> None:
        """Rename ``old`` to ``new`` in the folder (a link at ``new`` is replaced, not
        followed)."""
        with _open_folder(self.path, self._identity, ArtifactError) as fd:
            os.replace(old, new, src_dir_fd=fd, dst_dir_fd=fd)

    @contextlib.contextmanager
    def _create(self, name: str) -> Iterator[BinaryIO]:
        with _open_folder(self.path, self._identity, ArtifactError) as fd:
            try:
                handle = os.open(name, _NEW_FILE_FLAGS, 0o600, dir_fd=fd)
            except FileExistsError:
                raise ArtifactError(
                    f"Refused to write {self.path / name}: something (a link?) is already "
                    "there that jupyter_spark_sessions did not make."
                ) from None
            try:
                with open(handle, "wb") as out:
                    yield out
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
                raise


def open_private(path: Path, append: bool = False) -> BinaryIO:
    """``path`` opened for writing (made mode 0600, else emptied or appended to),
    refusing a link."""
    flags = os.O_WRONLY | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
    flags |= os.O_APPEND if append else os.O_TRUNC
    return open(os.open(path, flags, 0o600), "ab" if append else "wb")


def read_private_json(path: Path) -> dict[str, Any] | None:
    """The JSON object of ``path`` if it is a regular file of this user that no one else
    can read or write; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as opened:
        info = os.fstat(opened.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        try:
            record = json.load(opened)
        except ValueError:
            return None
    return record if isinstance(record, dict) else None


def write_private_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` (mode 0600), replacing it atomically."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(data, out)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


@contextlib.contextmanager
def _open_folder(
    path: Path, identity: tuple[int, int] | None, error: type[Exception]
) -> Iterator[int]:
    """An open handle of the folder ``path``, checked to be the one with ``identity``."""
    try:
        fd = os.open(path, _FOLDER_FLAGS)
    except OSError as exc:
        raise error(
            f"Refused to write in {path}: it is no longer the folder jupyter_spark_sessions "
            f"made ({exc.strerror or exc})."
        ) from None
    try:
        if identity is not None and _identity(os.fstat(fd)) != identity:
            raise error(
                f"Refused to write in {path}: it is no longer the folder "
                "jupyter_spark_sessions made (it was replaced)."
            )
        yield fd
    finally:
        os.close(fd)
