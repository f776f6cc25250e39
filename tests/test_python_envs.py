"""Per-session Python environments without Spark: what a requirement names, the cache
key, and a real uv build (a local wheel, no network) that either lands whole in the
cache or leaves nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from tiny_wheels import make_wheel

from jupyter_spark_sessions.backends.local_master import workers_on_this_machine
from jupyter_spark_sessions.errors import PackagesError
from jupyter_spark_sessions.sessions.python_envs import (
    EnvironmentCache,
    Requirements,
    env_key,
    requirements,
    shipped_python,
)


def test_specs_that_name_files_are_made_absolute_and_missing_ones_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "jsstiny", "1.0")
    (tmp_path / "req.txt").write_text("jsstiny\n")
    wanted = requirements(["./" + wheel.name, "pandas==2.2.3"], ["req.txt"], str(tmp_path))
    assert wanted == Requirements((str(wheel), "pandas==2.2.3"), (str(tmp_path / "req.txt"),))
    assert wanted.describe() == "jsstiny-1.0-py3-none-any.whl, pandas==2.2.3, -r req.txt"
    with pytest.raises(PackagesError, match=r"^No such file: ./gone-1.0-py3-none-any.whl "):
        requirements(["./gone-1.0-py3-none-any.whl"], [], str(tmp_path))
    with pytest.raises(PackagesError, match=r"^No such requirements file: nope.txt.$"):
        requirements([], ["nope.txt"], str(tmp_path))
    more = wanted.plus(Requirements(("pandas==2.2.3", "scipy"), ()))
    assert more.specs == (str(wheel), "pandas==2.2.3", "scipy")


def test_the_key_follows_the_requirements_and_the_wheels_content(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "jsstiny", "1.0")
    wanted = Requirements((str(wheel),))
    first = env_key(wanted)
    assert env_key(Requirements((str(wheel),))) == first
    assert env_key(Requirements((str(wheel), "six"))) != first
    wheel.write_bytes(wheel.read_bytes() + b"\0")  # rebuilt under the same name
    assert env_key(wanted) != first


def test_a_build_lands_whole_in_the_cache_and_a_failed_one_leaves_nothing(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "jsstiny", "2.0")
    cache = EnvironmentCache(tmp_path / "envs")
    said: list[str] = []
    env = cache.get_or_build(Requirements((str(wheel),)), said.append)
    assert env.built and said[0].startswith("Building a Python environment for jsstiny-2.0")
    assert any("jsstiny==2.0" in line for line in said), said
    probe = "import jsstiny, pyspark; print(jsstiny.__version__, pyspark.__name__)"
    out = subprocess.run([env.python, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2.0", "pyspark"], "its package, then the kernel's"
    assert (tmp_path / "envs").stat().st_mode & 0o777 == 0o700
    again = cache.get_or_build(Requirements((str(wheel),)), said.append)
    assert not again.built and again.python == env.python

    broken = tmp_path / "broken-1.0-py3-none-any.whl"
    broken.write_bytes(b"not a zip")
    with pytest.raises(PackagesError) as failed:
        cache.get_or_build(Requirements((str(broken),)), said.append)
    assert str(failed.value).startswith("Could not install broken-1.0-py3-none-any.whl: ")
    assert "\n" not in str(failed.value)
    assert sorted(p.name for p in (tmp_path / "envs").iterdir()) == [
        Path(env.python).parents[1].name
    ]


def test_an_environment_ships_as_an_archive_whose_python_runs_the_workers_own_with_its_packages(
    tmp_path: Path,
) -> None:
    """What executors on other machines get: the packages and a bin/python that runs
    the interpreter they would run anyway, the packages first, found by the relative
    path Spark unpacks the archive to (workers start in the session's folder)."""
    wheel = make_wheel(tmp_path, "jsstiny", "3.0")
    cache = EnvironmentCache(tmp_path / "envs")
    env = cache.get_or_build(Requirements((str(wheel),)), lambda line: None)
    archive = cache.archive(env, sys.executable)
    assert cache.archive(env, sys.executable) == archive, "packed once"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert tar.getmember("bin/python").mode == 0o755
    assert "site-packages/jsstiny/__init__.py" in names
    assert not [n for n in names if n.endswith(".pth")], "no path of this machine"
    session_folder = tmp_path / "session"
    (session_folder / "python-env").mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(session_folder / "python-env", filter="tar")
    probe = "import sys, jsstiny; print(jsstiny.__version__, sys.executable)"
    out = subprocess.run(
        [shipped_python("python-env"), "-c", probe],
        cwd=session_folder,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["3.0", sys.executable]
    # Without a known interpreter: the executors' $PYSPARK_PYTHON.
    with tarfile.open(cache.archive(env, "")) as tar:
        launcher = tar.extractfile("bin/python")
        assert launcher is not None and b'"${PYSPARK_PYTHON:-python3}"' in launcher.read()


def test_the_cache_keeps_to_its_bound_sparing_environments_in_use_and_recent(
    tmp_path: Path,
) -> None:
    root = tmp_path / "envs"
    root.mkdir()
    old = time.time() - 2 * EnvironmentCache.RECENT_SECONDS
    for key, age in (("a" * 20, 40), ("b" * 20, 30), ("c" * 20, 20), ("d" * 20, 0)):
        (root / key).mkdir()
        (root / key / "blob").write_bytes(b"x" * 1000)
        (root / f"{key}-12345678.tar.gz").write_bytes(b"x" * 500)
        for path in (root / key, root / f"{key}-12345678.tar.gz"):
            os.utime(path, (old - age, old - age) if age else None)
    (root / ".building-eeee").mkdir()  # a build under way is never touched
    cache = EnvironmentCache(root, max_bytes=4500, in_use=["a" * 20])  # 1500 each
    assert cache.prune() == ["b" * 20], "the oldest not in use goes first, until it fits"
    assert sorted(p.name[:20] for p in root.iterdir() if not p.name.startswith(".")) == [
        "a" * 20,
        "a" * 20,
        "c" * 20,
        "c" * 20,
        "d" * 20,
        "d" * 20,
    ]
    assert EnvironmentCache(root, max_bytes=10).prune(keep="c" * 20) == ["a" * 20]
    assert (root / ".building-eeee").exists() and (root / ("d" * 20)).exists(), "recent"
    assert EnvironmentCache(root).prune() == [], "no bound"


def test_workers_on_this_machine_are_those_of_local_masters_and_of_a_standalone_one_here() -> None:
    assert workers_on_this_machine("local[2]")
    assert workers_on_this_machine("local-cluster[2,1,1024]")
    assert workers_on_this_machine("spark://127.0.0.1:7077")
    assert workers_on_this_machine(f"spark://{socket.gethostname()}:7077")
    assert not workers_on_this_machine("yarn")
    assert not workers_on_this_machine("k8s://https://10.0.0.1:6443")
    assert not workers_on_this_machine("spark://127.0.0.1:7077,no-such-host.invalid:7077")


def test_a_conflict_or_an_unreachable_index_is_one_line_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = make_wheel(tmp_path, "jsstiny", "1.0"), tmp_path / "v2"
    two.mkdir()
    cache = EnvironmentCache(tmp_path / "envs")
    with pytest.raises(PackagesError) as conflict:
        cache.get_or_build(Requirements((str(one), str(make_wheel(two, "jsstiny", "2.0")))), print)
    assert str(conflict.value).startswith("Could not install jsstiny-1.0-py3-none-any.whl, ")
    assert "\n" not in str(conflict.value)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/simple"
    monkeypatch.setenv("UV_INDEX_URL", url)
    monkeypatch.setenv("UV_DEFAULT_INDEX", url)
    with pytest.raises(PackagesError) as offline:
        cache.get_or_build(Requirements(("jss-offline-pkg==1.0",)), print)
    closed.close()
    # uv's error, then the first and last of its causes: what failed and why.
    assert str(offline.value).startswith("Could not install jss-offline-pkg==1.0: "), offline.value
    assert f"Failed to fetch: {url}/jss-offline-pkg/" in str(offline.value), offline.value
    assert str(offline.value).endswith("Connection refused (os error 111)"), offline.value
    assert "\n" not in str(offline.value)
    assert list((tmp_path / "envs").iterdir()) == []
