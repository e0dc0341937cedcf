"""The plugin's options: presets per agent, roots, protected paths and the orchestrator lists."""

from __future__ import annotations

import sys
import tempfile

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from write_guard._policy import OrchestratorLists, Preset
from write_guard._sandbox import SandboxChoice
from write_guard._snapshot import SNAPSHOTS_KEPT, SNAPSHOTS_MAX_AGE_S, Retention
from write_guard._surface import MCP_PATH_ARGUMENTS, MCP_READ_VERBS, McpPaths


def _default_extra_roots() -> list[str]:
    # ~ is the session's HOME; Claude Code's plan mode writes its plan files there.
    return [tempfile.gettempdir(), "/dev/null", "/dev/stdout", "/dev/stderr", "~/.claude/plans"]


class Options(BaseSettings):
    """From WRITE_GUARD_* environment variables and the [write-guard] table of hookchain.toml."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    preset: Preset = "workspace"
    """Preset of the main loop."""
    subagent_preset: Preset | None = None
    """Preset of subagents whose type is not in `agent_presets` (None: same as `preset`)."""
    agent_presets: dict[str, Preset] = Field(default_factory=dict)
    """Subagent type → preset, e.g. {"code-reviewer": "read-only"}."""
    workspace_root: str | None = None
    """Writable root; default: $CLAUDE_PROJECT_DIR, else the session's cwd."""
    extra_writable_roots: list[str] = Field(default_factory=_default_extra_roots)
    """Roots writable in the workspace preset besides the workspace."""
    protected_paths: list[str] = Field(default_factory=list)
    """Absolute paths (or `*`-globs on the absolute path) denied in every preset."""
    git_gate: bool = True
    """Hold dangerous git operations until the person approves the exact command."""
    sandbox: SandboxChoice = "auto"
    """Shell commands: "auto" runs them in bubblewrap when it works here (else the line
    analysis, failing closed), "bwrap" the same, "off" the line analysis only. Options come
    from the host's environment and hookchain.toml, neither of which a command can change."""
    mcp_path_arguments: list[str] = Field(default_factory=lambda: list(MCP_PATH_ARGUMENTS))
    """MCP tool arguments (`*` globs) decided by resolved path like Write; [] switches it off."""
    mcp_read_verbs: list[str] = Field(default_factory=lambda: list(MCP_READ_VERBS))
    """MCP tools named `<verb>` or `<verb>_…` only read: their path arguments are not writes."""
    snapshots: bool = True
    """Record a git work tree's uncommitted changes before a shell command may change them."""
    snapshots_kept: int = Field(default=SNAPSHOTS_KEPT, ge=1)
    """The newest snapshots of a work tree kept (in its repository and write-guard's store);
    older ones are pruned when a snapshot is recorded, never the one just taken."""
    snapshots_max_age_days: float = Field(default=SNAPSHOTS_MAX_AGE_S / 86_400, ge=0)
    """Snapshots older than this are pruned too (0: no age limit)."""
    case_insensitive: bool = sys.platform in {"darwin", "win32"}
    """Compare roots case-insensitively (protected paths always are)."""
    artifact_roots: list[str] = Field(
        default_factory=lambda: list(OrchestratorLists().artifact_roots)
    )
    source_roots: list[str] = Field(default_factory=lambda: list(OrchestratorLists().source_roots))
    root_artifact_files: list[str] = Field(
        default_factory=lambda: list(OrchestratorLists().root_artifact_files)
    )

    def preset_for(self, agent_type: str | None) -> Preset:
        """The preset of the main loop (None) or of a subagent type."""
        if agent_type is None:
            return self.preset
        return self.agent_presets.get(agent_type, self.subagent_preset or self.preset)

    def mcp_paths(self) -> McpPaths | None:
        """How MCP tools' path arguments are read (None: MCP tools are not decided)."""
        if not self.mcp_path_arguments:
            return None
        arguments = tuple(name.casefold() for name in self.mcp_path_arguments)
        verbs = tuple(verb.casefold() for verb in self.mcp_read_verbs)
        return McpPaths(arguments=arguments, read_verbs=verbs)

    def retention(self) -> Retention:
        """How many snapshots a work tree keeps (see `snapshots_kept`)."""
        return Retention(self.snapshots_kept, self.snapshots_max_age_days * 86_400)

    def orchestrator_lists(self) -> OrchestratorLists:
        return OrchestratorLists(
            artifact_roots=tuple(self.artifact_roots),
            source_roots=tuple(self.source_roots),
            root_artifact_files=tuple(self.root_artifact_files),
        )
