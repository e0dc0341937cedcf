"""What write-guard asks `hookchain install` to write, and the line `hookchain status` shows.

Both are worked out outside any session, from the options and the project alone: the same
policy a session in that project builds, the same sandbox plan Claude Code's settings carry.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import Any

from framework import data_dir, hookimpl

from write_guard._claude_sandbox import (
    REQUIRED,
    REQUIRED_TOOLS,
    sandbox_settings,
    settings_mismatch,
    workspace_sandbox,
)
from write_guard._options import Options
from write_guard._routes import Facts
from write_guard._routes import status_line as route_line
from write_guard._runtime import Guard
from write_guard._sandbox import plan_sandbox, probe

CLAUDE_CODE = "claude-code"


def expected_settings(options: Options, project_root: str) -> dict[str, Any]:
    """The `sandbox` value of Claude Code's settings for the policy of a project."""
    root = os.path.abspath(project_root)
    guard = Guard(options)
    _context, policy = guard.build(root, root, os.environ.get("HOME"), None)
    hidden = (guard.runtime_dir, str(data_dir()))
    roots: tuple[str, ...] = ()
    if policy.preset != "read-only":
        # Claude Code's sandbox brings its own /dev; `/dev/stdout` would resolve to whatever
        # this process's output is.
        extra = (root for root in policy.extra_roots if not root.startswith("/dev/"))
        roots = (policy.workspace_root, *extra)
    plan = plan_sandbox("bwrap", roots, policy.protected_paths, hidden)
    return sandbox_settings(plan, policy.workspace_root)


def missing_tools() -> tuple[str, ...]:
    """What Claude Code's sandbox needs on this machine and cannot find (Linux: bwrap, socat;
    macOS has sandbox-exec built in)."""
    if sys.platform == "darwin":
        return ()
    return tuple(tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None)


def claude_sandbox_unavailable(options: Options) -> str | None:
    """Why Claude Code's sandbox must not be switched on here (None: it may): with
    `failIfUnavailable` Claude Code would refuse to start."""
    if options.sandbox == "off":
        return "the sandbox is switched off in the write-guard options"
    if sys.platform not in ("linux", "darwin"):
        return f"Claude Code has no sandbox on {sys.platform}"
    missing = missing_tools()
    if missing:
        return f"{' and '.join(missing)} not installed (apt-get install bubblewrap socat)"
    if sys.platform == "linux":
        available = probe(options.sandbox)
        if available.bwrap is None:
            return available.reason
    return None


def project_facts(options: Options, project_root: str) -> Facts:
    """The facts that decide the route of shell commands in a project."""
    root = os.path.abspath(options.workspace_root or project_root)
    found = workspace_sandbox(root)
    available = probe(options.sandbox)
    claude = all(found.get(key) is value for key, value in REQUIRED.items())
    return Facts(
        claude_settings=claude,
        bwrap_reason=available.reason,
        bwrap_works=available.bwrap is not None,
        mismatch=settings_mismatch(found, expected_settings(options, root)) if claude else None,
        missing_tools=missing_tools() if claude else (),
    )


@hookimpl
def harness_settings(
    harness: str, scope: str, project_root: str, options: Options | None
) -> Mapping[str, Any] | None:
    """Claude Code's own sandbox, from the policy, in the project's settings files: the route
    that holds in every permission mode. Not at user scope (the paths are the project's), and
    not where Claude Code's sandbox cannot run (it would refuse to start)."""
    chosen = options if options is not None else Options()
    if harness != CLAUDE_CODE or scope == "user":
        return None
    if claude_sandbox_unavailable(chosen) is not None:
        return None
    return {"sandbox": expected_settings(chosen, project_root)}


@hookimpl
def status_line(project_root: str, options: Options | None) -> str:
    """Which route enforces shell writes in the project, plainly."""
    chosen = options if options is not None else Options()
    line = route_line(project_facts(chosen, project_root))
    why = claude_sandbox_unavailable(chosen)
    if why is not None and not line.startswith("shell writes: Claude Code"):
        line += f" (Claude Code's sandbox cannot be used here: {why})"
    return line
