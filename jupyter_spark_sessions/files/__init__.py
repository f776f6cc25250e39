"""Files, archives and Python files added to a session: validated, staged in the
session's private folder and registered with Spark for that session only."""
