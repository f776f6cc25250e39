"""Each session its own Python packages: a virtual environment per set of requirements,
whose interpreter runs the session's Python UDFs, pandas UDFs and pandas function APIs
(Spark's per-session ``spark.sql.execution.pyspark.python``).

- **What it sees.** The requested packages, installed in the environment's own
  site-packages, then the kernel's site-packages (a ``.pth`` file appends them): its UDFs
  get the kernel's PySpark, pyarrow and pandas, and the requested versions win. The
  kernel's own interpreter and packages are never changed.
- **Built once.** An environment is named by a hash of its requirements (with the
  content of every wheel or requirements file they name) and of the kernel's Python,
  PySpark and site-packages, and kept in the user's cache folder (mode 0700): the next
  session or kernel with the same requirements uses it at once.
- **Never half-built.** uv (from the package index: a resolver and installer many
  times faster than pip, one static binary) builds it in a temporary folder beside the
  cache entry, renamed into place only once the install succeeded; a failure or an
  Interrupt removes it and says why in one line (uv's error and its first and last causes).
- **By path, or shipped.** Where the session's Python workers run on the kernel's
  machine (local masters, ``local-cluster``, a standalone master on this host, the local
  Spark Connect server), the environment is used where it was built. Elsewhere (YARN,
  Kubernetes, a remote master or Connect server), its packages go to the executors as
  the session's archive (``archive``): a ``bin/python`` that runs the executors' own
  Python with the packages first on its path, found by the relative path Spark unpacks
  it to in the session's folder, where its Python workers start.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import PackagesError

#: The per-session SQL setting naming the interpreter of the session's Python workers.
PYTHON_CONF = "spark.sql.execution.pyspark.python"
#: How many of uv's last lines a failed build shows.
_ERROR_LINES = 4


@dataclass(frozen=True)
class Requirements:
    """What a session asked for: pip specifiers (a local wheel as its absolute path) and
    requirements files (absolute paths), in the order given."""

    specs: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.specs or self.files)

    def plus(self, other: Requirements) -> Requirements:
        """These and ``other``'s (for ``pip``: the later wins where pip decides)."""
        return Requirements(
            tuple(dict.fromkeys(self.specs + other.specs)),
            tuple(dict.fromkeys(self.files + other.files)),
        )

    def describe(self) -> str:
        """One line: ``jsspkg==1.0, ./x-1.0-py3-none-any.whl, -r req.txt``."""
        shown = [Path(s).name if _is_path(s) else s for s in self.specs]
        return ", ".join(shown + [f"-r {Path(f).name}" for f in self.files])


def requirements(specs: Iterable[str], files: Iterable[str], cwd: str) -> Requirements:
    """Requirements from the magics' words: a spec that names a file (a wheel, a
    directory with a project) is made absolute; a missing one is refused."""
    resolved = []
    for spec in specs:
        if _is_path(spec):
            path = Path(cwd, os.path.expanduser(spec)).resolve()
            if not path.exists():
                raise PackagesError(f"No such file: {spec} (a wheel or project to install).")
            spec = str(path)
        resolved.append(spec)
    found = []
    for name in files:
        path = Path(cwd, os.path.expanduser(name)).resolve()
        if not path.is_file():
            raise PackagesError(f"No such requirements file: {name}.")
        found.append(str(path))
    return Requirements(tuple(resolved), tuple(found))


def _is_path(spec: str) -> bool:
    return spec.endswith((".whl", ".tar.gz", ".zip")) or spec.startswith(("/", ".", "~"))


def _digest(path: str) -> str:
    target = Path(path)
    if target.is_dir():  # a project folder: its name is what we know cheaply
        return "dir:" + str(target)
    return hashlib.sha256(target.read_bytes()).hexdigest()


