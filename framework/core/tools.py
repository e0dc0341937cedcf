"""What a tool call does, whatever the harness calls its tools (contract 1.1).

Each harness names its tools its own way: Claude Code's `Bash`/`Write`/`Edit`, Codex's `Bash` and
`apply_patch`, Gemini CLI's `run_shell_command`/`write_file`/`replace`. A `ToolAction` says what
a call does in terms every plugin can act on — the shell command it runs, the files it writes, the
files it reads — so one guard rule covers every harness. `ToolCall.action` computes it from the
call's `harness`, `tool` and `input` with the tables below, so it always follows the input a
plugin passes on (no stale copy), and one table per harness is the one place for its names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

ToolKind = Literal["shell", "write", "edit", "read", "search", "web", "agent", "other"]

CLAUDE_CODE = "claude-code"
CLAUDE_AGENT_SDK = "claude-agent-sdk"
CODEX = "codex"
GEMINI = "gemini"
HARNESSES: tuple[str, ...] = (CLAUDE_CODE, CLAUDE_AGENT_SDK, CODEX, GEMINI)
"""Harness names an adapter sets on events (`Event.harness`); other names are allowed."""

current_harness: ContextVar[str] = ContextVar("hookchain_harness", default=CLAUDE_CODE)
"""The default of `Event.harness` for events built in this context.

