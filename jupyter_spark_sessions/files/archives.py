"""Validate and unpack the archives users add to a session, safely and in one pass.

An archive added with ``%spark_session add_archive`` is unpacked on the driver into the
session's folder, and Spark unpacks the same file on every executor. It comes from the
user, so it may be malformed or hostile: names with ``..`` or absolute paths, links
leading out of the folder, device files, or a "zip bomb" that expands to fill the disk.

Why it is built this way:

- **One pass.** Each entry is checked, then written, as the archive is read: the data is
  decompressed once (a separate validation pass would double the cost of a large
  archive). Nothing is delegated to ``extractall``: every file, folder and link is
  created here, so no entry can reach a path that was not checked.
- **A temporary folder, renamed at the end.** Entries go into a hidden sibling of the
  destination, renamed to it only once the whole archive was accepted. Any refusal or
  error deletes the temporary folder, so a failed unpack leaves nothing behind and the
  destination never holds a half-unpacked archive.
- **Limits on the bytes really written.** Declared sizes (zip's central directory) are
  checked first because it is cheap, but they can lie: the entry count, the total size
  and the expansion ratio are enforced on the data as it is copied, chunk by chunk, so a
  bomb is stopped before it writes more than the limit.
- **The type comes from the file name**, as on Spark's executors (``.jar``/``.zip`` are
  unzipped, ``.tar.gz``/``.tgz`` gunzipped then untarred, ``.tar`` untarred): content
  that does not match its suffix would fail there, so it is refused here.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ..errors import ArtifactError
from ..sizes import size_text

ARCHIVE_SUFFIXES: tuple[str, ...] = (".tar.gz", ".tgz", ".tar", ".zip", ".jar")

_GZIP_SUFFIXES = (".tar.gz", ".tgz")
_ZIP_SUFFIXES = (".zip", ".jar")
_CHUNK = 1024 * 1024
# A zip link's content is its target; a real target is a path, never megabytes.
_MAX_LINK_TARGET = 4096
# Data after a tar's end marker is read (not written) to reach the gzip checksum; tar
# pads to 10 KiB records, so more than this is not padding.
_MAX_TAIL = 16 * 1024 * 1024
_ZERO_BLOCK = bytes(tarfile.BLOCKSIZE)
# Windows drive prefix ("C:..."): absolute on Windows, and Spark may run there.
_DRIVE = re.compile(r"^[A-Za-z]:")
_SEPARATORS = re.compile(r"[/\\]")
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
# What is unpacked is readable by its owner only, whatever modes the archive holds
# (executors unpack their own copy).
_PRIVATE_DIR = 0o700
_O_BINARY: int = getattr(os, "O_BINARY", 0)


@dataclass(frozen=True)
class ArchiveLimits:
    """What one archive may unpack to; over any limit, it is refused."""

    max_total_bytes: int = 4 * 1024**3
    """Total uncompressed bytes of all its files."""
    max_entries: int = 100_000
    """Entries of any kind (files, folders, links)."""
    max_ratio: float = 200.0
    """Total uncompressed bytes divided by the archive file's size."""


@dataclass(frozen=True)
class UnpackResult:
    """What an accepted archive was unpacked to."""

    entries: int
    """Files, folders and links created from the archive's entries (folders created
    only because an entry's path needs them are not counted)."""
    total_bytes: int
    """Uncompressed bytes written."""


def archive_kind(path: Path) -> Literal["zip", "tar"]:
    """``"zip"`` for ``.zip``/``.jar``, ``"tar"`` for ``.tar``/``.tar.gz``/``.tgz``
    (case-insensitive); any other name is an ArtifactError listing the supported types."""
    suffix = archive_suffix(path)
    return "zip" if suffix in _ZIP_SUFFIXES else "tar"


def default_alias(path: Path) -> str:
    """The archive's name without its archive suffix: ``lookup.tar.gz`` -> ``lookup``,
    ``My Data.tgz`` -> ``My Data``."""
    suffix = archive_suffix(path)
    alias = path.name[: -len(suffix)]
    if not alias:
        raise ArtifactError(
            f"Archive '{_show(path.name)}' has no name before its suffix; "
            "give the folder a name with --as."
        )
    return alias


