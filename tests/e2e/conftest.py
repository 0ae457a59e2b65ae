"""The end-to-end tests: the whole bridge as a real subprocess over real pipes (tests/support/)."""

from tests.support.bridge_fixtures import bridges, compiled_packages, workspace

__all__ = ["bridges", "compiled_packages", "workspace"]