def env_key(wanted: Requirements) -> str:
    """The cache name of the environment for ``wanted`` in this kernel."""
    import pyspark

    described = {
        "python": sys.version,
        "executable": os.path.realpath(sys.executable),
        "site": _kernel_site_packages(),
        "pyspark": pyspark.__version__,
        "specs": list(wanted.specs),
        "files": [[f, _digest(f)] for f in wanted.files],
        "wheels": [[s, _digest(s)] for s in wanted.specs if _is_path(s)],
    }
    text = json.dumps(described, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _kernel_site_packages() -> list[str]:
    paths = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return list(dict.fromkeys(paths))


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/jupyter_spark_sessions/envs`` (``~/.cache/...`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jupyter_spark_sessions" / "envs"


@dataclass(frozen=True)
class SessionEnv:
    """A built environment: its interpreter, what it holds, and whether this call built
    it (False: found in the cache)."""

    python: str
    key: str
    wanted: Requirements
    built: bool
    seconds: float
    #: The folder a session's executors unpack it to, when it is shipped to them as the
    #: session's archive ("": used by path).
    shipped_as: str = ""

    def provides(self, module: str) -> bool:
        """Whether its own packages (not the kernel's) have ``module``'s top package."""
        site = _env_site_packages(Path(self.python).parent.parent)
        top = module.split(".")[0]
        return (site / top).is_dir() or any(site.glob(f"{top}.py")) or any(site.glob(f"{top}.*.so"))

    @property
    def worker_python(self) -> str:
        """The session's ``PYTHON_CONF``: the interpreter its Python workers run."""
        return shipped_python(self.shipped_as) if self.shipped_as else self.python


class EnvironmentCache:
    """The environments of one user, in ``root`` (mode 0700). After a build, the least
    recently used ones go until the cache holds at most ``max_bytes`` (0: no bound),
    except those ``in_use`` (keys) and any used in the last ``RECENT_SECONDS`` (another
    kernel's sessions may run them)."""

    #: An environment used this recently is never removed to make room.
    RECENT_SECONDS = 3600

    def __init__(self, root: Path, max_bytes: int = 0, in_use: Iterable[str] = ()) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.in_use = set(in_use)

    def get_or_build(self, wanted: Requirements, say: Callable[[str], None]) -> SessionEnv:
        """The environment for ``wanted``, built if the cache lacks it; ``say`` gets
        the build's progress lines. PackagesError (nothing left behind) on failure."""
        started = time.monotonic()
        key = env_key(wanted)
        target = self.root / key
        python = target / "bin" / "python"
        if python.exists():
            os.utime(target)  # its last use, for the size bound
            return SessionEnv(str(python), key, wanted, False, time.monotonic() - started)
        self._make_root()
        building = self.root / f".building-{key}-{uuid.uuid4().hex[:8]}"
        try:
            say(f"Building a Python environment for {wanted.describe()} ...")
            self._build(building, wanted, say)
            try:
                building.rename(target)
            except OSError:  # another kernel finished the same one first: use it
                if not python.exists():
                    raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
        self.prune(keep=key)
        return SessionEnv(str(python), key, wanted, True, time.monotonic() - started)

    def prune(self, keep: str = "") -> list[str]:
        """Remove least recently used environments (with their archives) while the cache
        holds more than ``max_bytes``; returns the keys removed."""
        if not self.max_bytes:
            return []
        entries: dict[str, list[Path]] = {}
        for path in self.root.iterdir():
            if not path.name.startswith("."):  # not a build under way
                entries.setdefault(path.name[:20], []).append(path)
        total = sum(_size(p) for paths in entries.values() for p in paths)
        spared = self.in_use | {keep}
        recent = time.time() - self.RECENT_SECONDS
        removed = []
        for key, paths in sorted(entries.items(), key=lambda e: _last_use(e[1])):
            if total <= self.max_bytes:
                break
            if key in spared or _last_use(paths) > recent:
                continue
            total -= sum(_size(p) for p in paths)
            for path in paths:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            removed.append(key)
        return removed

    def archive(self, env: SessionEnv, worker_python: str) -> Path:
        """``env``'s packages as a tar.gz for executors on other machines, whose
        ``bin/python`` runs ``worker_python`` ("": the executors' ``$PYSPARK_PYTHON``,
        else ``python3``) with them first on ``sys.path``. Packed once, like ``env``.
        Compiled packages need the executors' Python version and platform to match."""
        tag = hashlib.sha256(worker_python.encode()).hexdigest()[:8]
        target = self.root / f"{env.key}-{tag}.tar.gz"
        if target.exists():
            return target
        packing = self.root / f".packing-{env.key}-{uuid.uuid4().hex[:8]}"
        try:
            with tarfile.open(packing, "w:gz") as tar:
                tar.add(
                    _env_site_packages(Path(env.python).parent.parent),
                    "site-packages",
                    filter=_shipped,
                )
                _add_text(tar, "bin/python", _launcher(worker_python), 0o755)
            packing.rename(target)
        finally:
            packing.unlink(missing_ok=True)
        return target

    def _make_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.root, 0o700)

    def _build(self, folder: Path, wanted: Requirements, say: Callable[[str], None]) -> None:
        uv = _uv()
        _run([uv, "venv", "--quiet", "--python", sys.executable, str(folder)], say, wanted)
        site = _env_site_packages(folder)
        # After the environment's own packages: the kernel's (PySpark, pyarrow, pandas).
        (site / "_jupyter_spark_sessions_kernel.pth").write_text(
            "\n".join(_kernel_site_packages()) + "\n"
        )
        command = [uv, "pip", "install", "--python", str(folder / "bin" / "python")]
        command += list(wanted.specs)
        for file in wanted.files:
            command += ["-r", file]
        _run(command, say, wanted)


def _env_site_packages(folder: Path) -> Path:
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return folder / "lib" / version / "site-packages"


def _uv() -> str:
    from uv import find_uv_bin

    return str(find_uv_bin())


def _run(command: list[str], say: Callable[[str], None], wanted: Requirements) -> None:
    """Run one uv step, passing its lines on; an Interrupt stops it."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "UV_NO_PROGRESS": "1"},
    )
    lines: list[str] = []
    failing = False  # from uv's first error line on, the lines go into the error only
    try:
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip()
            if not line or line.startswith("Using Python"):  # the temporary folder's path
                continue
            lines.append(line)
            failing = failing or _is_error(line)
            if not failing:
                say(line)
        code = process.wait()
    except BaseException as exc:  # an Interrupt: stop uv, the caller removes the folder
        process.kill()
        process.wait()
        if isinstance(exc, KeyboardInterrupt):
            raise PackagesError(
                f"Interrupted: the Python environment for {wanted.describe()} was not "
                "built; nothing was made or changed."
            ) from None
        raise
    if code != 0:
        raise PackagesError(f"Could not install {wanted.describe()}: {_uv_error(lines)}")


def _uv_error(lines: list[str]) -> str:
    """uv's error in one line: its error lines, and of its chain of causes the first
    (what failed) and the last (why)."""
    first = next((i for i, line in enumerate(lines) if _is_error(line)), 0)
    failing = [line.strip() for line in lines[first:] if line.strip()] or ["(no output)"]
    causes = [line.removeprefix("cause:").strip() for line in failing if line.startswith("cause:")]
    said = [line for line in failing if not line.startswith("cause:")][:_ERROR_LINES] or failing[:1]
    said[0] = said[0].removeprefix("error:").strip()
    said += causes[:1] + causes[-1:] if len(causes) > 1 else causes
    return " / ".join(said)


def _is_error(line: str) -> bool:
    return line.lstrip(" \u00d7").lower().startswith("error")


def shipped_python(folder: str) -> str:
    """The interpreter setting of a session whose environment Spark unpacked into
    ``folder`` (relative: Python workers start in the session's folder)."""
    return f"{folder}/bin/python"


def _launcher(worker_python: str) -> str:
    python = shlex.quote(worker_python) if worker_python else '"${PYSPARK_PYTHON:-python3}"'
    return (
        "#!/bin/sh\n"
        "# The session's packages first, then the executor's own Python and packages.\n"
        'here="$(cd "$(dirname "$0")/.." && pwd)"\n'
        f'PYTHONPATH="$here/site-packages${{PYTHONPATH:+:$PYTHONPATH}}" exec {python} "$@"\n'
    )


def _shipped(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    # Not the kernel's site-packages (.pth: a path of this machine) nor bytecode.
    if member.name.endswith(".pth") or "__pycache__" in member.name.split("/"):
        return None
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member


def _add_text(tar: tarfile.TarFile, name: str, text: str, mode: int) -> None:
    data = text.encode()
    member = tarfile.TarInfo(name)
    member.size, member.mode, member.mtime = len(data), mode, int(time.time())
    tar.addfile(member, io.BytesIO(data))


def _size(path: Path) -> int:
    if not path.is_dir():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*"))


def _last_use(paths: list[Path]) -> float:
    return max(p.lstat().st_mtime for p in paths)
