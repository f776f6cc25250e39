"""Session-scoped files, archives and Python files: validate, copy, register.

Each session has one namespace of names (files, unpacked archive folders, Python
files), mirrored in two places:

- the session's directory on the driver (``<session dir>/<name>``), so driver-side code
  reads the same files as the session's UDFs (``Artifact.path``);
- the session's own Spark artifact manager (SPARK-44290), which ships them to executors,
  where a Python UDF of that session finds them in its working directory.

Adding is all or nothing: every check runs before anything is written; the copy goes to
a temporary name and is renamed into place only after Spark accepted it; on any failure
the temporary files (and an unpacked folder) are removed. The user's original file is
only read. Copies stream; nothing is read whole into memory. Every copy is new, mode
0600, made through a handle of the session's folder that refuses links
(``session_root.PrivateFolder``).
"""

from __future__ import annotations

import contextlib
import filecmp
import hashlib
import os
import shutil
import threading
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ArtifactError
from ..session_root import PrivateFolder
from .archives import ArchiveLimits, archive_kind, archive_suffix, default_alias, unpack_archive

Kind = Literal["file", "archive", "pyfile"]
PYFILE_SUFFIXES = (".py", ".zip", ".egg")
_TEMP_PREFIX = ".jss-"  # temporary names in a session directory; never a user's name

#: ``register(remote_path, staged_file, fragment)``: hands a staged copy to Spark, which
#: moves it into the session's artifact folder.
Register = Callable[[str, Path, "str | None"], None]


@dataclass(frozen=True)
class Artifact:
    """One name added to a session."""

    name: str
    kind: Kind
    size: int  # bytes of the file the user added (for an archive: the archive file)
    added_at: float  # epoch seconds
    source: str  # the user's path it was copied from
    path: str  # where the driver sees it: the file, or the unpacked folder
    sha256: str = ""  # of an archive or zip/egg (to recognise the same content again)
    support_names: tuple[str, ...] = ()  # extra names it occupies (import shims)


@dataclass(frozen=True)
class AddResult:
    """What an add did: ``added`` is False when the same content was already there."""

    artifact: Artifact
    added: bool


