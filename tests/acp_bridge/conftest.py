"""The bridge-as-a-subprocess fixtures (tests/support/bridge_fixtures.py) for every test of the bridge's
packages, which start real bridges beside their in-process tests."""

from tests.support.bridge_fixtures import bridges, compiled_packages, workspace

__all__ = ["bridges", "compiled_packages", "workspace"]