An adapter that reuses the Claude Code mapping for another harness (Codex's Claude-shaped
payloads, the Agent SDK's callbacks) answers each hook call inside `from_harness(name)`, so every
event the shared mapping builds is tagged with the right harness without the mapping knowing.
"""


@contextmanager
def from_harness(harness: str) -> Iterator[None]:
    """Events built inside are from `harness` (unless they say otherwise)."""
    token = current_harness.set(harness)
    try:
        yield
    finally:
        current_harness.reset(token)


class ToolAction(BaseModel):
    """A harness-neutral description of one tool call.

    `command` is the shell command a shell tool runs (None for other tools); `cwd` the folder it
    runs in when the call names one; `writes` and `reads` the paths as the call gives them
    (relative ones are relative to `cwd`, else the session's cwd). `kind` is `other` for a tool
    the harness's table does not know: a guard that must fail closed treats that as unknown.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ToolKind = "other"
    command: str | None = None
    cwd: str | None = None
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()

    @property
    def is_shell(self) -> bool:
        return self.kind == "shell"

    @property
    def changes_files(self) -> bool:
        """Whether the call writes files itself (a shell command may too: read `command`)."""
        return bool(self.writes)


_Describe = Callable[[Mapping[str, Any]], ToolAction]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _paths(*values: Any) -> tuple[str, ...]:
    found: list[str] = []
    for value in values:
        if isinstance(value, str) and value:
            found.append(value)
        elif isinstance(value, list | tuple):
            found.extend(item for item in value if isinstance(item, str) and item)
    return tuple(dict.fromkeys(found))


def _command(value: Any) -> str | None:
    """A shell command given as a string, or as an argv list (Codex's `exec_command`)."""
    if isinstance(value, list | tuple) and all(isinstance(part, str) for part in value):
        if len(value) >= 3 and value[0] in ("bash", "sh", "zsh") and value[1] in ("-c", "-lc"):
            return str(value[2])  # the shell wrapper says nothing: the command is its script
        return " ".join(value) or None
    return _str(value)


def _shell(*command_keys: str, cwd_keys: tuple[str, ...] = ()) -> _Describe:
    def describe(tool_input: Mapping[str, Any]) -> ToolAction:
        command = next((c for c in (_command(tool_input.get(k)) for k in command_keys) if c), None)
        cwd = next((c for c in (_str(tool_input.get(k)) for k in cwd_keys) if c), None)
        return ToolAction(kind="shell", command=command, cwd=cwd)

    return describe


def _files(kind: ToolKind, *keys: str, writes: bool) -> _Describe:
    def describe(tool_input: Mapping[str, Any]) -> ToolAction:
        paths = _paths(*(tool_input.get(key) for key in keys))
        if writes:
            return ToolAction(kind=kind, writes=paths)
        return ToolAction(kind=kind, reads=paths)

    return describe


def _fixed(kind: ToolKind) -> _Describe:
    action = ToolAction(kind=kind)
    return lambda _input: action


_PATCH_PATH = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)


def _patch(tool_input: Mapping[str, Any]) -> ToolAction:
    """Codex's `apply_patch`: every file the patch adds, updates, deletes or moves to."""
    text = tool_input.get("input", tool_input.get("patch", tool_input.get("command")))
    if isinstance(text, list | tuple):
        text = "\n".join(part for part in text if isinstance(part, str))
    if not isinstance(text, str):
        return ToolAction(kind="edit")
    paths = [(a or b).strip() for a, b in _PATCH_PATH.findall(text)]
    return ToolAction(kind="edit", writes=_paths(paths))


_CLAUDE_TOOLS: Mapping[str, _Describe] = {
    "Bash": _shell("command"),
    "Write": _files("write", "file_path", writes=True),
    "Edit": _files("edit", "file_path", writes=True),
    "MultiEdit": _files("edit", "file_path", writes=True),
    "NotebookEdit": _files("edit", "notebook_path", writes=True),
    "Read": _files("read", "file_path", writes=False),
    "NotebookRead": _files("read", "notebook_path", writes=False),
    "Glob": _files("search", "path", writes=False),
    "Grep": _files("search", "path", writes=False),
    "LS": _files("search", "path", writes=False),
    "WebFetch": _fixed("web"),
    "WebSearch": _fixed("web"),
    "Task": _fixed("agent"),
    "Agent": _fixed("agent"),
}

_CODEX_TOOLS: Mapping[str, _Describe] = {
    # Codex's hooks name its shell tool `Bash` with `command`; its model calls it `exec_command`
    # (`cmd`, an argv list in older builds) or `shell` (`command`).
    "Bash": _shell("command", "cmd", cwd_keys=("workdir", "cwd")),
    "exec_command": _shell("cmd", "command", cwd_keys=("workdir", "cwd")),
    "shell": _shell("command", "cmd", cwd_keys=("workdir", "cwd")),
    "local_shell": _shell("command", "cmd", cwd_keys=("workdir", "cwd")),
    "apply_patch": _patch,
    "ApplyPatch": _patch,
    "Write": _CLAUDE_TOOLS["Write"],
    "Edit": _CLAUDE_TOOLS["Edit"],
    "Read": _CLAUDE_TOOLS["Read"],
    "web_search": _fixed("web"),
}

_GEMINI_TOOLS: Mapping[str, _Describe] = {
    "run_shell_command": _shell("command", cwd_keys=("dir_path", "directory")),
    "write_file": _files("write", "file_path", "absolute_path", writes=True),
    "replace": _files("edit", "file_path", "absolute_path", writes=True),
    "edit": _files("edit", "file_path", "absolute_path", writes=True),
    "read_file": _files("read", "absolute_path", "file_path", writes=False),
    "read_many_files": _files("read", "paths", "include", writes=False),
    "list_directory": _files("search", "dir_path", "path", writes=False),
    "glob": _files("search", "dir_path", "path", writes=False),
    "search_file_content": _files("search", "dir_path", "path", writes=False),
    "grep": _files("search", "dir_path", "path", writes=False),
    "web_fetch": _fixed("web"),
    "google_web_search": _fixed("web"),
}

TOOL_TABLES: Mapping[str, Mapping[str, _Describe]] = {
    CLAUDE_CODE: _CLAUDE_TOOLS,
    CLAUDE_AGENT_SDK: _CLAUDE_TOOLS,
    CODEX: _CODEX_TOOLS,
    GEMINI: _GEMINI_TOOLS,
}
"""Harness → its tool names → how to read a call's input."""

_OTHER = ToolAction()


def describe_tool(harness: str, tool: str, tool_input: Mapping[str, Any]) -> ToolAction:
    """What a call of `tool` with `tool_input` does on `harness`; kind `other` when unknown.

    MCP tools (`mcp__server__tool`) are `other` on every harness: only their server knows; so is
    every tool of a harness this host has no table for (refuse rather than guess).
    """
    describe = TOOL_TABLES.get(harness, {}).get(tool)
    if describe is None:
        return _OTHER
    return describe(tool_input)


def shell_tools(harness: str) -> frozenset[str]:
    """The tool names that run shell commands on `harness` (what a `match=` filter lists)."""
    table = TOOL_TABLES.get(harness, {})
    return frozenset(name for name, describe in table.items() if describe({}).kind == "shell")
