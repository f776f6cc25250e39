"""The docs and the Binder setup say what the code does: the configuration reference is
generated from the current traits, every relative link in the README and docs/ points at
a file that exists, and binder/ installs Java 17 and this package and opens a demo."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent


def test_configuration_reference_is_generated_from_the_current_traits() -> None:
    spec = importlib.util.spec_from_file_location(
        "config_reference", ROOT / "scripts" / "config_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expected = module.render()
    assert (ROOT / "docs" / "configuration.md").read_text() == expected, (
        "docs/configuration.md is stale: run python scripts/config_reference.py"
    )
    assert "`connect_retry_seconds`" in expected and "`default_master`" in expected


def test_relative_links_in_readme_and_docs_resolve() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / unquote(target.split("#", 1)[0])).resolve()
            if not path.exists():
                broken.append(f"{page.name}: {target}")
    assert not broken, broken


def test_binder_installs_java_17_and_the_package_and_opens_a_demo() -> None:
    environment = (ROOT / "binder" / "environment.yml").read_text()
    assert re.search(r"^\s*- openjdk=17\s*$", environment, re.M)
    assert re.search(r"^\s*- nodejs=2\d\s*$", environment, re.M)  # builds the extension
    post_build = ROOT / "binder" / "postBuild"
    assert post_build.stat().st_mode & 0o111, "postBuild must be executable"
    assert "pip install --no-cache-dir ." in post_build.read_text()
    readme = (ROOT / "README.md").read_text()
    badge = re.search(r"https://mybinder\.org/v2/gh/[^)\s]+", readme)
    assert badge, "README has no Binder badge"
    opened = re.search(r"urlpath=lab(?:%2F|/)tree(?:%2F|/)([^&)\s]+)", badge.group(0))
    assert opened, badge.group(0)
    assert (ROOT / unquote(opened.group(1))).is_file(), opened.group(1)
