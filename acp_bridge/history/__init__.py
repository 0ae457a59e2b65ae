"""Sessions on disk: the typed records of a session log, the append-only log files, and the index
`session/list` reads."""
