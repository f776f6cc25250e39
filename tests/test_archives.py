"""Unpacking user archives: happy paths, and every unsafe or broken archive refused with
nothing left behind (pure Python, crafted archives, no Spark)."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import stat
import struct
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_spark_sessions.errors import ArtifactError
from jupyter_spark_sessions.files.archives import (
    ARCHIVE_SUFFIXES,
    ArchiveLimits,
    UnpackResult,
    archive_kind,
    default_alias,
    unpack_archive,
)

SUPPORTED = ".tar.gz, .tgz, .tar, .zip, .jar"

TarMember = tuple[tarfile.TarInfo, bytes | None]
ZipEntry = tuple[zipfile.ZipInfo, bytes]


# Crafting archives


def tfile(name: str, data: bytes = b"", mode: int = 0o644) -> TarMember:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    return info, data


def tdir(name: str, mode: int = 0o755) -> TarMember:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    return info, None


def tlink(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> TarMember:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def tspecial(name: str, kind: bytes) -> TarMember:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.devmajor, info.devminor = 1, 3
    return info, None


def make_tar(path: Path, members: list[TarMember], fmt: int = tarfile.PAX_FORMAT) -> Path:
    mode = "w:gz" if path.name.endswith(("gz", "GZ")) else "w"
    with tarfile.open(path, mode, format=fmt) as archive:  # type: ignore[call-overload]
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def zentry(name: str, data: bytes = b"", mode: int | None = None) -> ZipEntry:
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    if mode is not None:
        info.external_attr = mode << 16
    return info, data


def make_zip(path: Path, entries: list[ZipEntry]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return path


def patch_central_directory(path: Path, offset: int, fmt: str, value: int) -> None:
    """Overwrite a field of the first central directory record (a lying zip)."""
    data = bytearray(path.read_bytes())
    record = data.index(b"PK\x01\x02")
    struct.pack_into(fmt, data, record + offset, value)
    path.write_bytes(bytes(data))


# Checking results


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The folder holding the archive and its destination, and nothing else."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A folder outside the destination that hostile archives aim at."""
    folder = tmp_path / "victim"
    folder.mkdir()
    return folder


def unpack(archive: Path, limits: ArchiveLimits | None = None) -> tuple[Path, UnpackResult]:
    dest = archive.parent / "out"
    result = unpack_archive(archive, dest, limits or ArchiveLimits())
    assert sorted(archive.parent.iterdir()) == sorted([archive, dest])
    return dest, result


def refused(archive: Path, expected: str, limits: ArchiveLimits | None = None) -> str:
    """Asserts the archive is refused with ``expected`` in a one-line message, and that
    nothing is left: no destination, no temporary folder."""
    dest = archive.parent / "out"
    with pytest.raises(ArtifactError) as info:
        unpack_archive(archive, dest, limits or ArchiveLimits())
    message = str(info.value)
    assert expected in message
    assert "\n" not in message and "\r" not in message
    assert not os.path.lexists(dest)
    assert list(archive.parent.iterdir()) == [archive]
    return message


