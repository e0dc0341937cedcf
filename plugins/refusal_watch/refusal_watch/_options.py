"""Options of refusal-watch (REFUSAL_WATCH_* variables or the [refusal-watch] table)."""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import Field
from pydantic_settings import BaseSettings


def default_passports_dir() -> Path:
    return Path(platformdirs.user_data_dir("hookchain")) / "passports"


def default_harness_dir() -> Path:
    return Path.home() / ".local" / "share" / "claude" / "versions"


class Options(BaseSettings):
    """Where passports and harness files live, and how the refusal log behaves."""

    passports_dir: Path = Field(default_factory=default_passports_dir)
    harness_dir: Path = Field(default_factory=default_harness_dir)
    write_wait_ms: int = Field(default=5000, gt=0)
    log_keep: int = Field(default=100, gt=0)
