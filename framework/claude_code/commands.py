"""Plugin slash commands under Claude Code: `/<command> arguments` typed by the person.

What Claude Code 2.1.197 does (found with the real binary): a `/name` with no command file is
answered "Unknown command: /name" and no hook fires. With `.claude/commands/<name>.md` present,
it fires UserPromptExpansion (`command_name`, `command_args`) and then UserPromptSubmit with the
prompt as typed (`/name args`, not expanded). A `{"decision": "block", "reason": …}` answer to
either stops the prompt before any model request and shows the reason to the person.

So `install` writes one command file per plugin command, and the bridge turns a prompt naming a
registered command into `command.run`, answered with the plugin's reply as that block reason:
shown to the person, never sent to the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from framework.core.registration import Registration

COMMAND_EVENT = "command.run"
MARKER = "<!-- hookchain command file: `hookchain uninstall` removes it -->"
_COMMAND = re.compile(r"^/([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?:\s+(.*))?$", re.DOTALL)


class _Commanded(Protocol):
    commands: dict[str, tuple[str, str]]

    def chain(self, event_name: str) -> tuple[Registration, ...]: ...


def declared_commands(host: _Commanded) -> dict[str, tuple[str, str]]:
    """Every command a host answers, name → (plugin, description): the ones plugins registered
    at run time, and each `command.run` handler's `match={"command": name}` (known at load, so
    listed before any session started)."""
    found: dict[str, tuple[str, str]] = {}
    for registration in host.chain(COMMAND_EVENT):
        spec = registration.match_spec or {}
        name = spec.get("command")
        if isinstance(name, str) and name:
            found[name] = (registration.plugin, "")
    for name, (plugin, description) in host.commands.items():
        found[name] = (plugin, description or found.get(name, ("", ""))[1])
    return dict(sorted(found.items()))


def parse_command(prompt: str, known: Mapping[str, Any]) -> tuple[str, str] | None:
    """`/name arguments` as (name, arguments) when `name` is a command in `known`; else None."""
    match = _COMMAND.match(prompt.strip())
    if match is None or match.group(1) not in known:
        return None
    return match.group(1), (match.group(2) or "").strip()


def command_file(name: str, plugin: str, description: str) -> str:
    """The `.claude/commands/<name>.md` Claude Code needs to accept `/name` at all."""
    summary = (description or f"{plugin}: answered by hookchain").replace("\n", " ")
    return (
        "---\n"
        f"description: {summary}\n"
        "argument-hint: [arguments]\n"
        "---\n"
        f"{MARKER}\n"
        f"hookchain answers /{name} itself (plugin {plugin}); this text never reaches the model.\n"
    )


def command_files(folder: Path, commands: Mapping[str, tuple[str, str]]) -> dict[Path, str]:
    """The command files for `commands` under `folder` (`.claude/commands`)."""
    return {
        folder / f"{name}.md": command_file(name, plugin, description)
        for name, (plugin, description) in commands.items()
    }


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