def tree(root: Path) -> dict[str, str]:
    """Each path under root: file content, '<dir>', or '-> target' for a link."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        key = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[key] = "-> " + os.readlink(path)
        elif path.is_dir():
            found[key] = "<dir>"
        else:
            found[key] = path.read_text(encoding="utf-8")
    return found


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# archive_kind and default_alias


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.zip", "zip"),
        ("a.jar", "zip"),
        ("A.ZIP", "zip"),
        ("lib.Jar", "zip"),
        ("a.tar", "tar"),
        ("a.tar.gz", "tar"),
        ("a.tgz", "tar"),
        ("A.TAR.GZ", "tar"),
        ("x.y.TGZ", "tar"),
    ],
)
def test_archive_kind_by_suffix(name: str, kind: str) -> None:
    assert archive_kind(Path(name)) == kind


@pytest.mark.parametrize("name", ["a.rar", "a.7z", "a.gz", "a.tar.bz2", "a.tar.xz", "zip", "a"])
def test_archive_kind_refuses_other_suffixes(name: str) -> None:
    with pytest.raises(ArtifactError) as info:
        archive_kind(Path(name))
    message = str(info.value)
    assert f"Unsupported archive '{name}'" in message
    assert SUPPORTED in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("name", "alias"),
    [
        ("lookup.tar.gz", "lookup"),
        ("model.zip", "model"),
        ("My Data.tgz", "My Data"),
        ("lib.JAR", "lib"),
        ("v1.2.tar", "v1.2"),
        ("données été.TAR.GZ", "données été"),
        ("/some/dir/deep.tgz", "deep"),
    ],
)
def test_default_alias(name: str, alias: str) -> None:
    assert default_alias(Path(name)) == alias


def test_default_alias_refuses_bad_names() -> None:
    with pytest.raises(ArtifactError, match="supported types"):
        default_alias(Path("data.gz"))
    with pytest.raises(ArtifactError, match="no name before its suffix"):
        default_alias(Path(".tar.gz"))


def test_suffixes_constant() -> None:
    assert ARCHIVE_SUFFIXES == (".tar.gz", ".tgz", ".tar", ".zip", ".jar")


# Happy paths


@pytest.mark.parametrize("name", ["data.zip", "lib.jar", "UPPER.ZIP"])
def test_zip_unpacks_nested_folders(work: Path, name: str) -> None:
    archive = make_zip(
        work / name,
        [
            zentry("top.txt", b"top"),
            zentry("a/", mode=stat.S_IFDIR | 0o755),
            zentry("a/b/c.txt", b"deep"),  # its folder b/ has no entry of its own
            zentry("a/run.sh", b"#!/bin/sh", mode=stat.S_IFREG | 0o755),
            zentry("empty/"),
        ],
    )
    dest, result = unpack(archive)
    assert tree(dest) == {
        "a": "<dir>",
        "a/b": "<dir>",
        "a/b/c.txt": "deep",
        "a/run.sh": "#!/bin/sh",
        "empty": "<dir>",
        "top.txt": "top",
    }
    assert result == UnpackResult(entries=5, total_bytes=3 + 4 + 9)
    assert mode_of(dest / "a/run.sh") == 0o700  # the owner's bits only
    assert mode_of(dest / "top.txt") == 0o600  # what zipfile stores when given no mode
    assert mode_of(dest) == 0o700


def test_zip_entry_without_unix_mode(work: Path) -> None:
    # Windows tools leave the high 16 bits of external_attr at zero.
    archive = make_zip(work / "win.zip", [zentry("a.txt", b"a")])
    patch_central_directory(archive, 38, "<I", 0x20)  # just the MS-DOS "archive" bit
    dest, _ = unpack(archive)
    assert mode_of(dest / "a.txt") == 0o600


@pytest.mark.parametrize("name", ["data.tar", "data.tar.gz", "data.tgz", "Data.TGZ"])
def test_tar_unpacks_nested_folders_and_links(work: Path, name: str) -> None:
    archive = make_tar(
        work / name,
        [
            tdir("."),  # what `tar -C dir -cf x.tar .` starts with
            tfile("./top.txt", b"top"),
            tdir("a"),
            tfile("a/b/c.txt", b"deep"),
            tlink("a/b/up", "../../top.txt"),
            tlink("a/here", "b"),
            tlink("a/hard.txt", "a/b/c.txt", tarfile.LNKTYPE),
            tfile("a/here/via-link.txt", b"through an inside link"),
        ],
    )
    dest, result = unpack(archive)
    assert tree(dest) == {
        "a": "<dir>",
        "a/b": "<dir>",
        "a/b/c.txt": "deep",
        "a/b/up": "-> ../../top.txt",
        "a/b/via-link.txt": "through an inside link",
        "a/hard.txt": "deep",
        "a/here": "-> b",
        "top.txt": "top",
    }
    assert (dest / "a/b/up").read_text() == "top"
    assert (dest / "a/hard.txt").stat().st_ino == (dest / "a/b/c.txt").stat().st_ino
    assert result == UnpackResult(entries=7, total_bytes=3 + 4 + 22)


def test_zip_relative_symlink_inside(work: Path) -> None:
    archive = make_zip(
        work / "links.zip",
        [
            zentry("conf/real.ini", b"x=1"),
            zentry("current.ini", b"conf/real.ini", mode=stat.S_IFLNK | 0o777),
        ],
    )
    dest, result = unpack(archive)
    assert os.readlink(dest / "current.ini") == "conf/real.ini"
    assert (dest / "current.ini").read_text() == "x=1"
    assert result == UnpackResult(entries=2, total_bytes=3)


@pytest.mark.parametrize("name", ["My Données.zip", "My Données.tar.gz"])
def test_non_ascii_and_spaces(work: Path, name: str) -> None:
    entries = {"données/été 1.csv": "a,b", "日本/ファイル 名.txt": "ok", "with space/x y.txt": "z"}
    archive = work / name
    if name.endswith(".zip"):
        make_zip(archive, [zentry(n, c.encode()) for n, c in entries.items()])
    else:
        make_tar(archive, [tfile(n, c.encode()) for n, c in entries.items()])
    dest, result = unpack(archive)
    for entry, content in entries.items():
        assert (dest / entry).read_text(encoding="utf-8") == content
    assert result.entries == 3
    assert default_alias(archive) == "My Données"


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
def test_tar_formats_and_long_names(work: Path, fmt: int) -> None:
    long = "/".join(["folder-with-a-long-name"] * 4) + "/" + "f" * 90 + ".txt"
    archive = make_tar(work / "long.tar", [tfile(long, b"long"), tfile("short", b"s")], fmt)
    dest, result = unpack(archive)
    assert (dest / long).read_text() == "long"
    assert result == UnpackResult(entries=2, total_bytes=5)


def test_file_and_folder_modes(work: Path) -> None:
    archive = make_tar(
        work / "modes.tar",
        [
            tfile("setuid", b"x", 0o4755),
            tfile("world-writable", b"x", 0o777),
            tfile("read-only", b"x", 0o400),
            tfile("group", b"x", 0o640),
            tdir("private", 0o700),
            tdir("open", 0o777),
            tdir("locked", 0o500),
        ],
    )
    dest, _ = unpack(archive)
    # Readable by the owner only (the session's files are private), who can rewrite them.
    assert mode_of(dest / "setuid") == 0o700
    assert mode_of(dest / "world-writable") == 0o700
    assert mode_of(dest / "read-only") == 0o600
    assert mode_of(dest / "group") == 0o600
    assert mode_of(dest / "private") == 0o700
    assert mode_of(dest / "open") == 0o700
    assert mode_of(dest / "locked") == 0o700


def test_later_entry_replaces_earlier_without_writing_through_links(work: Path) -> None:
    archive = make_tar(
        work / "dupes.tar",
        [
            tfile("same.txt", b"first"),
            tfile("same.txt", b"second"),
            tfile("target.txt", b"untouched"),
            tlink("x", "target.txt"),
            tfile("x", b"replaces the link"),
            tdir("d"),
            tdir("d"),
        ],
    )
    dest, result = unpack(archive)
    assert tree(dest) == {
        "d": "<dir>",
        "same.txt": "second",
        "target.txt": "untouched",
        "x": "replaces the link",
    }
    assert result.entries == 7


def test_empty_archives(work: Path) -> None:
    for archive in (make_zip(work / "e.zip", []), make_tar(work / "e.tgz", [])):
        dest = work / archive.name.replace(".", "-")
        assert unpack_archive(archive, dest, ArchiveLimits()) == UnpackResult(0, 0)
        assert list(dest.iterdir()) == []


# Unsupported or wrong content


@pytest.mark.parametrize("name", ["data.rar", "data.7z", "data.gz"])
def test_unsupported_suffix(work: Path, name: str) -> None:
    archive = work / name
    archive.write_bytes(b"whatever")
    refused(archive, SUPPORTED)


@pytest.mark.parametrize("name", ["text.zip", "text.jar"])
def test_zip_that_is_text(work: Path, name: str) -> None:
    archive = work / name
    archive.write_text("just some text, not a zip\n" * 20)
    refused(archive, "is not a valid zip archive")


def test_zip_that_is_a_tar_gz(work: Path) -> None:
    make_tar(work / "real.tar.gz", [tfile("a", b"a")]).rename(work / "fake.zip")
    refused(work / "fake.zip", "is not a valid zip archive")


def test_empty_file(work: Path) -> None:
    for name, expected in [("e.zip", "zip"), ("e.tar", "tar"), ("e.tgz", "tar")]:
        archive = work / name
        archive.touch()
        refused(archive, f"is not a valid {expected} archive")
        archive.unlink()


def test_tar_gz_that_is_a_zip(work: Path) -> None:
    make_zip(work / "real.zip", [zentry("a", b"a")]).rename(work / "fake.tar.gz")
    refused(work / "fake.tar.gz", "is not a valid tar archive (a .tar.gz file must be gzip")


def test_tar_gz_that_is_a_plain_tar(work: Path) -> None:
    make_tar(work / "plain.tar", [tfile("a", b"a")]).rename(work / "fake.tgz")
    refused(work / "fake.tgz", "is not a valid tar archive")


def test_tar_that_is_gzipped(work: Path) -> None:
    make_tar(work / "real.tar.gz", [tfile("a", b"a")]).rename(work / "fake.tar")
    refused(work / "fake.tar", "is gzip-compressed: name it .tar.gz")


def test_tar_that_is_text_or_gzipped_text(work: Path) -> None:
    (work / "text.tar").write_text("not a tar\n" * 100)
    refused(work / "text.tar", "is not a valid tar archive")
    (work / "text.tar").unlink()
    (work / "text.tgz").write_bytes(gzip.compress(b"not a tar\n" * 100))
    refused(work / "text.tgz", "is not a valid tar archive")


def big_tar_gz(path: Path) -> Path:
    # Random data does not compress: a cut anywhere lands inside real content.
    members = [tfile(f"d/f{i}.bin", os.urandom(20_000)) for i in range(10)]
    return make_tar(path, members)


@pytest.mark.parametrize("keep", [0.5, 0.9, -8, -1])
def test_truncated_tar_gz(work: Path, keep: float) -> None:
    archive = big_tar_gz(work / "cut.tar.gz")
    data = archive.read_bytes()
    archive.write_bytes(data[: int(len(data) * keep)] if keep > 0 else data[: int(keep)])
    refused(archive, "is not a valid tar archive")


def test_tar_gz_with_bad_checksum(work: Path) -> None:
    archive = make_tar(work / "crc.tar.gz", [tfile("a.txt", b"hello")])
    data = bytearray(archive.read_bytes())
    data[-8] ^= 0xFF  # the gzip CRC-32 of the uncompressed data
    archive.write_bytes(bytes(data))
    refused(archive, "is not a valid tar archive")


def test_truncated_plain_tar(work: Path) -> None:
    archive = make_tar(work / "cut.tar", [tfile("a.txt", b"a" * 600), tfile("b.txt", b"b")])
    data = archive.read_bytes()
    end_of_b = 3 * 512 + 512 + 512  # a: header + 2 blocks; b: header + 1 block
    for cut in (end_of_b, end_of_b - 100, 3 * 512 + 200, 1000):
        archive.write_bytes(data[:cut])
        refused(archive, "is not a valid tar archive")


def test_tar_with_garbage_header(work: Path) -> None:
    archive = make_tar(work / "bad.tar", [tfile("a.txt", b"a"), tfile("b.txt", b"b")])
    data = bytearray(archive.read_bytes())
    data[1024:1536] = b"\xff" * 512  # b.txt's header
    archive.write_bytes(bytes(data))
    refused(archive, "truncated or damaged after 1 entries")


def test_zip_with_bad_crc(work: Path) -> None:
    archive = work / "crc.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        z.writestr("a.txt", b"A" * 1000)
    data = bytearray(archive.read_bytes())
    data[data.index(b"A" * 1000) + 500] = ord("B")
    archive.write_bytes(bytes(data))
    refused(archive, "is not a valid zip archive (Bad CRC-32")


def test_truncated_zip(work: Path) -> None:
    archive = make_zip(work / "cut.zip", [zentry("a.bin", os.urandom(5000))])
    archive.write_bytes(archive.read_bytes()[:3000])
    refused(archive, "is not a valid zip archive")


def test_zip_lying_about_its_size(work: Path) -> None:
    archive = work / "liar.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        z.writestr("big.bin", b"x" * 100_000)
    patch_central_directory(archive, 24, "<I", 10)  # declares 10 bytes
    refused(archive, "is not a valid zip archive")


def test_encrypted_zip(work: Path) -> None:
    archive = make_zip(work / "secret.zip", [zentry("a.txt", b"secret")])
    patch_central_directory(archive, 8, "<H", 0x1)  # the "encrypted" flag
    refused(archive, "entry 'a.txt' is encrypted")


def test_missing_archive(work: Path) -> None:
    with pytest.raises(ArtifactError, match=r"Cannot unpack archive 'missing\.zip'"):
        unpack_archive(work / "missing.zip", work / "out", ArchiveLimits())
    assert list(work.iterdir()) == []


# Names that would land outside the folder


BAD_NAMES = ["../x", "a/../../x", "a/../b", "/abs", "/etc/passwd", "C:\\x", "c:x", "\\x"]
BAD_NAMES += ["a\\..\\..\\x", ".."]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_zip_names_outside(work: Path, name: str) -> None:
    archive = make_zip(work / "bad.zip", [zentry("ok.txt", b"fine"), zentry(name, b"evil")])
    message = refused(archive, "would land outside its folder")
    assert message.startswith("Refused archive 'bad.zip': entry '")
    assert ("(an absolute path)" in message) == (name[0] in "/\\" or name[1] == ":")


@pytest.mark.parametrize("name", BAD_NAMES)
def test_tar_names_outside(work: Path, name: str) -> None:
    archive = make_tar(work / "bad.tar.gz", [tfile("ok.txt", b"fine"), tfile(name, b"evil")])
    refused(archive, "would land outside its folder")


def test_tar_folder_and_link_names_outside(work: Path) -> None:
    for member in (tdir("../d"), tlink("/abs-link", "x"), tlink("../hard", "ok", tarfile.LNKTYPE)):
        archive = make_tar(work / "bad.tar", [tfile("ok", b"x"), member])
        refused(archive, "would land outside its folder")
        archive.unlink()


def test_tar_nul_in_name(work: Path) -> None:
    info, data = tfile("ignored", b"x")
    info.pax_headers = {"path": "a\x00b.txt"}  # pax names may hold any character
    archive = make_tar(work / "nul.tar", [(info, data)])
    message = refused(archive, "has a NUL character in its name")
    assert "a\\x00b.txt" in message


def test_control_characters_in_a_name_stay_on_one_line(work: Path) -> None:
    archive = make_tar(work / "nl.tar", [tfile("a\nb/../../x", b"x")])
    message = refused(archive, "entry 'a\\nb/../../x' would land outside")
    assert message.count("\n") == 0


# Links


def test_tar_symlink_to_etc(work: Path) -> None:
    archive = make_tar(work / "etc.tar", [tlink("d", "/etc")])
    refused(archive, "link 'd' points to '/etc', outside its folder")


def test_tar_symlink_then_write_through_it(work: Path, victim: Path) -> None:
    for target in ("/etc", str(victim)):
        archive = make_tar(work / "through.tar", [tlink("d", target), tfile("d/passwd", b"evil")])
        refused(archive, "outside its folder")
        archive.unlink()
    assert list(victim.iterdir()) == []


@pytest.mark.parametrize(
    "target", ["../..", "../../victim", "../a/../..", "b/../../..", "..\\..", "C:\\x", "\\x"]
)
def test_tar_symlink_outside(work: Path, target: str) -> None:
    archive = make_tar(work / "up.tgz", [tdir("a"), tlink("a/up", target)])
    refused(archive, f"link 'a/up' points to '{target}', outside its folder")


@pytest.mark.parametrize("target", ["..", "../a", ".", "./b/../.."])
def test_tar_symlink_up_but_still_inside(work: Path, target: str) -> None:
    archive = make_tar(work / "up.tgz", [tdir("a"), tlink("a/up", target)])
    dest, _ = unpack(archive)
    assert os.readlink(dest / "a/up") == target


def test_symlink_to_dot_then_dotdot_through_it(work: Path, victim: Path) -> None:
    archive = make_tar(work / "dot.tar", [tlink("a", "."), tfile("a/../../victim/x", b"evil")])
    refused(archive, "entry 'a/../../victim/x' would land outside its folder")
    assert list(victim.iterdir()) == []


def test_symlink_chain_leaving_the_folder(work: Path) -> None:
    # d -> . is inside; d/.. is then the folder's parent.
    archive = make_tar(work / "chain.tar", [tlink("d", "."), tlink("l", "d/..")])
    refused(archive, "link 'l' points to 'd/..', outside its folder")


def test_symlink_chain_made_in_reverse_order(work: Path) -> None:
    # l -> d/.. is inside when made (no d yet); d -> . then turns it outward.
    archive = make_tar(work / "chain.tar", [tlink("l", "d/.."), tlink("d", ".")])
    refused(archive, "link 'l' points to 'd/..', which leads outside its folder")


def test_write_through_a_link_that_turned_outward(work: Path, tmp_path: Path) -> None:
    archive = make_tar(
        work / "chain.tar",
        [tlink("l", "d/.."), tlink("d", "."), tfile("l/escaped.txt", b"evil")],
    )
    refused(archive, "entry 'l/escaped.txt' would be written through a link to outside")
    assert not (tmp_path / "escaped.txt").exists()
    assert not (work / "escaped.txt").exists()


def test_zip_symlink_outside(work: Path, victim: Path) -> None:
    for target in ("/etc", str(victim), "../x", "a/../.."):
        archive = make_zip(
            work / "links.zip",
            [
                zentry("l", target.encode(), mode=stat.S_IFLNK | 0o777),
                zentry("l/x", b"evil"),
            ],
        )
        refused(archive, f"link 'l' points to '{target}', outside its folder")
        archive.unlink()
    assert list(victim.iterdir()) == []


def test_zip_symlink_target_too_long(work: Path) -> None:
    archive = make_zip(work / "long.zip", [zentry("l", b"a" * 5000, mode=stat.S_IFLNK | 0o777)])
    refused(archive, "link 'l' has a target longer than 4096 bytes")


def test_tar_empty_symlink_target(work: Path) -> None:
    refused(make_tar(work / "e.tar", [tlink("l", "")]), "link 'l' has an empty target")


@pytest.mark.parametrize("target", ["../outside", "/etc/passwd", "/abs"])
def test_hardlink_outside(work: Path, target: str) -> None:
    archive = make_tar(work / "hard.tar", [tlink("h", target, tarfile.LNKTYPE)])
    refused(archive, f"hard link 'h' points to '{target}', outside its folder")


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ([tlink("h", "later.txt", tarfile.LNKTYPE), tfile("later.txt")], "later.txt"),
        ([tdir("d"), tlink("h", "d", tarfile.LNKTYPE)], "'d'"),
        ([tfile("f"), tlink("s", "f"), tlink("h", "s", tarfile.LNKTYPE)], "'s'"),
        ([tlink("h", "h", tarfile.LNKTYPE)], "'h'"),
    ],
    ids=["not-yet", "folder", "symlink", "itself"],
)
def test_hardlink_to_something_not_unpacked_as_a_file(
    work: Path, members: list[TarMember], expected: str
) -> None:
    archive = make_tar(work / "hard.tar", members)
    message = refused(archive, "which is not a file unpacked before it")
    assert expected in message


# Special files


@pytest.mark.parametrize(
    ("kind", "what"),
    [
        (tarfile.CHRTYPE, "a character device"),
        (tarfile.BLKTYPE, "a block device"),
        (tarfile.FIFOTYPE, "a FIFO (named pipe)"),
        (b"Z", "of an unsupported type (b'Z')"),
    ],
    ids=["char", "block", "fifo", "unknown"],
)
def test_tar_special_files(work: Path, kind: bytes, what: str) -> None:
    archive = make_tar(work / "dev.tar", [tfile("ok", b"x"), tspecial("dev/thing", kind)])
    refused(archive, f"entry 'dev/thing' is {what}; only files, folders and links")


@pytest.mark.parametrize(
    ("file_type", "what"),
    [
        (stat.S_IFCHR, "a character device"),
        (stat.S_IFBLK, "a block device"),
        (stat.S_IFIFO, "a FIFO (named pipe)"),
        (stat.S_IFSOCK, "a socket"),
    ],
)
def test_zip_special_files(work: Path, file_type: int, what: str) -> None:
    archive = make_zip(work / "dev.zip", [zentry("dev/thing", b"", mode=file_type | 0o644)])
    refused(archive, f"entry 'dev/thing' is {what}")


# Clashes between entries


def test_file_where_a_folder_is(work: Path) -> None:
    archive = make_tar(work / "clash.tar", [tdir("a"), tfile("a", b"x")])
    refused(archive, "entry 'a' clashes with a folder of the same name")


def test_entry_under_a_file(work: Path) -> None:
    archive = make_zip(work / "clash.zip", [zentry("a", b"x"), zentry("a/b", b"y")])
    refused(archive, "entry 'a/b' needs 'a' to be a folder, but an earlier entry made it a file")


def test_folder_where_a_link_is(work: Path) -> None:
    archive = make_tar(work / "clash.tar", [tdir("real"), tlink("l", "real"), tdir("l")])
    refused(archive, "folder 'l' clashes with an earlier entry of the same name")


# Limits


def test_too_many_entries_tar(work: Path) -> None:
    archive = make_tar(work / "many.tgz", [tfile(f"f{i}", b"x") for i in range(11)])
    refused(archive, "it has more than 10 entries (the limit)", ArchiveLimits(max_entries=10))
    make_tar(work / "ok.tgz", [tfile(f"f{i}", b"x") for i in range(10)]).rename(archive)
    _, result = unpack(archive, ArchiveLimits(max_entries=10))
    assert result.entries == 10


def test_too_many_entries_zip(work: Path) -> None:
    archive = make_zip(work / "many.zip", [zentry(f"f{i}", b"x") for i in range(11)])
    refused(archive, "it has 11 entries, more than the limit of 10", ArchiveLimits(max_entries=10))


def measure_before_cleanup(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records how many bytes the temporary folder held when it was removed."""
    sizes: list[int] = []
    real_rmtree: Callable[..., None] = shutil.rmtree

    def rmtree(path: str, *args: object, **kwargs: object) -> None:
        sizes.append(sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()))
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    return sizes


