"""Byte counts as people read them (``1.2 MiB``): one wording for every message and
view of the package."""

from __future__ import annotations


def size_text(count: float) -> str:
    """``512 B``, ``9.8 KiB``, ``1.2 MiB``... up to TiB."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"