class SessionArtifacts:
    """The artifacts of one session, and the operations that add them."""

    def __init__(self, session_name: str, directory: Path, register: Register) -> None:
        self.session_name = session_name
        self.directory = directory
        # Every write goes through it: no link planted in (or for) the folder is followed.
        self._folder = PrivateFolder(directory)
        self._register = register
        self._items: dict[str, Artifact] = {}
        self._lock = threading.Lock()  # one add at a time per session: no name races
        # What `list` returns, replaced whole after each add: readers (the job board's
        # thread) never wait for an add that is copying a large file.
        self._listed: tuple[Artifact, ...] = ()

    def list(self) -> list[Artifact]:
        """Added artifacts, oldest first."""
        return list(self._listed)

    # -- adding ---------------------------------------------------------------------

    def add_file(self, path: str | os.PathLike[str], alias: str | None = None) -> AddResult:
        """Add a file; UDFs open it as ``./<alias>`` (default: its file name)."""
        source = _readable_file(path)
        name = check_name(alias if alias is not None else source.name, "name")
        with self._lock:
            same = self._same_as_existing(name, "file", source)
            if same is not None:
                return AddResult(same, added=False)
            target = self._free_target(name)
            copy = self._temp_path()
            try:
                self._copy_in(source, copy)
                self._hand_to_spark(f"files/{name}", copy, None)
                self._folder.replace(copy.name, target.name)
            except BaseException:
                _remove(copy)
                raise
            return self._record(name, "file", source, target)

    def add_archive(
        self,
        path: str | os.PathLike[str],
        alias: str | None = None,
        limits: ArchiveLimits | None = None,
    ) -> AddResult:
        """Add a zip, jar, tar, tar.gz or tgz, unpacked into ``<alias>/`` (default: the
        archive's base name) for UDFs and on the driver. Unsafe entries and archives over
        ``limits`` are refused before anything is unpacked or registered."""
        source = _readable_file(path)
        archive_kind(source)  # an unsupported type is refused first
        name = check_name(alias if alias is not None else default_alias(source), "alias")
        with self._lock:
            digest = _sha256(source)
            existing = self._items.get(name)
            if existing is not None:
                if existing.kind == "archive" and existing.sha256 == digest:
                    return AddResult(existing, added=False)
                raise self._taken(name, existing)
            target = self._free_target(name)
            # Unpack first: it validates every entry, and Spark must never get an
            # archive we refuse (executors unpack the same file).
            unpack_archive(source, target, limits or ArchiveLimits())
            copy = self._temp_path()
            try:
                self._copy_in(source, copy)
                suffix = archive_suffix(source)
                self._hand_to_spark(f"archives/{name}{suffix}", copy, name)
            except BaseException:
                _remove(copy)
                shutil.rmtree(target, ignore_errors=True)
                raise
            # Kept (the driver reads the unpacked folder): a new session made in place of
            # this one (`restart`, `reconnect`) gets the same archive.
            self._folder.replace(copy.name, _kept_archive(name, suffix))
            return self._record(name, "archive", source, target, sha256=digest)

    def add_pyfile(self, path: str | os.PathLike[str]) -> AddResult:
        """Add a .py, .zip or .egg that the session's Python UDFs can import."""
        source = _readable_file(path)
        suffix = source.suffix.lower()
        if suffix not in PYFILE_SUFFIXES:
            raise ArtifactError(
                f"Cannot add '{source.name}' as a Python file: use a .py, .zip or .egg "
                "(for other files, add_file)."
            )
        name = check_name(source.name, "name")
        shims: dict[str, str] = {}
        if suffix != ".py":
            shims = _import_shims(source, name)
        with self._lock:
            digest = _sha256(source)
            existing = self._items.get(name)
            if existing is not None:
                if existing.kind == "pyfile" and existing.sha256 == digest:
                    return AddResult(existing, added=False)
                raise self._taken(name, existing)
            target = self._free_target(name)
            for shim_name in shims:
                self._free_target(shim_name)
            copy = self._temp_path()
            try:
                self._hand_shims_to_spark(shims)
                self._copy_in(source, copy)
                self._hand_to_spark(f"pyfiles/{name}", copy, None)
                self._folder.replace(copy.name, target.name)
            except BaseException:
                _remove(copy)
                raise
            return self._record(name, "pyfile", source, target, sha256=digest, support=tuple(shims))

    def register_again(self, register: Register) -> None:
        """Hand every artifact to a new Spark session that replaces this one's (after a
        lost driver or server) from the copies in the session directory; later adds go
        to it too. ArtifactError when Spark refuses one (the rest are still handed)."""
        with self._lock:
            self._register = register
            refused = []
            for item in self._items.values():
                try:
                    self._hand_over(item)
                except ArtifactError as exc:
                    refused.append(str(exc))
        if refused:
            raise ArtifactError(f"Not added again to session '{self.session_name}': {refused[0]}")

    def _hand_over(self, item: Artifact) -> None:
        path = Path(item.path)
        if item.kind == "file":
            self._hand_to_spark(f"files/{item.name}", path, None)
        elif item.kind == "archive":
            suffix = archive_suffix(Path(item.source))
            kept = self.directory / _kept_archive(item.name, suffix)
            self._hand_to_spark(f"archives/{item.name}{suffix}", kept, item.name)
        else:
            if path.suffix.lower() != ".py":
                self._hand_shims_to_spark(_import_shims(path, item.name))
            self._hand_to_spark(f"pyfiles/{item.name}", path, None)

    # -- helpers (called with the lock held) -----------------------------------------

    def _same_as_existing(self, name: str, kind: Kind, source: Path) -> Artifact | None:
        existing = self._items.get(name)
        if existing is None:
            return None
        if existing.kind == kind and filecmp.cmp(existing.path, source, shallow=False):
            return existing
        raise self._taken(name, existing)

    def _taken(self, name: str, existing: Artifact) -> ArtifactError:
        what = "with different content" if existing.kind != "archive" else "(another archive)"
        return ArtifactError(
            f"Session '{self.session_name}' already has a {existing.kind} named '{name}' "
            f"{what}; it was kept. Add this one under another name (--as NAME)."
        )

    def _free_target(self, name: str) -> Path:
        self._folder.check()
        taken = {n for a in self._items.values() for n in (a.name, *a.support_names)}
        target = self.directory / name
        if name not in taken and os.path.islink(target):
            raise ArtifactError(
                f"Refused: {target} is a link that jupyter_spark_sessions did not make; "
                "nothing was written through it."
            )
        if name in taken or os.path.lexists(target):
            raise ArtifactError(
                f"The name '{name}' is already used in session '{self.session_name}'; "
                "add this one under another name (--as NAME)."
            )
        return target

    def _copy_in(self, source: Path, target: Path) -> None:
        try:
            self._folder.copy_in(source, target.name)
        except OSError as exc:
            raise ArtifactError(f"Could not copy {source.name}: {exc.strerror or exc}") from None

    def _temp_path(self) -> Path:
        return self.directory / f"{_TEMP_PREFIX}{uuid.uuid4().hex}"

    def _hand_shims_to_spark(self, shims: dict[str, str]) -> None:
        # The import shims of a .zip/.egg: written, handed over, removed (Spark has them).
        for shim_name, code in shims.items():
            shim = self._temp_path()
            try:
                self._folder.write_in(shim.name, code)
                self._hand_to_spark(f"pyfiles/{shim_name}", shim, None)
            finally:
                _remove(shim)

    def _hand_to_spark(self, remote: str, staged_copy: Path, fragment: str | None) -> None:
        # Spark moves the staged file away; keep ours by handing over a hard link.
        staged = self._temp_path()
        try:
            if _can_link(staged_copy):
                self._folder.link(staged_copy.name, staged.name)
            else:
                self._copy_in(staged_copy, staged)
            self._register(remote, staged, fragment)
        except ArtifactError:
            raise
        except Exception as exc:
            first = str(exc).strip().splitlines()
            raise ArtifactError(
                f"Spark did not accept '{remote}': {first[0] if first else type(exc).__name__}"
            ) from None
        finally:
            _remove(staged)

    def _record(
        self,
        name: str,
        kind: Kind,
        source: Path,
        target: Path,
        sha256: str = "",
        support: tuple[str, ...] = (),
    ) -> AddResult:
        artifact = Artifact(
            name=name,
            kind=kind,
            size=source.stat().st_size,
            added_at=time.time(),
            source=str(source),
            path=str(target),
            sha256=sha256,
            support_names=support,
        )
        self._items[name] = artifact
        self._listed = tuple(self._items.values())
        return AddResult(artifact, added=True)