def unpack_archive(path: Path, dest: Path, limits: ArchiveLimits) -> UnpackResult:
    """Validate and unpack ``path`` into the new folder ``dest``.

    ``dest`` must not exist; its parent must. Each entry is checked, then written,
    counting the bytes really written. On any refusal or error, nothing is left behind
    (``dest`` is not created) and ArtifactError is raised with a one-line message.
    """
    kind = archive_kind(path)
    label = _show(path.name)
    if os.path.lexists(dest):
        raise ArtifactError(
            f"Cannot unpack archive '{label}': the folder '{_show(str(dest))}' already exists."
        )
    if not dest.parent.is_dir():
        raise ArtifactError(
            f"Cannot unpack archive '{label}': the folder '{_show(str(dest.parent))}' "
            "does not exist."
        )
    try:
        archive_size = path.stat().st_size
    except OSError as exc:
        raise ArtifactError(f"Cannot unpack archive '{label}': {_os_reason(exc)}.") from None
    if not path.is_file():
        raise ArtifactError(f"Cannot unpack archive '{label}': it is not a file.")

    try:
        tmp = tempfile.mkdtemp(prefix=f".{dest.name[:100]}.unpacking-", dir=dest.parent)
    except OSError as exc:
        raise ArtifactError(f"Cannot unpack archive '{label}': {_os_reason(exc)}.") from None
    try:
        unpacker = _Unpacker(label, tmp, limits, archive_size)
        if kind == "zip":
            _unpack_zip(path, unpacker)
        else:
            _unpack_tar(path, unpacker, compressed=path.name.lower().endswith(_GZIP_SUFFIXES))
        result = unpacker.finish()
        # Someone may have created dest meanwhile: on POSIX, rename would silently
        # replace an empty folder.
        if os.path.lexists(dest):
            raise ArtifactError(
                f"Cannot unpack archive '{label}': the folder '{_show(str(dest))}' already exists."
            )
        os.rename(tmp, dest)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise ArtifactError(f"Cannot unpack archive '{label}': {_os_reason(exc)}.") from None
        raise
    return result


