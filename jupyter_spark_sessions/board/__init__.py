"""The job board: Spark's job state, read by one producer thread (``poller``), kept as
each session's job groups (``job_board``, with what it remembers of each cell and group
in ``group_records``) and published as an immutable snapshot (``snapshot``) to every
view."""
