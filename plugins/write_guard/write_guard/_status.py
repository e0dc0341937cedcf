"""What write-guard asks `hookchain install` to write, and the line `hookchain status` shows.

Both are worked out outside any session, from the options and the project alone: the same
policy a session in that project builds, the same sandbox plan Claude Code's settings carry.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from collections.abc import Mapping
from typing import Any

from framework import hookimpl

from write_guard._claude_sandbox import (
    PROC,
    REQUIRED_TOOLS,
    compare_settings,
    settings_files,
    shell_roots,
)
from write_guard._options import Options
from write_guard._policy import Policy
from write_guard._routes import Facts
from write_guard._routes import status_line as route_line
from write_guard._runtime import Guard
from write_guard._sandbox import probe

CLAUDE_CODE = "claude-code"
CODEX = "codex"


def _policy_roots(options: Options, project_root: str) -> tuple[Guard, Policy, tuple[str, ...]]:
    """The guard, the policy of a project and the roots it lets shell commands write."""
    root = os.path.abspath(project_root)
    guard = Guard(options)
    policy = guard.project_policy(root, os.environ.get("HOME"), os.environ.get("CLAUDE_CONFIG_DIR"))
    return guard, policy, shell_roots(policy)


def codex_settings(options: Options, project_root: str) -> dict[str, Any]:
    """Codex's own sandbox for the policy of a project (`sandbox_mode = "workspace-write"`).

    Codex makes writable the workspace, `writable_roots`, and /tmp and $TMPDIR unless both
    exclusions are set (a workspace under /tmp would make all of /tmp writable). A read-only
    policy is `read-only`. Codex keeps `.git`, `.codex` and `.agents` of the workspace
    read-only by itself; it cannot make other single files read-only (see `codex_unprotected`).
    """
    _guard, _policy, roots = _policy_roots(options, project_root)
    if not roots:
        return {"sandbox_mode": "read-only"}
    return {
        "sandbox_mode": "workspace-write",
        "sandbox_workspace_write": {
            "writable_roots": list(roots),
            "exclude_tmpdir_env_var": True,
            "exclude_slash_tmp": True,
        },
    }


CODEX_READ_ONLY = (".git", ".codex", ".agents")
"""What Codex's workspace-write sandbox keeps read-only inside the workspace by itself."""


def codex_unprotected(options: Options, project_root: str) -> tuple[str, ...]:
    """The policy's protected files (paths, `*` patterns) Codex's sandbox leaves writable: only
    line analysis holds them under Codex."""
    _guard, policy, roots = _policy_roots(options, project_root)
    kept = tuple(os.path.join(policy.workspace_root, name) for name in CODEX_READ_ONLY)
    paths = (
        path
        for path in policy.protected_paths
        if any(_under(path, root) for root in roots)
        and not any(_under(path, read_only) for read_only in kept)
    )
    # `*/.git/…` patterns Codex holds in the workspace's own .git (not a nested repository's).
    patterns = (
        pattern
        for pattern in policy.protected_patterns
        if pattern.removeprefix("*/").split("/", 1)[0] not in CODEX_READ_ONLY
    )
    return (*paths, *dict.fromkeys(patterns))


def codex_line(options: Options, project_root: str) -> str | None:
    """What Codex's own sandbox adds in the project, from its `.codex/config.toml` (None: no
    Codex config there). Line analysis still decides every command under Codex: a hook cannot
    tell whether this session runs with the sandbox (`--sandbox` and
    `--dangerously-bypass-approvals-and-sandbox` override the file, and the hook's input is
    the same either way)."""
    root = os.path.abspath(options.workspace_root or project_root)
    path = os.path.join(root, ".codex", "config.toml")
    try:
        with open(path, "rb") as handle:
            found = tomllib.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError) as error:
        return f"under Codex: cannot read {path} ({error}); line analysis decides"
    wanted = codex_settings(options, root)
    have = {key: found.get(key) for key in wanted}
    if have != wanted:
        return (
            f"under Codex: line analysis (Codex's sandbox in {path} is not write-guard's policy; "
            "run `hookchain install --harness codex --scope project`)"
        )
    open_files = codex_unprotected(options, root)
    gaps = f"; it cannot make read-only {', '.join(open_files)}" if open_files else ""
    return (
        "under Codex: Codex's sandbox (workspace-write, write-guard's roots) where a session "
        f"runs with it{gaps}; line analysis still decides every command"
    )


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


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
    home, config_dir = os.environ.get("HOME"), os.environ.get("CLAUDE_CONFIG_DIR")
    files = settings_files(root, home, config_dir)
    claude = compare_settings(
        files, lambda: Guard(options).claude_expected(root, home, config_dir), root, home
    )
    available = probe(options.sandbox)
    return Facts(
        claude=claude,
        bwrap_reason=available.reason,
        bwrap_works=available.bwrap is not None,
        missing_tools=missing_tools() if claude.on else (),
        command_line=PROC,
    )


@hookimpl
def harness_settings(
    harness: str, scope: str, project_root: str, options: Options | None
) -> Mapping[str, Any] | None:
    """The harness's own sandbox, from the policy, in the project's settings files: for Claude
    Code the route that holds in every permission mode, for Codex its workspace-write sandbox.
    Not at user scope (the paths are the project's), and not where Claude Code's sandbox
    cannot run (it would refuse to start)."""
    chosen = options if options is not None else Options()
    if scope == "user" or harness not in (CLAUDE_CODE, CODEX):
        return None
    if harness == CODEX:
        return None if chosen.sandbox == "off" else codex_settings(chosen, project_root)
    if claude_sandbox_unavailable(chosen) is not None:
        return None
    root = os.path.abspath(project_root)
    home, config_dir = os.environ.get("HOME"), os.environ.get("CLAUDE_CONFIG_DIR")
    return {"sandbox": Guard(chosen).claude_expected(root, home, config_dir)}


@hookimpl
def status_line(project_root: str, options: Options | None) -> str:
    """Which route enforces shell writes in the project, plainly."""
    chosen = options if options is not None else Options()
    line = route_line(project_facts(chosen, project_root))
    why = claude_sandbox_unavailable(chosen)
    if why is not None and not line.startswith("shell writes: Claude Code"):
        line += f" (Claude Code's sandbox cannot be used here: {why})"
    codex = codex_line(chosen, project_root)
    return line if codex is None else f"{line}; {codex}"
