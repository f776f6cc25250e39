"""The job tags that make every cell's Spark jobs attributable.

Format (documented in docs/job-tags.md):

- ``jss:<session>`` on every job a cell runs in a managed session, so a whole session's
  jobs (RDD jobs included, which carry no SQL session tag) can be cancelled at once;
- ``jss:<session>:<execution count>`` on the jobs of one cell execution: one *job group*,
  whose id shown to users is ``<session>:<execution count>``.

Session names cannot contain ``:`` or ``,`` (Spark tags cannot hold a comma), so a tag
parses back unambiguously. Pure: ``sessions/thread_tagger`` applies the tags to a thread.
"""

from __future__ import annotations

TAG_PREFIX = "jss:"


def session_tag(session_name: str) -> str:
    """The tag on every job run by cells in ``session_name``."""
    return f"{TAG_PREFIX}{session_name}"


def group_id(session_name: str, execution_count: int) -> str:
    """The id of one cell execution's job group, as users see it."""
    return f"{session_name}:{execution_count}"


def group_tag(session_name: str, execution_count: int) -> str:
    """The tag on the jobs of one cell execution."""
    return f"{TAG_PREFIX}{group_id(session_name, execution_count)}"


def cell_tags(session_name: str, execution_count: int) -> tuple[str, str]:
    """The tags on the jobs of one cell execution in one session."""
    return session_tag(session_name), group_tag(session_name, execution_count)


def parse_tag(tag: str) -> tuple[str, int | None] | None:
    """``(session, execution count or None)`` for one of this project's tags, else None."""
    if not tag.startswith(TAG_PREFIX):
        return None
    body = tag[len(TAG_PREFIX) :]
    name, sep, count = body.rpartition(":")
    if not sep:
        return (body, None) if body else None
    if not name or not count.isdigit():
        return None
    return name, int(count)


BACKGROUND = "background"


def background_group_id(session_name: str) -> str:
    """The id of the group of a session's jobs that no managed cell started (a plain
    thread, a cell bound to another session or to none)."""
    return f"{session_name}:{BACKGROUND}"
