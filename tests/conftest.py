"""Shared fixtures: a real kernel with the extension loaded, on a real PySpark JVM."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from kernel_driver import Kernel

# Executors' Python workers must be this interpreter (it has pyarrow and the package).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

SPARK_TEST_CONF = (
    "c.SparkSessionsConfig.default_master = 'local[2]'\n"
    "c.SparkSessionsConfig.context_conf = {'spark.ui.enabled': 'false', "
    "'spark.ui.showConsoleProgress': 'false'}\n"
)


def start_extension_kernel(tmp_path_factory: pytest.TempPathFactory, config: str) -> Kernel:
    """A kernel whose IPython profile holds ``config``, with jupyter_spark_sessions loaded."""
    profile = tmp_path_factory.mktemp("ipython")
    (profile / "profile_default").mkdir()
    (profile / "profile_default" / "ipython_config.py").write_text(config)
    k = Kernel(env={"IPYTHONDIR": str(profile)}, cwd=str(tmp_path_factory.mktemp("cwd")))
    k.ok("%load_ext jupyter_spark_sessions")
    return k


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    """A kernel with jupyter_spark_sessions loaded; one per test module (one JVM)."""
    k = start_extension_kernel(tmp_path_factory, SPARK_TEST_CONF)
    yield k
    k.shutdown()
