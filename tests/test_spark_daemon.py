"""Which of Spark's zips ``backends/spark_daemon`` leaves off the workers' PYTHONPATH: only
a zip of PySpark or py4j whose package this interpreter has installed at the same
release (``version.py`` equal); everything else stays, in its order. (That the workers
then import the installed copies: tests/test_private_apis.py, through a real context.)"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from jupyter_spark_sessions.backends.spark_daemon import without_redundant_zips, zipped_package

PYSPARK_VERSION = "__version__: str = '4.3.0'\n"
PY4J_VERSION = "__version__ = '0.10.9.9'\n"


def spark_zip(path: Path, package: str, version: str) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{package}/__init__.py", "")
        archive.writestr(f"{package}/version.py", version)
    return str(path)


def installed(site: Path, package: str, version: str) -> str:
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (site / package / "version.py").write_text(version)
    return str(site)


def test_zipped_package_names_only_sparks_zips() -> None:
    assert zipped_package("/spark/python/lib/pyspark.zip") == "pyspark"
    assert zipped_package("/spark/python/lib/py4j-0.10.9.9-src.zip") == "py4j"
    assert zipped_package("/home/me/deps.zip") is None
    assert zipped_package("/spark/python") is None


def test_the_zips_of_installed_releases_go_and_the_rest_stays_in_order(tmp_path: Path) -> None:
    site = installed(tmp_path / "site", "pyspark", PYSPARK_VERSION)
    installed(tmp_path / "site", "py4j", PY4J_VERSION)
    pyspark_zip = spark_zip(tmp_path / "pyspark.zip", "pyspark", PYSPARK_VERSION)
    py4j_zip = spark_zip(tmp_path / "py4j-0.10.9.9-src.zip", "py4j", PY4J_VERSION)
    users = str(tmp_path / "users-files")
    pythonpath = os.pathsep.join([pyspark_zip, py4j_zip, users])
    # The interpreter's path holds the zips too (PYTHONPATH comes first): not searched.
    search = [pyspark_zip, py4j_zip, users, site]
    assert without_redundant_zips(pythonpath, search) == users


def test_a_zip_of_another_release_or_of_nothing_installed_stays(tmp_path: Path) -> None:
    site = installed(tmp_path / "site", "pyspark", "__version__: str = '4.1.0'\n")
    pyspark_zip = spark_zip(tmp_path / "pyspark.zip", "pyspark", PYSPARK_VERSION)
    py4j_zip = spark_zip(tmp_path / "py4j-0.10.9.9-src.zip", "py4j", PY4J_VERSION)
    pythonpath = os.pathsep.join([pyspark_zip, py4j_zip])
    assert without_redundant_zips(pythonpath, [site]) == pythonpath


def test_a_zip_that_cannot_be_read_stays(tmp_path: Path) -> None:
    site = installed(tmp_path / "site", "pyspark", PYSPARK_VERSION)
    broken = tmp_path / "pyspark.zip"
    broken.write_text("not a zip")
    assert without_redundant_zips(str(broken), [site]) == str(broken)
    assert without_redundant_zips("", [site]) == ""
