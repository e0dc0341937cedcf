"""The observer's options: OBSERVER_* environment variables, [observer] in hookchain.toml."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings

DEFAULT_CORRECTION_CUES: tuple[str, ...] = (
    "wrong",
    "not what i asked",
    "that's not",
    "that is not",
    "try again",
    "undo",
    "revert",
    "doesn't work",
    "does not work",
    "still broken",
    "still failing",
    "you broke",
    "stop",
)


class Options(BaseSettings):
    """What the observer watches for and where it writes."""

    data_dir: Path | None = None
    """Where the log lives; default `.hookchain/observer` under the session's working directory."""

    methods: tuple[str, ...] = ()
    """Method names (skills, commands, agents) whose mention in a prompt means the person chose."""

    method_patterns: tuple[str, ...] = ()
    """Regular expressions for dictated methods; a named group `node` names the method."""

    routing_gate: bool = True
    """Ask once per turn for the routing tag when the prompt dictated a method."""

    correction_cues: tuple[str, ...] = DEFAULT_CORRECTION_CUES
    """Whole-word phrases that mark a prompt as correcting the previous turn."""

    task_ref_pattern: str = r"(?<![\w/#])(?:[A-Z][A-Z0-9]{1,9}-\d{1,7}|#\d{1,7})\b"
    """The first match in the prompt becomes `task_ref` (an issue key such as ABC-12 or #34)."""

    edit_tools: frozenset[str] = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
    """Tool names counted as edits."""

    node_fields: dict[str, str] = Field(
        default_factory=lambda: {
            "Skill": "skill",
            "Task": "subagent_type",
            "Agent": "subagent_type",
        }
    )
    """Tool name → the input field that names the skill or agent handling the turn."""

    unread_weeks: int = Field(default=54, ge=1)
    """Weeks without a read of the log before session start shows a reminder."""

    parallel_window_minutes: int = Field(default=30, ge=1)
    """Another session active within this window makes an episode `parallel_session`."""

    economy_level_env: str = ""
    """The environment variable that holds the harness's economy level, if any."""


def resolve_data_dir(options: Options, cwd: str | None) -> Path:
    """The log directory: the configured one (relative to `cwd`), or `<cwd>/.hookchain/observer`."""
    base = Path(cwd) if cwd else Path(os.getcwd())
    if options.data_dir is None:
        return base / ".hookchain" / "observer"
    configured = options.data_dir.expanduser()
    return configured if configured.is_absolute() else base / configured