class _Unpacker:
    """Creates the entries of one archive under ``root``, refusing unsafe ones."""

    def __init__(self, label: str, root: str, limits: ArchiveLimits, archive_size: int):
        self.label = label
        self.root = root
        self._root_real = os.path.realpath(root)
        self.limits = limits
        self.archive_size = archive_size
        self._ratio_bytes = limits.max_ratio * max(archive_size, 1)
        self.members = 0
        self.created = 0
        self.total_bytes = 0
        # Folders (as path parts) made here as real folders, reached through real folders
        # only. Entries are never removed or replaced by a folder's path, so an entry
        # under one of them needs no realpath check: it cannot be reached through a link.
        self._plain_dirs: set[tuple[str, ...]] = {()}
        # Regular files unpacked so far, the only valid targets of a hard link.
        self._files: dict[tuple[str, ...], str] = {}
        self._links: list[tuple[str, str, str]] = []  # name, target, path

    def refuse(self, reason: str) -> ArtifactError:
        return ArtifactError(f"Refused archive '{self.label}': {reason}.")

    # Limits

    def count_member(self) -> None:
        self.members += 1
        if self.members > self.limits.max_entries:
            raise self.refuse(f"it has more than {self.limits.max_entries} entries (the limit)")

    def check_declared(self, entries: int, total_bytes: int) -> None:
        """Refuses early on what a zip's central directory declares."""
        if entries > self.limits.max_entries:
            raise self.refuse(
                f"it has {entries} entries, more than the limit of {self.limits.max_entries}"
            )
        self._check_bytes(total_bytes, "declares")

    def _check_bytes(self, total: int, verb: str) -> None:
        if total > self.limits.max_total_bytes:
            raise self.refuse(
                f"it {verb} more than {size_text(self.limits.max_total_bytes)} of data (the limit)"
            )
        if total > self._ratio_bytes:
            raise self.refuse(
                f"it {verb} more than {self.limits.max_ratio:g} times its own size "
                f"of {size_text(self.archive_size)} (a likely zip bomb)"
            )

    def _count_bytes(self, n: int) -> None:
        # Called before a chunk is written, so the limits are never exceeded on disk.
        self._check_bytes(self.total_bytes + n, "unpacks to")
        self.total_bytes += n

    # Names and paths

    def _inside(self, real: str) -> bool:
        return real == self._root_real or real.startswith(self._root_real + os.sep)

    def _parts(self, name: str) -> tuple[str, ...]:
        if "\0" in name:
            raise self.refuse(f"entry '{_show(name)}' has a NUL character in its name")
        # Backslashes count as separators here: Windows (and Spark on it) reads them so.
        if _is_absolute(name):
            raise self.refuse(
                f"entry '{_show(name)}' would land outside its folder (an absolute path)"
            )
        if ".." in _SEPARATORS.split(name):
            raise self.refuse(f"entry '{_show(name)}' would land outside its folder")
        return tuple(p for p in name.split("/") if p not in ("", "."))

    def _named_parts(self, name: str) -> tuple[str, ...]:
        parts = self._parts(name)
        if not parts:
            raise self.refuse(f"entry '{_show(name)}' has no file name")
        return parts

    def _parent(self, parts: tuple[str, ...], name: str) -> tuple[str, bool]:
        """The folder that holds ``parts`` (made if needed) and whether it is plain."""
        dir_parts = parts[:-1]
        if dir_parts in self._plain_dirs:
            return os.path.join(self.root, *dir_parts), True
        current = self.root
        plain = True
        for i, part in enumerate(dir_parts):
            current = os.path.join(current, part)
            key = dir_parts[: i + 1]
            if plain and key in self._plain_dirs:
                continue
            try:
                # Safe: ``current``'s parent is a plain folder or was resolved inside.
                os.mkdir(current, 0o700)
            except FileExistsError:
                if plain and stat.S_ISDIR(os.lstat(current).st_mode):
                    self._plain_dirs.add(key)
                    continue
                # A link made by an earlier entry: never write through it to outside.
                real = os.path.realpath(current)
                if not self._inside(real):
                    raise self.refuse(
                        f"entry '{_show(name)}' would be written through a link "
                        "to outside its folder"
                    ) from None
                if not os.path.isdir(real):
                    raise self.refuse(
                        f"entry '{_show(name)}' needs '{_show('/'.join(key))}' to be a folder, "
                        "but an earlier entry made it a file"
                    ) from None
                plain = False
            else:
                if plain:
                    self._plain_dirs.add(key)
        return current, plain

    def _fresh(self, parent: str, parts: tuple[str, ...], name: str) -> str:
        """The path for a new non-folder entry, freed of an earlier entry of that name."""
        path = os.path.join(parent, parts[-1])
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return path
        if stat.S_ISDIR(st.st_mode):
            raise self.refuse(f"entry '{_show(name)}' clashes with a folder of the same name")
        # A later entry replaces an earlier one, as tar does; removing it first means a
        # file is never written through an earlier link of the same name.
        os.unlink(path)
        return path

    # Entries

    def add_dir(self, name: str, mode: int) -> None:
        parts = self._parts(name)
        if not parts:
            return  # the archive's own top folder ("./")
        parent, plain = self._parent(parts, name)
        path = os.path.join(parent, parts[-1])
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                raise self.refuse(
                    f"folder '{_show(name)}' clashes with an earlier entry of the same name"
                ) from None
        os.chmod(path, _PRIVATE_DIR)
        if plain:
            self._plain_dirs.add(parts)
        self.created += 1

    def add_file(self, name: str, mode: int, read: Callable[[int], bytes]) -> None:
        parts = self._named_parts(name)
        parent, _ = self._parent(parts, name)
        path = self._fresh(parent, parts, name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_BINARY
        with open(os.open(path, flags, 0o600), "wb") as out:
            while chunk := read(_CHUNK):
                self._count_bytes(len(chunk))
                out.write(chunk)
            # The owner's bits only (no setuid/setgid/sticky); the owner can always rewrite.
            os.chmod(out.fileno(), (mode & 0o700) | 0o600)
        self._files[parts] = path
        self.created += 1

    def add_symlink(self, name: str, target: str) -> None:
        parts = self._named_parts(name)
        outside = self.refuse(
            f"link '{_show(name)}' points to '{_show(target)}', outside its folder"
        )
        if not target:
            raise self.refuse(f"link '{_show(name)}' has an empty target")
        if "\0" in target:
            raise self.refuse(f"link '{_show(name)}' has a NUL character in its target")
        if _is_absolute(target) or not _stays_inside(parts[:-1], target):
            raise outside
        parent, _ = self._parent(parts, name)
        # Lexically inside is not enough: ``d/..`` leaves the folder if ``d`` -> ``.``.
        if not self._inside(os.path.realpath(os.path.join(parent, target))):
            raise outside
        path = self._fresh(parent, parts, name)
        os.symlink(target, path)
        self._links.append((name, target, path))
        self.created += 1

    def add_hardlink(self, name: str, target: str) -> None:
        parts = self._named_parts(name)
        not_a_file = self.refuse(
            f"hard link '{_show(name)}' points to '{_show(target)}', "
            "which is not a file unpacked before it"
        )
        if "\0" in target or _is_absolute(target) or ".." in _SEPARATORS.split(target):
            raise self.refuse(
                f"hard link '{_show(name)}' points to '{_show(target)}', outside its folder"
            )
        target_parts = tuple(p for p in target.split("/") if p not in ("", "."))
        source = self._files.get(target_parts)
        if source is None or target_parts == parts:
            raise not_a_file
        source = os.path.realpath(source)
        if not self._inside(source) or not stat.S_ISREG(os.lstat(source).st_mode):
            raise not_a_file
        parent, _ = self._parent(parts, name)
        path = self._fresh(parent, parts, name)
        try:
            os.link(source, path, follow_symlinks=False)
        except (OSError, NotImplementedError):
            # A file system without hard links: a copy, which counts as written bytes.
            with open(source, "rb") as src:
                self.add_file(name, os.stat(source).st_mode, src.read)
            return
        self._files[parts] = path
        self.created += 1

    def refuse_special(self, name: str, what: str) -> None:
        raise self.refuse(
            f"entry '{_show(name)}' is {what}; only files, folders and links can be unpacked"
        )

    def finish(self) -> UnpackResult:
        # A link checked when made can lead outside once later links exist
        # (``l -> d/..`` made before ``d -> .``): check them all again.
        for name, target, path in self._links:
            if not self._inside(os.path.realpath(path)):
                raise self.refuse(
                    f"link '{_show(name)}' points to '{_show(target)}', "
                    "which leads outside its folder through other links"
                )
        return UnpackResult(entries=self.created, total_bytes=self.total_bytes)


def _unpack_zip(path: Path, unpacker: _Unpacker) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, ValueError):
        raise unpacker.refuse("it is not a valid zip archive") from None
    with archive:
        try:
            infos = archive.infolist()
            unpacker.check_declared(len(infos), sum(info.file_size for info in infos))
            for info in infos:
                _unpack_zip_entry(archive, info, unpacker)
        except (
            zipfile.BadZipFile,
            EOFError,
            zlib.error,
            NotImplementedError,  # compression method zipfile does not support
            ValueError,
        ) as exc:
            raise unpacker.refuse(f"it is not a valid zip archive ({_show(str(exc))})") from None


