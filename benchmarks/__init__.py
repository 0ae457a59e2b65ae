"""Measured figures for acp-bridge. `python -m benchmarks` (or `make bench`) runs them all."""
