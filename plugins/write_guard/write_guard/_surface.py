"""Extract what a tool call would write: paths, git invocations, and what stayed unclear."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from write_guard._bash import WriteTarget, analyse_bash
from write_guard._quick import sink_redirections

# Each file tool names the one file it writes in one field.
_PATH_FIELD: dict[str, str] = {
    "write": "file_path",
    "edit": "file_path",
    "multiedit": "file_path",
    "notebookedit": "notebook_path",
}
_PATCH_TOOLS = frozenset({"apply_patch", "applypatch", "patch"})
_PATCH_FIELDS = ("patch", "input", "diff", "content")
_PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)
_APPLIES_PATCH = re.compile(r"(?:^|[\s;&|(])(?:apply_patch|applypatch|patch|git\s+apply)\b")
_DIFF_HEADER = re.compile(r"^(?:---|\+\+\+) (?:\"(.+?)\"|(\S+))", re.M)


MCP_PREFIX = "mcp__"
MCP_PATH_ARGUMENTS = (
    "path", "paths", "file", "files", "file_path", "filepath", "filename", "target",
    "destination", "dest", "source", "directory", "dir", "output", "output_path",
    "*_path", "*_paths", "*_file", "*_dir", "*_directory",
)  # fmt: skip
"""Argument names (`*` globs, case-insensitive) of an MCP tool that name a file it writes."""
MCP_READ_VERBS = ("read", "get", "list", "search", "find", "view", "show", "stat", "describe",
                  "query", "fetch", "open", "tree", "glob", "grep")  # fmt: skip
"""An MCP tool named `<verb>` or `<verb>_…` (after `mcp__<server>__`) only reads."""


@dataclass(frozen=True, slots=True)
class McpPaths:
    """Which MCP tool arguments write-guard reads as paths written (like Write's file_path)."""

    arguments: tuple[str, ...] = MCP_PATH_ARGUMENTS
    read_verbs: tuple[str, ...] = MCP_READ_VERBS

    def targets(self, tool: str, tool_input: Mapping[str, Any]) -> list[str] | None:
        """The paths an MCP call writes (None: a tool that only reads)."""
        name = tool.rsplit("__", 1)[-1].casefold().replace("-", "_")
        if name.split("_", 1)[0] in self.read_verbs:
            return None
        found: list[str] = []
        for key, value in tool_input.items():
            if not any(fnmatch.fnmatchcase(key.casefold(), p) for p in self.arguments):
                continue
            values: Sequence[Any] = value if isinstance(value, list) else [value]
            found += [item for item in values if isinstance(item, str) and item]
        return found


@dataclass(frozen=True, slots=True)
class Surface:
    """The write surface of one tool call."""

    targets: tuple[WriteTarget, ...] = ()
    git_commands: tuple[tuple[str, ...], ...] = ()
    uncertain: tuple[str, ...] = ()
    malformed: str | None = None
    command: str | None = None
    programs: tuple[tuple[str, ...], ...] = ()
    git_dirs: tuple[WriteTarget, ...] = ()
    """Where the line's git calls work (see `BashAnalysis.git_dirs`)."""
    links: tuple[WriteTarget, ...] = ()
    """The targets that may become links as the line runs (see `BashAnalysis.links`)."""

    @property
    def writes(self) -> bool:
        return bool(self.targets or self.git_commands or self.malformed)


NOTHING = Surface()
SINK = "/dev/null"


def extract_surface(
    tool: str, tool_input: Mapping[str, Any], mcp: McpPaths | None = None
) -> Surface:
    """The write surface of `tool` called with `tool_input` (NOTHING for reads and other tools);
    `mcp`: how MCP tools' path arguments are read (None: MCP tools are not decided)."""
    kind = tool.casefold()
    if mcp is not None and kind.startswith(MCP_PREFIX):
        paths = mcp.targets(tool, tool_input)
        return Surface(targets=tuple(WriteTarget(p, tool) for p in paths or ()))
    field = _PATH_FIELD.get(kind)
    if field is not None:
        path = tool_input.get(field)
        if not isinstance(path, str) or not path:
            return Surface(malformed=f"{tool} without a usable {field}")
        return Surface(targets=(WriteTarget(path, tool),))
    if kind in _PATCH_TOOLS:
        text = next(
            (tool_input[f] for f in _PATCH_FIELDS if isinstance(tool_input.get(f), str)), None
        )
        if text is None:
            return Surface(malformed=f"{tool} without patch text")
        return _patch_surface(str(text), tool)
    if kind == "bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return Surface(malformed="Bash without a command string")
        return _bash_surface(command)
    return NOTHING


def patch_paths(text: str) -> list[str]:
    """Every path an apply_patch-style or unified diff patch touches."""
    paths = [match.group(1) for match in _PATCH_HEADER.finditer(text)]
    for match in _DIFF_HEADER.finditer(text):
        path = match.group(1) or match.group(2)
        if path == "/dev/null":
            continue
        paths.append(path[2:] if path.startswith(("a/", "b/")) else path)
    return list(dict.fromkeys(paths))


def _patch_surface(text: str, how: str) -> Surface:
    paths = patch_paths(text)
    if not paths:
        return Surface(malformed=f"{how} with no file headers")
    return Surface(targets=tuple(WriteTarget(path, how) for path in paths))


SURFACES_KEPT = 512
"""How many Bash lines' surfaces are kept (a session repeats `git status`, `ls`, its tests)."""
SURFACE_KEPT_CHARS = 16_384
"""Longer lines (a heredoc holding a file) are analysed every time rather than held."""


def _bash_surface(command: str) -> Surface:
    """The surface of a Bash line: a pure function of the text alone (the analysis reads no
    file, no variable and no clock; the paths it names are resolved later, per decision), so a
    line seen before reuses its frozen result."""
    if len(command) <= SURFACE_KEPT_CHARS:
        return _kept_bash_surface(command)
    return _analysed_or_quick(command)


def _analysed_or_quick(command: str) -> Surface:
    sinks = sink_redirections(command)
    if sinks is None:
        return analysed_bash_surface(command)
    if not sinks:
        return Surface(command=command)
    # What the analysis finds, but for the directory a `cd` moved to: /dev/null is absolute.
    return Surface(
        targets=tuple(WriteTarget(SINK, f"redirection {operator}") for operator in sinks),
        command=command,
    )


_kept_bash_surface = functools.lru_cache(maxsize=SURFACES_KEPT)(_analysed_or_quick)


def analysed_bash_surface(command: str) -> Surface:
    """The surface of a Bash command by the full analysis (no shortcut)."""
    analysis = analyse_bash(command)
    targets = list(analysis.targets)
    # Every name the pattern looks for contains one of these: a line without either applies
    # no patch, and the pattern (no literal start to skip ahead by) is not run over it.
    applies_patch = ("patch" in command or "apply" in command) and _APPLIES_PATCH.search(command)
    if applies_patch:
        for body in analysis.heredocs:
            targets.extend(WriteTarget(path, "patch") for path in patch_paths(body))
        if not analysis.heredocs:
            found = patch_paths(command)
            targets.extend(WriteTarget(path, "patch") for path in found)
            if not found:
                analysis.uncertain.append("a patch whose paths are not visible")
    return Surface(
        targets=tuple(targets),
        git_commands=tuple(analysis.git_commands),
        uncertain=tuple(analysis.uncertain),
        command=command,
        programs=tuple(analysis.programs),
        git_dirs=tuple(analysis.git_dirs),
        links=tuple(analysis.links),
    )


CLAUDE_TOOL_NAMES = frozenset({"claude-code", "claude-agent-sdk"})
"""Harnesses whose tools are Claude Code's (Bash, Write, Edit, …), read by their own names."""


def neutral_surface(
    tool: str,
    tool_input: Mapping[str, Any],
    kind: str,
    command: str | None,
    writes: Sequence[str],
    mcp: McpPaths | None = None,
) -> Surface:
    """Another harness's call from the contract's harness-neutral description of it
    (`ToolCall.action`): its shell command read as a Bash line, the files it writes as Write
    targets; an MCP tool by its path arguments, as under Claude Code."""
    if kind == "shell":
        if command is None:
            return Surface(malformed=f"{tool} without a command string")
        return _bash_surface(command)
    if writes:
        return Surface(targets=tuple(WriteTarget(path, tool) for path in writes))
    return extract_surface(tool, tool_input, mcp)
