"""Which route enforces shell writes, and how write-guard says so to the person. Pure.

Three routes: Claude Code's own sandbox (its settings, written from the policy, in every
permission mode; only while they are the policy's); write-guard's bwrap rewrite of each
command (`updatedInput`: holds only with Claude Code's permission checks off, since with them
on Claude Code checks its rules on the rewritten command); and none, where the line analysis
decides alone and fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from write_guard._claude_sandbox import ClaudeSettings

Route = Literal["claude-sandbox", "bwrap-rewrite", "none"]

SETTINGS_HARNESS = "claude-code"
"""The one harness whose sandbox comes from the workspace's settings files: the Agent SDK loads
none of them unless told (`setting_sources`), so they never switch its sandbox on."""

UNCHECKED_MODE = "bypassPermissions"
"""The one Claude Code permission mode that runs a command without checking its rules."""

INSTALL_HINT = "`hookchain install` writes Claude Code's sandbox settings from the policy"
RERUN_HINT = "run `hookchain install` again, then `hookchain status` to see them match"
FALLBACK = "the command line is analysed instead and refused when it cannot be read fully"
LAUNCH_FLAGS = "--add-dir, --settings, --setting-sources and --managed-settings"
COMMAND_LINE_SEEN = (
    f"a session's Claude Code command line counts too ({LAUNCH_FLAGS}, read at each command: "
    "one that widens the sandbox leaves the line analysis to decide)"
)
COMMAND_LINE_UNSEEN = (
    "Claude Code's command line cannot be read on this platform: a session started with "
    f"{LAUNCH_FLAGS.replace(' and ', ' or ')} may widen its sandbox unseen"
)


def permission_checks(mode: str | None) -> bool:
    """Whether the harness checks its permission rules on the command it runs: every mode but
    `bypassPermissions`, an unknown one included. None (the harness did not say) is not
    counted as on: the rewrite then still confines what runs, it may only be refused."""
    return mode is not None and mode != UNCHECKED_MODE


@dataclass(frozen=True, slots=True)
class Facts:
    """What decides the route in a project, outside any call."""

    claude: ClaudeSettings
    """The workspace's Claude Code sandbox settings against the policy: settings that let a
    command do more than the policy are not counted on (the route is as without them)."""
    bwrap_reason: str
    """`bubblewrap` when write-guard's own sandbox works here, else why not."""
    bwrap_works: bool
    missing_tools: tuple[str, ...] = ()
    """What Claude Code's sandbox needs and this machine lacks (`bwrap`, `socat`)."""
    command_line: bool = True
    """Whether a session's Claude Code command line can be read here (`/proc`)."""


def route_at_rest(facts: Facts) -> Route:
    """The route of a command with permission checks off (with them on, `bwrap-rewrite`
    becomes `none`). Claude Code's sandbox switched on with settings that let a command do
    more than the policy is no route, and leaves none to write-guard's wrapper either: the
    wrapper's mounts of paths that sandbox hides or binds itself fail inside it (`Can't find
    source path`), so every wrapped command would fail; the line analysis decides."""
    claude = facts.claude
    if claude.holds:
        return "claude-sandbox"
    if claude.on:
        return "none"
    return "bwrap-rewrite" if facts.bwrap_works else "none"


def differs(mismatch: str) -> str:
    """The words for Claude Code sandbox settings that let a command do more than the policy."""
    return (
        "Claude Code's sandbox is on in .claude/ but its settings differ from write-guard's "
        f"policy ({mismatch}), so write-guard does not count on it (and its own sandbox cannot "
        "run inside it)"
    )


def left(mismatch: str) -> str:
    """Why Claude Code's sandbox, on, is not the route: in a refusal, and once per session
    and difference when a route leaves it mid-session."""
    return f"{differs(mismatch)}; to use it, {RERUN_HINT}"


def lacks(mismatch: str) -> str:
    """The words for Claude Code sandbox settings that only let a command do less."""
    return (
        f"its settings lack paths of write-guard's policy ({mismatch}): commands writing there fail"
    )


def status_line(facts: Facts) -> str:
    """The line `hookchain status` shows for write-guard in a project."""
    route = route_at_rest(facts)
    claude = facts.claude
    missing = ""
    if claude.on and facts.missing_tools:
        missing = (
            f"; {' and '.join(facts.missing_tools)} not installed: Claude Code refuses to "
            "start until they are (apt-get install bubblewrap socat)"
        )
    if route == "claude-sandbox":
        line = "shell writes: Claude Code's sandbox, in every permission mode"
        if claude.mismatch is None:
            line += " (its settings in .claude/ match write-guard's policy)"
        else:
            line += f", but {lacks(claude.mismatch)}; {RERUN_HINT}"
        seen = COMMAND_LINE_SEEN if facts.command_line else COMMAND_LINE_UNSEEN
        return f"{line}; {seen}{missing}"
    if claude.on and claude.mismatch is not None:
        return (
            "shell writes: NONE as write-guard's policy says: line analysis only, failing "
            f"closed ({differs(claude.mismatch)}): {RERUN_HINT}{missing}"
        )
    if route == "bwrap-rewrite":
        return (
            "shell writes: write-guard's bwrap rewrite, in bypassPermissions mode only; in "
            "default, acceptEdits and plan mode NONE: not OS-enforced, line analysis only, "
            f"failing closed (no Claude Code sandbox settings: {INSTALL_HINT})"
        )
    return (
        f"shell writes: NONE: not OS-enforced ({facts.bwrap_reason}); line analysis only, "
        "failing closed"
    )


def session_warning(facts: Facts, harness: str, claude_like: bool) -> str | None:
    """What the person is told at the start of a session when shell writes are not (or not
    always) enforced by the OS as the policy says, or Claude Code's sandbox settings are not
    the policy's; None when they are."""
    if not claude_like:
        return (
            f"write-guard: shell writes are NOT enforced by the OS under {harness} (it does not "
            f"run a rewritten command); {FALLBACK}."
        )
    route = route_at_rest(facts)
    claude = facts.claude
    if route == "claude-sandbox":
        if claude.mismatch is None:
            return None
        return (
            f"write-guard: Claude Code's sandbox holds, but {lacks(claude.mismatch)}; {RERUN_HINT}."
        )
    if claude.on and claude.mismatch is not None:
        return (
            f"write-guard: {differs(claude.mismatch)}: shell writes are NOT enforced by the OS "
            f"as the policy says, and {FALLBACK}. To use it, {RERUN_HINT}."
        )
    if route == "bwrap-rewrite":
        return (
            "write-guard: shell writes are enforced by the OS only in bypassPermissions mode "
            "here (write-guard's bubblewrap); with Claude Code's permission checks on (default, "
            f"acceptEdits, plan) they are NOT, and {FALLBACK}. {INSTALL_HINT}."
        )
    return (
        f"write-guard: shell writes are NOT enforced by the OS here ({facts.bwrap_reason}); "
        f"{FALLBACK}."
    )


def checks_reason(mode: str | None) -> str:
    """Why no OS sandbox confines a shell command under Claude Code's permission checks."""
    return (
        f"Claude Code checks its permission rules in this session ({mode or 'unknown'} mode) "
        "and its sandbox settings are not in place"
    )


def checks_warning(mode: str) -> str:
    """The once-per-session message when permission checks turn the rewrite route off."""
    return (
        f"write-guard: {checks_reason(mode)}, so a command rewritten into write-guard's "
        f"sandbox would be checked instead of yours: shell writes are NOT enforced by the OS; "
        f"{FALLBACK}. {INSTALL_HINT} (restart Claude Code after)."
    )
