"""The package's public surface, configuration and prebuilt labextension."""

from __future__ import annotations

import json
import subprocess
import sys

import jupyter_spark_sessions
from jupyter_spark_sessions.config import SparkSessionsConfig


def test_public_names_all_resolve() -> None:
    for name in jupyter_spark_sessions.__all__:
        assert hasattr(jupyter_spark_sessions, name), name
    # Every name imported on first use is public (the two lists are kept by hand).
    assert set(jupyter_spark_sessions._LAZY) <= set(jupyter_spark_sessions.__all__)


def test_importing_the_package_does_not_import_pyspark() -> None:
    # %load_ext must be instant: PySpark is imported on first use only.
    code = (
        "import sys, jupyter_spark_sessions, jupyter_spark_sessions.magics.session_magics;"
        "print('pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_module_run_alone_imports_none_of_the_rest() -> None:
    # The Python workers' daemon starts with each new session's first UDF: it must not
    # import the whole package (its public names are imported on first use).
    code = (
        "import sys, jupyter_spark_sessions.backends.spark_daemon;"
        "print(sorted(m for m in sys.modules if m.startswith('jupyter_spark_sessions.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(
        [
            "jupyter_spark_sessions.backends",
            "jupyter_spark_sessions.backends.base",
            "jupyter_spark_sessions.backends.spark_daemon",
        ]
    )


def test_unknown_names_are_an_attribute_error() -> None:
    assert not hasattr(jupyter_spark_sessions, "no_such_name")
    assert "SparkSessionsApp" in dir(jupyter_spark_sessions)


def test_every_config_trait_has_help() -> None:
    traits = SparkSessionsConfig.class_traits(config=True)
    assert {"default_master", "app_name", "session_root", "session_defaults"} <= set(traits)
    for name, trait in traits.items():
        assert trait.help.strip(), name


def test_config_is_read_from_ipython_config() -> None:
    from traitlets.config import Config

    config = Config()
    config.SparkSessionsConfig.default_master = "local[3]"
    assert SparkSessionsConfig(config=config).default_master == "local[3]"


def extension_listing(module: str) -> str:
    """What ``python -m <module> list`` prints (Jupyter writes it to stderr)."""
    listing = subprocess.run(
        [sys.executable, "-m", module, "list"], capture_output=True, text=True, check=True
    )
    return listing.stdout + listing.stderr


def test_labextension_is_installed_enabled_and_ok() -> None:
    text = extension_listing("jupyterlab.labextensions")
    line = next(ln for ln in text.splitlines() if "jupyter-spark-sessions" in ln)
    assert "enabled" in line and "OK" in line


def test_server_extension_is_enabled_on_install() -> None:
    # The REST relay must be there without a `jupyter server extension enable` step.
    text = extension_listing("jupyter_server.extension.serverextension")
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("jupyter_spark_sessions"))
    assert "enabled" in line, text


def test_labextension_ships_a_built_remote_entry() -> None:
    from jupyter_core.paths import jupyter_path

    for root in jupyter_path("labextensions"):
        package = f"{root}/jupyter-spark-sessions/package.json"
        try:
            with open(package) as fh:
                meta = json.load(fh)
        except FileNotFoundError:
            continue
        load = meta["jupyterlab"]["_build"]["load"]
        assert load.startswith("static/remoteEntry.")
        return
    raise AssertionError("the built labextension is not installed")
