"""`acp-bridge login` / `logout` and ACP `authenticate`, and the auth methods `initialize` advertises."""
