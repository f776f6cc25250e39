"""Tiny wheels built by the tests (no network, no build tool): a package whose
``__version__`` is its version, for the tests of per-session Python environments."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def make_wheel(directory: Path, name: str, version: str) -> Path:
    """``directory/<name>-<version>-py3-none-any.whl``, holding ``<name>/__init__.py``."""
    dist = f"{name}-{version}"
    path = directory / f"{dist}-py3-none-any.whl"
    files = {
        f"{name}/__init__.py": f"__version__ = {version!r}\n",
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            data = text.encode()
            archive.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{member},sha256={digest.decode()},{len(data)}")
        record.append(f"{dist}.dist-info/RECORD,,")
        archive.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")
    return path
