"""`hookchain install --harness gemini`: hookchain's hooks in Gemini CLI's settings.json.

Gemini CLI keeps hooks in the same shape as Claude Code (`hooks.<Event>[].hooks[]` of
`{"type": "command", "command", "timeout"}`), with its own event names and timeouts in
milliseconds, in `~/.gemini/settings.json` (user) or a project's `.gemini/settings.json`. The
Claude Code installer's merge rules apply: hookchain's handlers are the commands ending in
`# hookchain`, every other hook and key is kept, the previous file is kept beside.

Folder trust: with `security.folderTrust.enabled`, Gemini CLI loads a project's settings (its
hooks too) only in a folder the person trusted (`~/.gemini/trustedFolders.json`); `status` says
when the project's hooks will not load for that reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from framework.claude_code.install import (
    InstallError,
    InstallPlan,
    client_command,
    read_settings,
    remove,
    render,
)
from framework.claude_code.install import plan_uninstall as claude_plan_uninstall
from framework.gemini.mapping import EVENTS

__all__ = ["EVENTS", "Scope", "plan_uninstall"]

Scope = Literal["user", "project"]

TIMEOUTS_MS: Mapping[str, int] = {"SessionEnd": 2000}
DEFAULT_TIMEOUT_MS = 30_000
HOOK_NAME = "hookchain"


def gemini_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("HOME") or Path.home()) / ".gemini"


def settings_path(
    scope: Scope, project_dir: Path, environ: Mapping[str, str] | None = None
) -> Path:
    if scope == "user":
        return gemini_home(environ) / "settings.json"
    return project_dir / ".gemini" / "settings.json"


def handler(event: str, python: str | None = None, client: str | None = None) -> dict[str, Any]:
    return {
        "type": "command",
        "name": HOOK_NAME,
        "command": client_command(f"gemini:{event}", python, client),
        "timeout": TIMEOUTS_MS.get(event, DEFAULT_TIMEOUT_MS),
    }


def merge(
    settings: Mapping[str, Any],
    events: Sequence[str] = EVENTS,
    *,
    python: str | None = None,
    client: str | None = None,
) -> dict[str, Any]:
    unknown = [event for event in events if event not in EVENTS]
    if unknown:
        raise InstallError(
            f"{', '.join(unknown)}: not Gemini CLI events hookchain maps; choose among "
            + ", ".join(EVENTS)
        )
    result = remove(settings)
    hooks = result.setdefault("hooks", {})
    for event in dict.fromkeys(events):
        group = {"matcher": "*", "hooks": [handler(event, python, client)]}
        if event not in ("BeforeTool", "AfterTool"):
            del group["matcher"]  # a matcher names tools; the other events take none
        hooks.setdefault(event, []).append(group)
    return result


def plan_install(path: Path, events: Sequence[str] = EVENTS, **options: Any) -> InstallPlan:
    before, settings = read_settings(path)
    after = render(merge(settings, events, **options))
    try:
        same = bool(before.strip()) and json.loads(before) == json.loads(after)
    except ValueError:
        same = False
    return InstallPlan(path, before, before if same else after)


plan_uninstall = claude_plan_uninstall
"""The same rule as Claude Code's: every handler whose command ends in `# hookchain` goes."""


def _folder_trust_enabled(user_settings: Mapping[str, Any]) -> bool:
    security = user_settings.get("security")
    trust = security.get("folderTrust") if isinstance(security, Mapping) else None
    enabled = trust.get("enabled") if isinstance(trust, Mapping) else None
    return enabled is not False  # Gemini CLI's default is on


def _trusted(project: Path, home: Path) -> bool:
    try:
        folders = json.loads((home / "trustedFolders.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(folders, dict):
        return False
    project = project.resolve()
    for folder, level in folders.items():
        where = Path(folder)
        if level == "TRUST_FOLDER" and where == project:
            return True
        if level == "TRUST_PARENT" and where in project.parents:
            return True
    return False


def trust_problem(project: Path, environ: Mapping[str, str] | None = None) -> str | None:
    """Why the project's hooks will not load, or None: Gemini CLI's folder-trust rule."""
    home = gemini_home(environ)
    _, user = read_settings(home / "settings.json")
    _, project_settings = read_settings(project / ".gemini" / "settings.json")
    if not project_settings.get("hooks") or not _folder_trust_enabled(user):
        return None
    if _trusted(project, home):
        return None
    return (
        f"Gemini CLI loads {project / '.gemini' / 'settings.json'} only in a trusted folder: "
        f"run `gemini` in {project} and trust the folder (or `/permissions`), or install with "
        "--scope user"
    )