def _kept_archive(name: str, suffix: str) -> str:
    # Users cannot take the prefix (``check_name``).
    return f"{_TEMP_PREFIX}archive-{name}{suffix}"


def check_name(name: str, what: str) -> str:
    """Raise ArtifactError unless ``name`` can name a file in a session's folder."""
    if (
        not name
        or "/" in name
        or "\\" in name
        or "\0" in name
        or ".." in name
        or name in (".",)
        or name.startswith(_TEMP_PREFIX)
    ):
        raise ArtifactError(
            f"Invalid {what} {name!r}: a plain file name, without '/', '\\\\', '..' or NUL."
        )
    return name


def _readable_file(path: str | os.PathLike[str]) -> Path:
    source = Path(os.fspath(path)).expanduser()
    if "\0" in str(source):
        raise ArtifactError("The path contains a NUL character.")
    if not source.exists():
        raise ArtifactError(f"No such file: {source}")
    if source.is_dir():
        raise ArtifactError(
            f"{source} is a directory: add a file, or pack the folder into an archive "
            "(zip, tar.gz) and use add_archive."
        )
    if not source.is_file():
        raise ArtifactError(f"{source} is not a regular file.")
    try:
        with open(source, "rb"):
            pass
    except OSError as exc:
        raise ArtifactError(f"Cannot read {source}: {exc.strerror or exc}") from None
    return source.resolve()


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _can_link(path: Path) -> bool:
    return hasattr(os, "link") and path.exists()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# A .zip/.egg on a classic session lands in the UDF's working directory, which is on
# sys.path, but Python imports from a zip only when the zip itself is on sys.path. For
# each top-level package or module in it, a small module of the same name puts the zip
# on sys.path and hands over to the real one (a module may replace itself in
# sys.modules while it is imported).
_SHIM = '''"""Import shim of jupyter_spark_sessions for {top!r} in {archive!r}."""
import importlib
import os
import sys

_archive = os.path.join(os.path.dirname(os.path.abspath(__file__)), {archive!r})
if _archive not in sys.path:
    sys.path.insert(0, _archive)
del sys.modules[__name__]
sys.modules[__name__] = importlib.import_module(__name__)
'''


def _import_shims(source: Path, archive_name: str) -> dict[str, str]:
    """``{"<top>.py": code}`` for each importable top-level name in a zip/egg."""
    if not zipfile.is_zipfile(source):
        raise ArtifactError(f"'{source.name}' is not a valid zip archive.")
    try:
        with zipfile.ZipFile(source) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArtifactError(f"'{source.name}' is not a valid zip archive: {exc}") from None
    tops: set[str] = set()
    for entry in names:
        first, _, rest = entry.partition("/")
        if rest:  # a package (or namespace package) folder
            if first.isidentifier():
                tops.add(first)
        elif first.endswith(".py") and first[:-3].isidentifier():
            tops.add(first[:-3])
    if not tops:
        raise ArtifactError(f"'{source.name}' holds no importable top-level package or module.")
    return {f"{top}.py": _SHIM.format(top=top, archive=archive_name) for top in sorted(tops)}
