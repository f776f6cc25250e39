"""Bad input to add_file, add_archive and add_pyfile through a real kernel: each is one
clear line, and nothing is registered with Spark or written to the session directory.
(The archive checks themselves are unit-tested in test_archives.py.)"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from test_artifacts_kernel import REGISTRY, write_inputs

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]


@pytest.fixture(scope="module")
def session_a(
    kernel: Kernel, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Kernel, dict[str, str]]:
    paths = write_inputs(tmp_path_factory.mktemp("inputs"))
    kernel.ok("%spark_session create a")
    kernel.ok(f"%spark_session add_file a {paths['a']}/lookup.csv")
    return kernel, paths


def state_of(kernel: Kernel, session: str) -> dict[str, Any]:
    """Registered names and the files in the session directory (temp files included)."""
    return dict(
        kernel.value(
            f"{{'names': [x.name for x in {REGISTRY}.files({session!r})], "
            f"'dir': sorted(__import__('os').listdir({REGISTRY}.get({session!r}).directory))}}"
        )
    )


def bad_archives(root: Path) -> dict[str, Path]:
    """One crafted archive per attack."""
    made: dict[str, Path] = {}

    def tar(name: str, *members: tuple[tarfile.TarInfo, bytes]) -> None:
        path = root / name
        with tarfile.open(path, "w:gz") as archive:
            for info, data in members:
                archive.addfile(info, io.BytesIO(data) if data else None)
        made[name] = path

    def member(name: str, data: bytes = b"x", **attrs: Any) -> tuple[tarfile.TarInfo, bytes]:
        info = tarfile.TarInfo(name)
        info.size = len(data) if not attrs else 0
        for key, value in attrs.items():
            setattr(info, key, value)
        return info, (data if not attrs else b"")

    tar("slip.tar.gz", member("../escaped.txt"))
    tar("absolute.tgz", member("/tmp/jss-absolute.txt"))
    tar("symlink_out.tar.gz", member("evil", type=tarfile.SYMTYPE, linkname="/etc"))
    tar("hardlink_out.tar.gz", member("evil", type=tarfile.LNKTYPE, linkname="/etc/passwd"))
    tar("device.tar.gz", member("dev", type=tarfile.CHRTYPE, devmajor=1, devminor=3))
    (root / "not_a_zip.zip").write_text("plain text, not a zip")
    made["not_a_zip.zip"] = root / "not_a_zip.zip"
    (root / "archive.rar").write_bytes(b"Rar!")
    made["archive.rar"] = root / "archive.rar"
    with zipfile.ZipFile(root / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zeros.bin", b"\0" * (50 * 1024 * 1024))
    made["bomb.zip"] = root / "bomb.zip"
    return made


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("slip.tar.gz", "outside"),
        ("absolute.tgz", "absolute"),
        ("symlink_out.tar.gz", "link"),
        ("hardlink_out.tar.gz", "link"),
        ("device.tar.gz", "device"),
        ("not_a_zip.zip", "not a valid zip"),
        ("archive.rar", ".tar.gz"),
        ("bomb.zip", "zip bomb"),
    ],
)
def test_bad_archives_are_refused_and_nothing_is_registered_or_written(
    session_a: tuple[Kernel, dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
    case: str,
    message: str,
) -> None:
    kernel, _ = session_a
    crafted = bad_archives(tmp_path_factory.mktemp("bad"))[case]
    before = state_of(kernel, "a")
    result = kernel.execute(f"%spark_session add_archive a {crafted}")
    assert message.lower() in result.usage_error.lower(), result.stderr
    assert "\n" not in result.usage_error and "Traceback" not in result.stderr
    assert state_of(kernel, "a") == before
    assert not Path("/tmp/jss-absolute.txt").exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("add_file a /no/such/file.csv", "No such file: /no/such/file.csv"),
        ("add_file a {inputs}", "is a directory"),
        ("add_file a {inputs}/lookup.csv --as sub/x.csv", "Invalid name 'sub/x.csv'"),
        ("add_file a {inputs}/lookup.csv --as ..", "Invalid name '..'"),
        ("add_archive a {inputs}/refdata.tar.gz --as ../up", "Invalid alias '../up'"),
        ("add_pyfile a {inputs}/lookup.csv", "use a .py, .zip or .egg"),
        ("add_file nope {inputs}/lookup.csv", "No session named 'nope'"),
        ("files nope", "No session named 'nope'"),
    ],
)
def test_bad_file_input_is_one_line_and_changes_nothing(
    session_a: tuple[Kernel, dict[str, str]], line: str, message: str
) -> None:
    kernel, paths = session_a
    before = state_of(kernel, "a")
    result = kernel.execute("%spark_session " + line.format(inputs=paths["b"]))
    assert message in result.usage_error, result.stderr
    assert state_of(kernel, "a") == before


def test_an_adopted_session_that_is_not_isolated_refuses_files(
    session_a: tuple[Kernel, dict[str, str]],
) -> None:
    kernel, paths = session_a
    kernel.ok(
        "from pyspark.sql import SparkSession\n"
        "used = SparkSession.builder.getOrCreate().newSession()\n"
        "used.range(1).count()\n"
    )
    kernel.ok("%spark_session adopt used_one used")
    result = kernel.execute(f"%spark_session add_file used_one {paths['a']}/lookup.csv")
    assert "is not isolated" in result.usage_error
    assert json.dumps(kernel.value(f"len({REGISTRY}.files('used_one'))")) == "0"
