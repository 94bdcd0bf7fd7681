"""Fixtures shared by the test modules; pytester for the plugin's own tests."""

from .recording_fixtures import server, start_proxy  # noqa: F401  (fixtures, registered by being here)

pytest_plugins = ["pytester"]
