"""Per-session Python environments without Spark: what a requirement names, the cache
key, and a real uv build (a local wheel, no network) that either lands whole in the
cache or leaves nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tiny_wheels import make_wheel

from jupyter_spark_sessions.errors import PackagesError
from jupyter_spark_sessions.session_envs import (
    EnvironmentCache,
    Requirements,
    env_key,
    requirements,
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
