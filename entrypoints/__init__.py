"""The composition root: settings, the container, the app factory and the CLI."""

from entrypoints.app import create_app
from entrypoints.container import Container, build_container
from entrypoints.settings import Settings

__all__ = ["Container", "Settings", "build_container", "create_app"]
