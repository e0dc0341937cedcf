"""Claude Code's own sandbox, configured from write-guard's policy.

Outside `bypassPermissions` Claude Code checks its permission rules against the command it is
about to run: a command write-guard rewrote into a bubblewrap wrapper no longer matches an allow
rule (`Bash(echo:*)` is refused as "Contains expansion"), and answering `allow` would skip the
person's prompt. Claude Code's own sandbox (`sandbox` in settings.json) checks the rules on
the command as the model wrote it and then runs it in bubblewrap, in every permission mode.
These settings carry write-guard's mounts over: the extra roots writable, the protected paths
read-only, the host's own folders unreadable; no way out (`allowUnsandboxedCommands: false`
makes Claude Code ignore a model's `dangerouslyDisableSandbox`) and no silent fallback
(`failIfUnavailable: true`: Claude Code refuses to start rather than run commands unsandboxed,
e.g. without `socat`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from write_guard._sandbox import SandboxPlan

SETTINGS_FILES = ("settings.json", "settings.local.json")
"""The workspace's Claude Code settings files that may switch the sandbox on."""

CLAUDE_FILES = (
    "settings.json",
    "settings.local.json",
    # What `hookchain install` wrote into them, which `uninstall` would take out again.
    "settings.hookchain.json",
    "settings.local.hookchain.json",
)
"""Of a `.claude` folder, what Claude Code's sandbox is told to keep read-only: it binds its own
`.claude/commands` and `.claude/agents` read-only itself, and could not make their mount
points inside a `.claude` made read-only whole."""

REQUIRED_TOOLS = ("bwrap", "socat")
"""What Claude Code's sandbox runs on Linux; without them it refuses to start (see above)."""

REQUIRED = {"enabled": True, "allowUnsandboxedCommands": False, "failIfUnavailable": True}
"""What makes Claude Code's sandbox hold: on, no model-chosen way out, no unsandboxed start."""


def sandbox_settings(plan: SandboxPlan, workspace: str) -> dict[str, Any]:
    """The `sandbox` value of Claude Code's settings for a write-guard sandbox plan.

    Claude Code makes its cwd writable itself; `autoAllowBashIfSandboxed` stays off, so a
    command no rule covers still asks the person."""
    real = os.path.realpath(workspace)
    hidden = [*plan.hidden_dirs, *plan.hidden_files]
    read_only: list[str] = []
    for path in (*plan.read_only, *plan.missing_protected):
        if os.path.basename(path) == ".claude":
            read_only += [os.path.join(path, name) for name in CLAUDE_FILES]
        else:
            read_only.append(path)
    return {
        **REQUIRED,
        "autoAllowBashIfSandboxed": False,
        # Sorted: the same policy gives the same settings whichever paths exist yet, so a
        # second install changes nothing.
        "filesystem": {
            "allowWrite": sorted({path for path in plan.writable if path != real}),
            "denyWrite": sorted({*read_only, *hidden}),
            "denyRead": sorted(set(hidden)),
        },
    }


def workspace_sandbox(workspace: str) -> dict[str, Any]:
    """The `sandbox` value Claude Code reads from the workspace's settings files: the local
    file over the project's, key by key, with the `filesystem` lists of both."""
    found: dict[str, Any] = {}
    paths: dict[str, list[str]] = {}
    for name in SETTINGS_FILES:
        try:
            with open(os.path.join(workspace, ".claude", name), encoding="utf-8") as handle:
                settings = json.load(handle)
        except (OSError, ValueError):
            continue
        sandbox = settings.get("sandbox") if isinstance(settings, dict) else None
        if not isinstance(sandbox, dict):
            continue
        found.update(sandbox)
        files = sandbox.get("filesystem")
        if isinstance(files, dict):
            for key, value in files.items():
                if isinstance(value, list):
                    paths.setdefault(key, []).extend(str(item) for item in value)
    if paths:
        found["filesystem"] = paths
    return found


def claude_sandboxed(workspace: str) -> bool:
    """Whether the workspace's Claude Code settings run Bash in Claude Code's sandbox so that
    it holds (every value of `REQUIRED`). The files are protected: a command cannot change them
    (read-only in the sandbox, a Write to them denied)."""
    found = workspace_sandbox(workspace)
    return all(found.get(key) is value for key, value in REQUIRED.items())


def settings_mismatch(found: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """How the workspace's sandbox settings differ from the policy's (None: they match). More
    writable paths than the policy's, or fewer protected ones, are differences; so is a policy
    path missing from `allowWrite` (commands there fail)."""
    problems = [
        f"{key} is {json.dumps(found.get(key))}, not {json.dumps(value)}"
        for key, value in REQUIRED.items()
        if found.get(key) is not value
    ]
    stated = found.get("filesystem")
    files: dict[str, Any] = stated if isinstance(stated, dict) else {}
    wanted = expected["filesystem"]
    have = {key: set(files.get(key, [])) for key in wanted}
    extra = sorted(have["allowWrite"] - set(wanted["allowWrite"]))
    if extra:
        problems.append(f"allowWrite also allows {', '.join(extra)}")
    for key in wanted:
        missing = [path for path in wanted[key] if path not in have[key]]
        if missing:
            problems.append(f"{key} lacks {', '.join(missing)}")
    return "; ".join(problems) or None


def write_sandbox_settings(workspace: str, value: dict[str, Any]) -> str:
    """Merge `value` as `sandbox` into the workspace's `.claude/settings.json`; its path."""
    folder = os.path.join(workspace, ".claude")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "settings.json")
    try:
        with open(path, encoding="utf-8") as handle:
            settings = json.load(handle)
    except FileNotFoundError:
        settings = {}
    if not isinstance(settings, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    settings["sandbox"] = value
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(settings, handle, indent=2)
        handle.write("\n")
    return path
