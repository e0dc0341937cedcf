"""Host settings: HOOKCHAIN_* environment variables and an optional hookchain.toml."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

APP_NAME = "hookchain"
CONFIG_FILE = "hookchain.toml"


class SettingsError(Exception):
    """Settings could not be read; the message names the variable and the accepted values."""


def data_dir() -> Path:
    """hookchain's per-user data dir (stores, secrets, passports)."""
    override = os.environ.get("HOOKCHAIN_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir(APP_NAME))


def default_store_url() -> str:
    return f"sqlite:///{data_dir() / 'store.sqlite3'}"


def _split(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class HostSettings(BaseSettings):
    """Settings of a host. Environment: HOOKCHAIN_<FIELD>; file: the [hookchain] table."""

    model_config = SettingsConfigDict(env_prefix="HOOKCHAIN_", extra="ignore")

    store: str = Field(default_factory=default_store_url)
    plugins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    disable_plugins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    log_level: Literal["debug", "info", "warning", "error"] = "warning"
    handler_budget: float = Field(default=2.0, gt=0)
    session_end_budget: float = Field(default=1.5, gt=0)
    max_dispatch_depth: int = Field(default=8, ge=1, le=64)
    session_ttl: float = Field(default=7 * 24 * 3600.0, gt=0)

    _split_lists = field_validator("plugins", "disable_plugins", mode="before")(_split)

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


def find_config(start: Path | None = None) -> Path | None:
    """The nearest hookchain.toml from `start` (default: cwd) upwards, or HOOKCHAIN_CONFIG."""
    override = os.environ.get("HOOKCHAIN_CONFIG")
    if override:
        return Path(override)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate
    return None


def read_config(path: Path | None) -> dict[str, Any]:
    """The parsed hookchain.toml (empty without one); a clear error on bad TOML."""
    if path is None:
        return {}
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise SettingsError(f"cannot read {path}: {error}") from None


def explain(error: ValidationError, prefix: str, source: str = "environment") -> str:
    """A validation error as lines naming each variable and what it accepts."""
    lines = []
    for problem in error.errors():
        field = ".".join(str(part) for part in problem["loc"]) or "?"
        variable = f"{prefix}{field.upper()}"
        accepted = problem.get("ctx", {}).get("expected") or problem["msg"]
        lines.append(f"{variable} (from the {source}): {accepted}; got {problem.get('input')!r}")
    return "; ".join(lines)


def load_settings(config: dict[str, Any] | None = None) -> HostSettings:
    """Settings from the environment over the [hookchain] table of hookchain.toml."""
    if config is None:
        config = read_config(find_config())
    table = config.get("hookchain", {})
    try:
        return HostSettings(**table)
    except ValidationError as error:
        raise SettingsError(explain(error, "HOOKCHAIN_")) from None
