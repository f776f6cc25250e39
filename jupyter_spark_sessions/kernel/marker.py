"""How a frontend learns that a kernel has loaded the extension without sending the
kernel a message it may not know (a kernel without the extension would never answer a
``spark_sessions_request``, and ipykernel logs ``UNKNOWN CONTROL MESSAGE TYPE``).

The kernel lists a help link in its standard ``kernel_info_reply`` (``help_links``, a
public trait of ipykernel's kernel); ipykernel answers ``kernel_info_request`` on the
control channel too, at once, even while a cell runs. The link doubles as a Help-menu
entry in JupyterLab. The frontend looks for ``MARKER_TEXT`` (labextension/src/kernelMarker.ts).
"""

from __future__ import annotations

from typing import Any

#: The help link's text: what the frontend looks for, and what the Help menu shows.
MARKER_TEXT = "Spark sessions"
DOCS_URL = "https://github.com/jupyter-spark-sessions/jupyter_spark_sessions#readme"


def _is_marker(link: Any) -> bool:
    return isinstance(link, dict) and link.get("text") == MARKER_TEXT


def advertise(kernel: Any) -> None:
    """Add the help link to the kernel's ``help_links`` (once)."""
    links = list(kernel.help_links)
    if not any(_is_marker(link) for link in links):
        # A new list, not an append: traitlets sees the change, the default list stays.
        kernel.help_links = [*links, {"text": MARKER_TEXT, "url": DOCS_URL}]


def withdraw(kernel: Any) -> None:
    """Remove the help link again."""
    kernel.help_links = [link for link in kernel.help_links if not _is_marker(link)]
