"""Who decides whether a call runs: the modes, what an "always" answer covers (command scopes,
protected paths), the policy and its gate, the rules remembered per session and per project, and their
record in the session log."""