def test_total_bytes_counted_on_real_data(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # tar declares nothing up front: the limit holds on the bytes as they are copied.
    archive = make_tar(work / "big.tar", [tfile(f"f{i}", os.urandom(4000)) for i in range(5)])
    sizes = measure_before_cleanup(monkeypatch)
    limits = ArchiveLimits(max_total_bytes=10_000)
    refused(archive, "it unpacks to more than 9.8 KiB of data (the limit)", limits)
    assert sizes and sizes[0] <= 10_000


def test_total_bytes_declared_by_zip(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = make_zip(work / "big.zip", [zentry(f"f{i}", os.urandom(4000)) for i in range(5)])
    sizes = measure_before_cleanup(monkeypatch)
    limits = ArchiveLimits(max_total_bytes=10_000)
    refused(archive, "it declares more than 9.8 KiB of data (the limit)", limits)
    assert sizes == [0]  # refused before writing anything


def test_total_bytes_at_the_limit_is_accepted(work: Path) -> None:
    archive = make_zip(work / "exact.zip", [zentry("a", b"x" * 600), zentry("b", b"y" * 400)])
    _, result = unpack(archive, ArchiveLimits(max_total_bytes=1000))
    assert result.total_bytes == 1000


def test_zip_bomb_refused_by_ratio(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = work / "bomb.zip"
    with (
        zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z,
        z.open("zeros.bin", "w") as out,
    ):
        for _ in range(50):
            out.write(bytes(1024 * 1024))
    sizes = measure_before_cleanup(monkeypatch)
    message = refused(archive, "more than 100 times its own size", ArchiveLimits(max_ratio=100))
    assert "a likely zip bomb" in message
    assert sizes == [0]


def test_tar_gz_bomb_stopped_while_writing(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = work / "bomb.tar.gz"
    info = tarfile.TarInfo("zeros.bin")
    info.size = 20 * 1024 * 1024
    with tarfile.open(archive, "w:gz", compresslevel=9) as t:
        t.addfile(info, io.BytesIO(bytes(info.size)))
    limit = 100 * archive.stat().st_size
    sizes = measure_before_cleanup(monkeypatch)
    refused(archive, "it unpacks to more than 100 times its own size", ArchiveLimits(max_ratio=100))
    assert sizes and sizes[0] <= limit


def test_many_small_entries_within_limits(work: Path) -> None:
    members = [tfile(f"d{i % 10}/f{i}.txt", b"%d" % i) for i in range(2000)]
    archive = make_tar(work / "many.tgz", members)
    dest, result = unpack(archive)
    assert result.entries == 2000
    assert (dest / "d7/f1237.txt").read_text() == "1237"


# Destination


def test_destination_exists(work: Path) -> None:
    archive = make_zip(work / "a.zip", [zentry("new.txt", b"new")])
    dest = work / "out"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    with pytest.raises(ArtifactError) as info:
        unpack_archive(archive, dest, ArchiveLimits())
    assert "Cannot unpack archive 'a.zip'" in str(info.value)
    assert "already exists" in str(info.value)
    assert tree(dest) == {"keep.txt": "mine"}
    assert sorted(work.iterdir()) == [archive, dest]


def test_destination_is_a_dangling_link(work: Path) -> None:
    archive = make_zip(work / "a.zip", [zentry("new.txt", b"new")])
    (work / "out").symlink_to(work / "nowhere")
    with pytest.raises(ArtifactError, match="already exists"):
        unpack_archive(archive, work / "out", ArchiveLimits())
    assert not (work / "nowhere").exists()


def test_destination_parent_missing(work: Path) -> None:
    archive = make_zip(work / "a.zip", [zentry("new.txt", b"new")])
    with pytest.raises(ArtifactError, match="does not exist"):
        unpack_archive(archive, work / "no" / "out", ArchiveLimits())
    assert list(work.iterdir()) == [archive]