def _unpack_zip_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, unpacker: _Unpacker) -> None:
    unpacker.count_member()
    name = info.filename
    if info.flag_bits & 0x1:
        raise unpacker.refuse(f"entry '{_show(name)}' is encrypted")
    # Unix tools store the file's st_mode in the high 16 bits; others leave them zero.
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    permissions = stat.S_IMODE(mode)
    if info.is_dir() or kind == stat.S_IFDIR:
        unpacker.add_dir(name, permissions or 0o755)
    elif kind == stat.S_IFLNK:
        with archive.open(info) as link:
            data = link.read(_MAX_LINK_TARGET + 1)
        if len(data) > _MAX_LINK_TARGET:
            raise unpacker.refuse(f"link '{_show(name)}' has a target longer than 4096 bytes")
        try:
            target = data.decode("utf-8")
        except UnicodeDecodeError:
            raise unpacker.refuse(f"link '{_show(name)}' has a target that is not UTF-8") from None
        unpacker.add_symlink(name, target)
    elif kind in (0, stat.S_IFREG):
        with archive.open(info) as data_file:
            unpacker.add_file(name, permissions or 0o644, data_file.read)
    else:
        unpacker.refuse_special(name, _special_kind(kind))


def _unpack_tar(path: Path, unpacker: _Unpacker, *, compressed: bool) -> None:
    suffix = ".tar.gz" if compressed else ".tar"
    with open(path, "rb") as raw:
        is_gzip = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        if compressed and not is_gzip:
            raise unpacker.refuse(
                f"it is not a valid tar archive (a {suffix} file must be gzip-compressed)"
            )
        if not compressed and is_gzip:
            raise unpacker.refuse(
                "it is not a valid tar archive (it is gzip-compressed: name it .tar.gz)"
            )
        stream: _Stream = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        reader = _TarReader(stream)
        try:
            archive = tarfile.TarFile(fileobj=reader, mode="r")
            for member in archive:
                _unpack_tar_member(archive, member, unpacker)
            # tarfile takes a truncated or garbled header for the end of the archive.
            if reader.last_offset != archive.offset or reader.last_data != _ZERO_BLOCK:
                raise unpacker.refuse(
                    f"it is not a valid tar archive (it is truncated or damaged after "
                    f"{unpacker.members} entries)"
                )
            if compressed:
                # Reading to the end makes gzip verify its checksum and length.
                tail = 0
                while chunk := stream.read(_CHUNK):
                    tail += len(chunk)
                    if tail > _MAX_TAIL:
                        raise unpacker.refuse(
                            "it is not a valid tar archive (unexpected data after its end)"
                        )
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, ValueError) as exc:
            raise unpacker.refuse(f"it is not a valid tar archive ({_show(str(exc))})") from None


