"""Adding files and archives to a session, against plain copies/extraction in the same run.

- add_file of a 200 MB file: wall time vs ``shutil.copyfile`` of the same file
  (target: median ratio <= 1.5), and the peak memory growth of this process, which
  plays the kernel (target: < 64 MB);
- a 10,000-entry archive (tar.gz and zip): ``unpack_archive`` (validation + unpack) vs
  the standard library's ``extractall`` into a fresh folder (target: ratio <= 2).

Run: ``python benchmarks/artifacts.py`` (``make bench`` runs every benchmark).
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROUNDS = 6
FILE_MB = 200
ENTRIES = 10_000
RESULTS = Path(__file__).parent / "results" / "artifacts.json"


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _timed(action: Callable[..., Any], *args: Any) -> float:
    # Start each measurement with no dirty pages left by the previous one (deleting
    # 10,000 files or writing 200 MB otherwise bills its writeback to the next step).
    os.sync()
    start = time.perf_counter()
    action(*args)
    return time.perf_counter() - start


def _extract_zip(path: Path, dest: Path) -> None:
    with zipfile.ZipFile(path) as archive:
        archive.extractall(dest)


def _extract_tar(path: Path, dest: Path) -> None:
    with tarfile.open(path) as archive:
        archive.extractall(dest, filter="data")


def _make_big_file(path: Path) -> None:
    chunk = os.urandom(1 << 20)
    with open(path, "wb") as out:
        for _ in range(FILE_MB):
            out.write(chunk)


def _make_archives(root: Path) -> dict[str, Path]:
    tar_path, zip_path = root / "many.tar.gz", root / "many.zip"
    with tarfile.open(tar_path, "w:gz") as tar, zipfile.ZipFile(zip_path, "w") as zf:
        for i in range(ENTRIES):
            name = f"d{i % 100:02d}/entry-{i:05d}.txt"
            data = f"row {i}\n".encode() * 20
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            zf.writestr(name, data)
    return {"tar.gz": tar_path, "zip": zip_path}


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from jupyter_spark_sessions import SparkSessionsApp, SparkSessionsConfig
    from jupyter_spark_sessions.files.archives import ArchiveLimits, unpack_archive

    work = Path(tempfile.mkdtemp(prefix="jss-bench-"))
    config = SparkSessionsConfig(
        default_master="local[2]",
        context_conf={"spark.ui.enabled": "false"},
        session_root=str(work / "sessions"),
    )
    registry = SparkSessionsApp(config).registry
    registry.create("bench")
    big = work / "big.bin"
    _make_big_file(big)
    small = work / "warm.txt"
    small.write_text("warm up the artifact manager")
    registry.add_file("bench", small)

    from jupyter_spark_sessions.backends import classic

    session = registry.session("bench")
    peak_before = _peak_rss_mb()
    add_s, copy_s, spark_s = [], [], []
    for i in range(ROUNDS):
        target = work / f"copy-{i}.bin"
        if i % 2:
            copy_s.append(_timed(shutil.copyfile, big, target))
        add_s.append(_timed(registry.add_file, "bench", big, f"big-{i}.bin"))
        if not i % 2:
            copy_s.append(_timed(shutil.copyfile, big, target))
        # Spark's own share: registering an already staged copy (it copies the file
        # once more into the driver's SparkFiles folder, for tasks run on the driver).
        spark_s.append(
            _timed(classic.add_session_artifact, session, f"files/raw-{i}.bin", str(target))
        )
    peak_growth = _peak_rss_mb() - peak_before

    archives = _make_archives(work)
    limits = ArchiveLimits()
    unpack: dict[str, list[float]] = {"tar.gz": [], "zip": []}
    extract: dict[str, list[float]] = {"tar.gz": [], "zip": []}
    for i in range(ROUNDS):
        for kind, path in archives.items():
            dest = work / f"ours-{kind}-{i}"
            plain = work / f"plain-{kind}-{i}"
            extract_plain = _extract_zip if kind == "zip" else _extract_tar
            steps = [
                (unpack[kind], unpack_archive, (path, dest, limits)),
                (extract[kind], extract_plain, (path, plain)),
            ]
            for times, action, args in steps if i % 2 == 0 else reversed(steps):
                times.append(_timed(action, *args))
            shutil.rmtree(dest)
            shutil.rmtree(plain)
    full_add = _timed(registry.add_archive, "bench", archives["tar.gz"], "many")

    registry.shutdown()
    shutil.rmtree(work, ignore_errors=True)
    file_ratio = statistics.median(add_s) / statistics.median(copy_s)
    archive_ratios = {
        k: statistics.median(unpack[k]) / statistics.median(extract[k]) for k in unpack
    }
    result: dict[str, Any] = {
        "benchmark": "artifacts",
        "rounds": ROUNDS,
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "file_mb": FILE_MB,
        "add_file_s_median": statistics.median(add_s),
        "copyfile_s_median": statistics.median(copy_s),
        "file_ratio": file_ratio,
        "spark_register_s_median": statistics.median(spark_s),
        "file_ratio_vs_copy_plus_spark": statistics.median(add_s)
        / (statistics.median(copy_s) + statistics.median(spark_s)),
        "peak_memory_growth_mb": peak_growth,
        "entries": ENTRIES,
        "unpack_s_median": {k: statistics.median(v) for k, v in unpack.items()},
        "extractall_s_median": {k: statistics.median(v) for k, v in extract.items()},
        "archive_ratio": archive_ratios,
        "add_archive_tar_gz_s": full_add,
        "targets": {"file_ratio": 1.5, "peak_memory_growth_mb": 64, "archive_ratio": 2.0},
    }
    result["meets_targets"] = (
        file_ratio <= 1.5 and peak_growth < 64 and max(archive_ratios.values()) <= 2.0
    )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
