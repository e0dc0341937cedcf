"""The plugins of the project a command runs in, asked for their settings and status lines.

`hookchain install`, `uninstall` and `status` load the plugins as a host in this project would
(its hookchain.toml, the HOOKCHAIN_* variables) without opening a store or running a session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.core.host import Host
from framework.core.loading import load_failures
from framework.core.plugin_calls import ask_plugins


@dataclass(frozen=True, slots=True)
class AskedSettings:
    """What the plugins ask for in a harness's settings file (plugin name → nested mapping),
    the plugins that could not be asked (their earlier values stay) and why."""

    settings: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    unchanged: frozenset[str] = frozenset()
    problems: tuple[str, ...] = ()


def project_host() -> tuple[Host | None, str | None]:
    """A host of the project in the current folder with its plugins loaded, or None and why
    (settings or plugins broken)."""
    try:
        host = Host(store="memory://")
        host.load()
    except Exception as error:  # the hooks still install; the caller says what is missing
        return None, f"{type(error).__name__}: {error}"
    return host, None


def asked_settings(host: Host, harness: str, scope: str, project_root: Path) -> AskedSettings:
    """Every loaded plugin's `harness_settings` for this harness, scope and project."""
    problems = [
        f"plugin {record.name} not loaded ({record.error or record.status}): what an earlier "
        "install wrote for it stays as it was"
        for record in load_failures(host.plugins)
    ]
    unchanged = {record.name for record in load_failures(host.plugins)}
    settings: dict[str, Mapping[str, Any]] = {}
    answers = ask_plugins(
        host,
        "harness_settings",
        Mapping,
        harness=harness,
        scope=scope,
        project_root=str(project_root),
    )
    for answer in answers:
        if answer.error is not None:
            unchanged.add(answer.plugin)
            problems.append(
                f"plugin {answer.plugin}: {answer.error}; what an earlier install wrote for it "
                "stays as it was"
            )
        elif answer.value:
            settings[answer.plugin] = answer.value
    return AskedSettings(settings, frozenset(unchanged), tuple(problems))


def status_lines(host: Host, project_root: Path | str) -> dict[str, str]:
    """Each loaded plugin's `status_line` for the project (plugin name → line); a plugin whose
    hook failed gets a line saying so."""
    lines: dict[str, str] = {}
    for answer in ask_plugins(host, "status_line", str, project_root=str(project_root)):
        lines[answer.plugin] = (
            answer.value if answer.error is None else f"status unknown: {answer.error}"
        )
    return lines
