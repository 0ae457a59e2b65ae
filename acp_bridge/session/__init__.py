"""A session and the manager of a connection's sessions: the prompt's slot, its approvals, slash
commands, replay of a stored log, compaction, model controls and usage, the system prompt, the
processes and scratch files a session owns."""
