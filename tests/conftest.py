"""Shared fixtures of the host's own tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

# Test helper modules (hostkit, redis_server, ...) sit beside the tests; importlib mode does not
# put this folder on sys.path by itself.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """CLI commands run in-process configure structlog; later tests must see the defaults."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)
