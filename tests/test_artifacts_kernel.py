"""Session-scoped files, archives and Python files through a real kernel and real Spark,
on local[2] and on local-cluster[2,1,1024] (separate executor processes: the files must
travel to them)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SharedKernel, start_extension_kernel

from kernel_driver import Kernel

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REGISTRY = "__import__('jupyter_spark_sessions').default_registry()"

PROBES = """
import importlib, os
import pandas as pd
from pyspark.sql.functions import pandas_udf, udf

def _read(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except Exception as exc:
        return "ERR " + type(exc).__name__

@udf("string")
def read_file(path):
    return _read(path)

@pandas_udf("string")
def read_file_pd(paths: pd.Series) -> pd.Series:
    return paths.map(_read)

@udf("string")
def import_value(module):
    try:
        return str(importlib.import_module(module).VALUE)
    except Exception as exc:
        return "ERR " + type(exc).__name__

def probe(session_name, udf_, arg):
    return probe_all(session_name, [(udf_, arg)])[0]

def probe_all(session_name, probes):
    # One job for every (udf, argument): each a column of one row.
    session = __import__('jupyter_spark_sessions').default_registry().session(session_name)
    names = [f"arg{i}" for i in range(len(probes))]
    schema = ", ".join(f"{n} string" for n in names)
    df = session.createDataFrame([tuple(arg for _, arg in probes)], schema)
    return list(df.select(*[udf_(n) for (udf_, _), n in zip(probes, names)]).collect()[0])
"""


def write_inputs(root: Path) -> dict[str, str]:
    """The files both sessions add, each with its own content under the same names."""
    paths: dict[str, str] = {}
    for session in ("a", "b"):
        folder = root / session
        folder.mkdir()
        (folder / "lookup.csv").write_text(f"lookup of {session}", encoding="utf-8")
        (folder / "données été.txt").write_text(f"accents of {session}", encoding="utf-8")
        (folder / "shared_mod.py").write_text(f"VALUE = 'py of {session}'\n")
        with tarfile.open(folder / "refdata.tar.gz", "w:gz") as archive:
            data = f"colors of {session}".encode()
            info = tarfile.TarInfo("nested/colors.txt")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        with zipfile.ZipFile(folder / "helpers.zip", "w") as archive:
            archive.writestr("zhelpers/__init__.py", f"VALUE = 'zip of {session}'\n")
        paths[session] = str(folder)
    return paths


@pytest.fixture(scope="module", params=["local[2]", "local-cluster[2,1,1024]"])
def kernel_on(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Kernel, dict[str, str]]]:
    """A kernel on the master asked for, with sessions a, b and c and the probes: on
    local[2], the plain test configuration, the run's shared kernel (reset for this
    module); on local-cluster, a kernel of its own."""
    master = request.param
    paths = write_inputs(tmp_path_factory.mktemp("inputs"))
    if master == "local[2]":
        shared: SharedKernel = request.getfixturevalue("shared_kernel")
        kernel = shared.reset()
    else:
        kernel = start_extension_kernel(
            tmp_path_factory,
            f"c.SparkSessionsConfig.default_master = {master!r}\n"
            "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false'}\n",
        )
    kernel.ok("%spark_session create a\n%spark_session create b\n%spark_session create c")
    kernel.ok(PROBES)
    yield kernel, paths
    if master != "local[2]":  # the shared kernel: the next module's reset cleans up
        kernel.shutdown()


def probe(kernel: Kernel, session: str, udf: str, arg: str) -> Any:
    return kernel.value(f"probe({session!r}, {udf}, {arg!r})")


def test_same_names_in_two_sessions_each_read_their_own(
    kernel_on: tuple[Kernel, dict[str, str]],
) -> None:
    kernel, paths = kernel_on
    for session in ("a", "b"):
        folder = paths[session]
        out = kernel.ok(
            f"%spark_session add_file {session} {folder}/lookup.csv\n"
            f"%spark_session add_file {session} '{folder}/données été.txt'\n"
            f"%spark_session add_archive {session} {folder}/refdata.tar.gz\n"
            f"%spark_session add_pyfile {session} {folder}/shared_mod.py\n"
            f"%spark_session add_pyfile {session} {folder}/helpers.zip\n"
        ).stdout
        assert out.count("Added ") == 5, out
    every_kind = (
        "[(read_file, 'lookup.csv'), (read_file_pd, 'lookup.csv'), "
        "(read_file, 'données été.txt'), (read_file, 'refdata/nested/colors.txt'), "
        "(import_value, 'shared_mod'), (import_value, 'zhelpers')]"
    )
    for session in ("a", "b"):
        assert kernel.value(f"probe_all({session!r}, {every_kind})") == [
            f"lookup of {session}",
            f"lookup of {session}",
            f"accents of {session}",
            f"colors of {session}",
            f"py of {session}",
            f"zip of {session}",
        ]
    # A session that added nothing sees none of it.
    assert kernel.value(f"probe_all('c', {every_kind})") == [
        "ERR FileNotFoundError",
        "ERR FileNotFoundError",
        "ERR FileNotFoundError",
        "ERR FileNotFoundError",
        "ERR ModuleNotFoundError",
        "ERR ModuleNotFoundError",
    ]


RDD_READ = (
    "spark.sparkContext.parallelize(['lookup.csv'], 1).map(lambda p: open(p).read()).collect()"
)


def test_a_cells_rdd_jobs_read_the_files_of_its_session(
    kernel_on: tuple[Kernel, dict[str, str]],
) -> None:
    # RDD jobs have no session of their own: they run in the cell's session. Without
    # that they would get both sessions' lookup.csv in one folder and fail.
    kernel, _ = kernel_on
    for session in ("a", "b"):
        out = kernel.ok(f"%%spark_session {session}\nprint({RDD_READ})").stdout
        assert out.strip() == f"['lookup of {session}']"
    kernel.ok("%spark_session use b")
    assert kernel.ok(f"print({RDD_READ})").stdout.strip() == "['lookup of b']"
    # Lent for the cell only: a cell outside managed sessions leaves the thread without.
    kernel.ok("_bound = spark\ndel spark")
    # Spark's private thread-local that CellScope sets, read by reflection.
    kernel.ok(
        "_jvm = _bound.sparkContext._jvm\n"
        "_owner = _jvm.java.lang.Class.forName('org.apache.spark.JobArtifactSet$')\n"
        "_field = _owner.getDeclaredField('currentClientSessionState')\n"
        "_field.setAccessible(True)"
    )
    empty = kernel.value("_field.get(_owner.getField('MODULE$').get(None)).get().isEmpty()")
    kernel.ok("spark = _bound")
    assert empty is True


def test_driver_sees_the_same_files_in_the_session_directory(
    kernel_on: tuple[Kernel, dict[str, str]],
) -> None:
    kernel, _ = kernel_on
    listing = kernel.ok("%spark_session files a").stdout
    for name in ("lookup.csv", "données été.txt", "refdata", "shared_mod.py", "helpers.zip"):
        assert name in listing
    found = kernel.value(f"{{a.name: a.path for a in {REGISTRY}.files('a')}}")
    directory = kernel.value(f"str({REGISTRY}.get('a').directory)")
    assert all(path.startswith(directory) for path in found.values())
    assert Path(found["lookup.csv"]).read_text(encoding="utf-8") == "lookup of a"
    assert (Path(found["refdata"]) / "nested" / "colors.txt").read_text() == "colors of a"
    info = kernel.ok("%spark_session info a").stdout
    assert directory in info and "files         5" in info


def test_stop_releases_one_session_and_leaves_the_other_readable(
    kernel_on: tuple[Kernel, dict[str, str]],
) -> None:
    kernel, paths = kernel_on
    kernel.ok("%spark_session create doomed")
    kernel.ok(f"%spark_session add_file doomed {paths['a']}/lookup.csv")
    directory = kernel.value(f"str({REGISTRY}.get('doomed').directory)")
    kernel.ok(f"assert {REGISTRY}.stop('doomed').wait(60)")
    assert not Path(directory).exists()
    assert probe(kernel, "b", "read_file", "lookup.csv") == "lookup of b"
    assert probe(kernel, "a", "import_value", "zhelpers") == "zip of a"


def test_adding_again_is_a_no_op_or_a_clear_error_and_the_first_stays(
    kernel_on: tuple[Kernel, dict[str, str]],
) -> None:
    kernel, paths = kernel_on
    same = kernel.ok(f"%spark_session add_file a {paths['a']}/lookup.csv").stdout
    assert "already in session 'a' with the same content" in same
    clash = kernel.execute(f"%spark_session add_file a {paths['b']}/lookup.csv")
    assert "already has a file named 'lookup.csv' with different content" in clash.usage_error
    assert probe(kernel, "a", "read_file", "lookup.csv") == "lookup of a"
    renamed = kernel.ok(f"%spark_session add_file a {paths['b']}/lookup.csv --as lookup_b.csv")
    assert "Added file 'lookup_b.csv'" in renamed.stdout
    assert probe(kernel, "a", "read_file", "lookup_b.csv") == "lookup of b"
    assert Path(paths["b"], "lookup.csv").read_text() == "lookup of b", "original untouched"
