"""Shared fixtures of the host's own tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Test helper modules (hostkit, redis_server, ...) sit beside the tests; importlib mode does not
# put this folder on sys.path by itself.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
