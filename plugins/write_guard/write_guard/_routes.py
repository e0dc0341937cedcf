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

Route = Literal["claude-sandbox", "bwrap-rewrite", "none"]

UNCHECKED_MODE = "bypassPermissions"
"""The one Claude Code permission mode that runs a command without checking its rules."""

INSTALL_HINT = "`hookchain install` writes Claude Code's sandbox settings from the policy"
RERUN_HINT = "run `hookchain install` again, then `hookchain status` to see them match"
FALLBACK = "the command line is analysed instead and refused when it cannot be read fully"


def permission_checks(mode: str | None) -> bool:
    """Whether the harness checks its permission rules on the command it runs: every mode but
    `bypassPermissions`, an unknown one included. None (the harness did not say) is not
    counted as on: the rewrite then still confines what runs, it may only be refused."""
    return mode is not None and mode != UNCHECKED_MODE


@dataclass(frozen=True, slots=True)
class Facts:
    """What decides the route in a project, outside any call."""

    claude_on: bool
    """The workspace's Claude Code settings switch its sandbox on (`sandbox.enabled`)."""
    bwrap_reason: str
    """`bubblewrap` when write-guard's own sandbox works here, else why not."""
    bwrap_works: bool
    mismatch: str | None = None
    """How Claude Code's sandbox settings differ from the policy's (None: they match, or it
    is off). Settings that differ are not counted on: the route is as without them."""
    missing_tools: tuple[str, ...] = ()
    """What Claude Code's sandbox needs and this machine lacks (`bwrap`, `socat`)."""


def route_at_rest(facts: Facts) -> Route:
    """The route of a command with permission checks off (with them on, `bwrap-rewrite`
    becomes `none`)."""
    if facts.claude_on and facts.mismatch is None:
        return "claude-sandbox"
    return "bwrap-rewrite" if facts.bwrap_works else "none"


def differs(mismatch: str) -> str:
    """The words for Claude Code sandbox settings that are not the policy's."""
    return (
        "Claude Code's sandbox is on in .claude/ but its settings differ from write-guard's "
        f"policy ({mismatch}), so write-guard does not count on it"
    )


def status_line(facts: Facts) -> str:
    """The line `hookchain status` shows for write-guard in a project."""
    route = route_at_rest(facts)
    missing = ""
    if facts.claude_on and facts.missing_tools:
        missing = (
            f"; {' and '.join(facts.missing_tools)} not installed: Claude Code refuses to "
            "start until they are (apt-get install bubblewrap socat)"
        )
    if route == "claude-sandbox":
        return (
            "shell writes: Claude Code's sandbox, in every permission mode (its settings in "
            f".claude/ match write-guard's policy){missing}"
        )
    if facts.mismatch is not None:
        why = f"{differs(facts.mismatch)}: {RERUN_HINT}"
    else:
        why = f"no Claude Code sandbox settings: {INSTALL_HINT}"
    if route == "bwrap-rewrite":
        return (
            "shell writes: write-guard's bwrap rewrite, in bypassPermissions mode only; in "
            "default, acceptEdits and plan mode NONE: not OS-enforced, line analysis only, "
            f"failing closed ({why}){missing}"
        )
    line = (
        f"shell writes: NONE: not OS-enforced ({facts.bwrap_reason}); line analysis only, "
        "failing closed"
    )
    return line if facts.mismatch is None else f"{line} ({why}){missing}"


def session_warning(facts: Facts, harness: str, claude_like: bool) -> str | None:
    """What the person is told at the start of a session when shell writes are not (or not
    always) enforced by the OS; None when they are."""
    if not claude_like:
        return (
            f"write-guard: shell writes are NOT enforced by the OS under {harness} (it does not "
            f"run a rewritten command); {FALLBACK}."
        )
    route = route_at_rest(facts)
    if route == "claude-sandbox":
        return None
    if route == "bwrap-rewrite":
        text = (
            "shell writes are enforced by the OS only in bypassPermissions mode here "
            "(write-guard's bubblewrap); with Claude Code's permission checks on (default, "
            f"acceptEdits, plan) they are NOT, and {FALLBACK}"
        )
        hint = INSTALL_HINT
    else:
        text = f"shell writes are NOT enforced by the OS here ({facts.bwrap_reason}); {FALLBACK}"
        hint = ""
    if facts.mismatch is not None:
        return f"write-guard: {differs(facts.mismatch)}: {text}. To use it, {RERUN_HINT}."
    return f"write-guard: {text}." + (f" {hint}." if hint else "")


def checks_warning(mode: str, mismatch: str | None = None) -> str:
    """The once-per-session message when permission checks turn the rewrite route off."""
    settings = (
        "its sandbox settings are not in place"
        if mismatch is None
        else f"its sandbox settings differ from write-guard's policy ({mismatch})"
    )
    return (
        f"write-guard: Claude Code checks its permission rules in this session ({mode} mode) "
        f"and {settings}, so a command rewritten into write-guard's sandbox would be checked "
        "instead of yours: shell writes are NOT enforced by the OS; "
        f"{FALLBACK}. {INSTALL_HINT} (restart Claude Code after)."
    )