def _unpack_tar_member(
    archive: tarfile.TarFile, member: tarfile.TarInfo, unpacker: _Unpacker
) -> None:
    unpacker.count_member()
    name = member.name
    if member.isreg():
        data_file = archive.extractfile(member)
        if data_file is None:  # pragma: no cover - tarfile returns one for regular files
            raise unpacker.refuse(f"entry '{_show(name)}' cannot be read")
        with data_file:
            unpacker.add_file(name, member.mode, data_file.read)
    elif member.isdir():
        unpacker.add_dir(name, member.mode)
    elif member.issym():
        unpacker.add_symlink(name, member.linkname)
    elif member.islnk():
        unpacker.add_hardlink(name, member.linkname)
    elif member.ischr():
        unpacker.refuse_special(name, "a character device")
    elif member.isblk():
        unpacker.refuse_special(name, "a block device")
    elif member.isfifo():
        unpacker.refuse_special(name, "a FIFO (named pipe)")
    else:
        unpacker.refuse_special(name, f"of an unsupported type ({_show(repr(member.type))})")


class _Stream(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...
    def seek(self, position: int, whence: int = os.SEEK_SET, /) -> int: ...
    def close(self) -> None: ...


class _TarReader:
    """The tar stream as tarfile reads it, remembering the last read.

    tarfile reads each header as one 512-byte read at ``TarFile.offset``; after the
    members, that last read must be the zero block that ends an archive.
    """

    def __init__(self, stream: _Stream) -> None:
        self._stream = stream
        self._position = 0
        self.last_offset = -1
        self.last_data = b""

    def read(self, size: int = -1, /) -> bytes:
        data = self._stream.read(size)
        self.last_offset = self._position
        self.last_data = data
        self._position += len(data)
        return data

    def seek(self, position: int, whence: int = os.SEEK_SET, /) -> int:
        # tarfile only seeks forward; a gzip stream skips by decompressing, as it must.
        self._position = self._stream.seek(position, whence)
        return self._position

    def tell(self) -> int:
        return self._position

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def write(self, data: bytes, /) -> int:  # pragma: no cover - only read
        raise OSError("read-only")

    def close(self) -> None:
        self._stream.close()


def archive_suffix(path: Path) -> str:
    """The archive suffix of ``path`` (one of ARCHIVE_SUFFIXES); ArtifactError if none."""
    lower = path.name.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if lower.endswith(suffix):
            return suffix
    raise ArtifactError(
        f"Unsupported archive '{_show(path.name)}': the supported types are "
        f"{', '.join(ARCHIVE_SUFFIXES)}."
    )


def _is_absolute(name: str) -> bool:
    return name.startswith(("/", "\\")) or bool(_DRIVE.match(name))


def _stays_inside(link_dir: tuple[str, ...], target: str) -> bool:
    """Whether ``target``, relative to the folder ``link_dir``, stays under the root."""
    depth = len(link_dir)
    for part in _SEPARATORS.split(target):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True


def _special_kind(file_type: int) -> str:
    kinds = {
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
        stat.S_IFIFO: "a FIFO (named pipe)",
        stat.S_IFSOCK: "a socket",
    }
    return kinds.get(file_type, f"of an unsupported type ({file_type:#o})")


def _show(text: str) -> str:
    """``text`` for a one-line message: control characters escaped, long text cut."""
    if len(text) > 200:
        text = text[:200] + "..."
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _os_reason(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    return _show(f"{reason}: {exc.filename}" if exc.filename else reason)
