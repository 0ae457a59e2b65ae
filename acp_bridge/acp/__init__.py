"""The ACP face (`acp-bridge serve`): the JSON-RPC peer, the `initialize` handshake answered before the
core loads, and the agent that maps ACP methods onto the core."""
