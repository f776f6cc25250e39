"""Named sessions: the registry (the one source of truth for session state), their
release, their recovery after Spark lost them (``restart``, ``reconnect``), their Python
environments, the job tags a thread carries for a session, and what a cell is told about
objects of a session that went away."""
