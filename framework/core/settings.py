"""Host settings: HOOKCHAIN_* environment variables and an optional hookchain.toml."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

APP_NAME = "hookchain"
CONFIG_FILE = "hookchain.toml"


class UserError(Exception):
    """Something the person gave is wrong (a flag, a variable, a file, a name): the message is
    one line naming what, where it came from, and what is accepted. The CLI prints it without a
    traceback and exits 2."""


class SettingsError(UserError):
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
    plugins_dir: Path | None = None
    """A folder of single-file plugins (`my_plugin.py` is plugin `my-plugin`), loaded besides the
    installed ones."""

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


def explain(
    error: ValidationError,
    prefix: str,
    *,
    table: Collection[str] = (),
    where: str = "",
    known: Collection[str] = (),
) -> str:
    """A validation error as one line naming each value, where it came from and what it accepts.

    A field among `table`'s keys came from `where` (a file's table: it wins over the
    environment); any other from the environment variable `prefix` + FIELD.
    """
    lines = []
    for problem in error.errors():
        loc = [str(part) for part in problem["loc"]]
        field = ".".join(loc) or "?"
        top = loc[0] if loc else ""
        accepted = problem.get("ctx", {}).get("expected") or problem["msg"]
        if problem["type"] == "extra_forbidden":
            lines.append(unknown_key(top, known, where))
            continue
        if top in table:
            origin = f"{field} in {where}"
        else:
            origin = f"{prefix}{field.upper()} (from the environment)"
        lines.append(f"{origin}: {accepted}; got {problem.get('input')!r}")
    return "; ".join(lines)


def unknown_key(key: str, known: Collection[str], where: str) -> str:
    """An unknown option key, with the nearest known one and the list of known ones."""
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    listed = ", ".join(sorted(known)) or "none"
    return f"unknown option {key!r} in {where}{hint} (known: {listed})"


def explain_source_error(error: SourceError, prefix: str) -> str:
    """pydantic-settings' 'error parsing value for field "x"' as a line naming the variable."""
    found = re.search(r'field "([^"]+)"', str(error))
    variable = f"{prefix}{found.group(1).upper()}" if found else f"a {prefix}* variable"
    cause = error.__cause__
    reason = f" ({cause})" if cause is not None else ""
    return (
        f"{variable} (from the environment) is not valid JSON{reason}; lists and tables are "
        'written as JSON there, e.g. \'["/tmp/a", "/tmp/b"]\''
    )


def load_settings(
    config: dict[str, Any] | None = None, *, path: Path | None = None
) -> HostSettings:
    """Settings from the [hookchain] table of hookchain.toml over the environment (a value set
    in the table wins over HOOKCHAIN_<FIELD>); `path` names the file in errors."""
    if config is None:
        path = path or find_config()
        config = read_config(path)
    table = config.get("hookchain", {})
    where = f"{path or CONFIG_FILE} [hookchain]"
    if not isinstance(table, dict):
        raise SettingsError(f"{where} must be a table, e.g. [hookchain]")
    known = list(HostSettings.model_fields)
    for key in table:
        if key not in known:
            raise SettingsError(unknown_key(key, known, where))
    try:
        return HostSettings(**table)
    except ValidationError as error:
        raise SettingsError(
            explain(error, "HOOKCHAIN_", table=table, where=where, known=known)
        ) from None
    except SourceError as error:
        raise SettingsError(explain_source_error(error, "HOOKCHAIN_")) from None


def setting_source(name: str, table: Collection[str], where: str) -> str:
    """Where a host setting's value comes from: the file's table, else HOOKCHAIN_<NAME>."""
    if name in table:
        return f"{name} in {where}"
    return f"HOOKCHAIN_{name.upper()}"
