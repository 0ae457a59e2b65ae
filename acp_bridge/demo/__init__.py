"""`acp-bridge demo`: a terminal ACP client that drives a real `serve` subprocess and prints its cards."""
