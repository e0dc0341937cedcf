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

import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from write_guard._policy import Policy
from write_guard._sandbox import SandboxPlan, plan_sandbox

SETTINGS_FILES = ("settings.json", "settings.local.json")
"""The workspace's Claude Code settings files that may switch the sandbox on."""

MANAGED_SETTINGS = {
    "linux": "/etc/claude-code/managed-settings.json",
    "darwin": "/Library/Application Support/ClaudeCode/managed-settings.json",
}
"""Where an administrator's settings, over every other file, live per platform."""

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

WORKSPACE_FILES = (".hookchain",)
"""Of the workspace, what stays protected whether it exists yet or not: a host makes
`.hookchain` (plugins' data) at a session's first events, after install wrote the settings,
which would then no longer be the policy's (install makes it first). Not `hookchain.toml`
while it does not exist: Claude Code's sandbox holds an empty file at a path it denies that
does not exist, for as long as a command runs, and the host would read that as the project's
settings appearing mid-session (with it denied, the real binary lost a refusal-watch notice
after a background command; not denied, the notice is shown)."""

REQUIRED_TOOLS = ("bwrap", "socat")
"""What Claude Code's sandbox runs on Linux; without them it refuses to start (see above)."""

REQUIRED = {"enabled": True, "allowUnsandboxedCommands": False, "failIfUnavailable": True}
"""What makes Claude Code's sandbox hold: on, no model-chosen way out, no unsandboxed start."""


def sandbox_settings(
    plan: SandboxPlan, workspace: str, settings: Sequence[str] = ()
) -> dict[str, Any]:
    """The `sandbox` value of Claude Code's settings for a write-guard sandbox plan;
    `settings`: Claude Code's settings files outside `.claude` folders (the user's in
    `CLAUDE_CONFIG_DIR`), denied where they lie in a writable root, made or not (Claude Code
    denies its settings files itself, so an absent one changes nothing there).

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
    if real in plan.writable:
        read_only += [os.path.join(real, name) for name in WORKSPACE_FILES]
    for path in settings:
        if not os.path.exists(path) and _within(path, plan.writable):
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


def shell_roots(policy: Policy) -> tuple[str, ...]:
    """The roots a policy lets shell commands write, as a harness's own sandbox takes them."""
    if policy.preset == "read-only":
        return ()
    # A harness's sandbox brings its own /dev; `/dev/stdout` would resolve to whatever this
    # process's output is.
    extra = (root for root in policy.extra_roots if not root.startswith("/dev/"))
    return (policy.workspace_root, *extra)


def expected_settings(
    policy: Policy, hidden: Sequence[str], settings: Sequence[str] = ()
) -> dict[str, Any]:
    """The `sandbox` value of Claude Code's settings for a project's policy (`policy` as
    `hookchain install` builds it, `hidden` hookchain's runtime and data dirs, `settings` the
    user's settings file, see `sandbox_settings`): what install writes, status compares, and
    the route requires, each through `Guard.claude_expected`."""
    plan = plan_sandbox("bwrap", shell_roots(policy), policy.protected_paths, hidden)
    return sandbox_settings(plan, policy.workspace_root, settings)


def user_folder(home: str | None, config_dir: str | None, base: str) -> str:
    """Claude Code's folder of the user's settings: `CLAUDE_CONFIG_DIR` (a relative one from
    `base`, the folder Claude Code started in), else `~/.claude`."""
    if config_dir:
        return os.path.normpath(os.path.join(base, config_dir))
    return os.path.join(home or os.path.expanduser("~"), ".claude")


def user_settings(home: str | None, config_dir: str | None, base: str) -> str:
    """The user's Claude Code settings file (see `user_folder`): protected like the project's,
    since a wider `allowWrite` there widens the project's sandbox."""
    return os.path.join(user_folder(home, config_dir, base), "settings.json")


@dataclass(frozen=True, slots=True)
class Source:
    """One of the settings Claude Code merges its sandbox from."""

    path: str
    root: str
    """Where a relative path in it is taken from, as Claude Code takes it: the config dir for
    the user's, the project's folder for the project's and the local file, the folder Claude
    Code runs in for the managed ones."""
    managed: bool = False
    """An administrator's: only there does `sandbox.enabledPlatforms` count."""
    text: str | None = None
    """The settings themselves, given as JSON on Claude Code's command line (`path` names
    them). Claude Code writes them into a temp file of its own, the `root` of their relative
    paths: unknown here (""), so such a path stays relative and counts as looser."""
    required: bool = False
    """Claude Code read it at its start (`--settings FILE`): gone now, what it held is
    unknown."""


def settings_files(
    workspace: str,
    home: str | None,
    config_dir: str | None = None,
    flags: Sequence[Source] = (),
) -> tuple[Source, ...]:
    """Claude Code's settings files a session in `workspace` reads its `sandbox` from, the
    lowest first: the user's (in `CLAUDE_CONFIG_DIR`, else `~/.claude`), the project's, the
    local one, those of its command line (`flags`, see `Launch`), the managed ones. Claude
    Code merges them: a user's `allowWrite` widens the project's sandbox (shown with the real
    binary)."""
    return (*_own_files(workspace, home, config_dir), *flags, *_managed(managed_files(), workspace))


# Per shell command: the same few sources, made once (a frozen dataclass is slow to build).
@functools.lru_cache(maxsize=64)
def _own_files(workspace: str, home: str | None, config_dir: str | None) -> tuple[Source, ...]:
    user = user_folder(home, config_dir, workspace)
    files = [Source(os.path.join(user, "settings.json"), user)]
    files += [
        Source(os.path.join(workspace, ".claude", name), workspace) for name in SETTINGS_FILES
    ]
    return tuple(files)


@functools.lru_cache(maxsize=64)
def _managed(paths: tuple[str, ...], workspace: str) -> tuple[Source, ...]:
    return tuple(Source(path, workspace, managed=True) for path in paths)


PLATFORM = {"linux": "linux", "darwin": "macos"}
"""Claude Code's name of this platform, as managed `sandbox.enabledPlatforms` lists it."""


def managed_files() -> tuple[str, ...]:
    """The administrator's settings files: the managed one, then its `managed-settings.d`
    drop-ins (`*.json`, sorted), which Claude Code merges over it."""
    managed = MANAGED_SETTINGS.get(sys.platform)
    if not managed:
        return ()
    folder = os.path.join(os.path.dirname(managed), "managed-settings.d")
    try:
        names = sorted(
            name for name in os.listdir(folder) if name.endswith(".json") and name[0] != "."
        )
    except OSError:
        names = []
    return (managed, *(os.path.join(folder, name) for name in names))


GLOB = frozenset("*?[{")
"""Characters of a glob, which Claude Code's sandbox skips in a path list on Linux."""


def claude_path(raw: str, root: str, home: str) -> str | None:
    """A path of a settings file as Claude Code's sandbox takes it: `//x` is `/x`, `~` the
    home, a relative one from `root` (the folder the settings belong to), a trailing `/**`
    the folder itself; None for a glob (skipped on Linux)."""
    path = raw[1:] if raw.startswith("//") else raw
    if path.endswith("/**"):
        path = path[:-3] or "/"
    if GLOB & set(path):
        return None
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    return os.path.normpath(os.path.join(root, path))


def _edit_rule(rule: object) -> str | None:
    """The path of a permission rule `Edit(path)` (Claude Code adds it to `allowWrite`)."""
    if isinstance(rule, str) and rule.startswith("Edit(") and rule.endswith(")"):
        return rule[5:-1] or None
    return None


@dataclass(frozen=True, slots=True)
class Found:
    """What Claude Code's sandbox is made of from its settings files."""

    sandbox: dict[str, Any]
    """The `sandbox` value: a later file over an earlier one, key by key, with the
    `filesystem` lists of all (paths as Claude Code takes them)."""
    writable: tuple[str, ...] = ()
    """What the files' permissions add to `allowWrite`: `Edit(...)` allow rules and
    `additionalDirectories`."""
    loosening: tuple[str, ...] = ()
    """Settings beside the lists that let a command do more, said as differences."""
    unreadable: tuple[str, ...] = ()
    """Files that exist but cannot be read as settings, and values not of their type, said as
    differences: what Claude Code makes of them is unknown, so they count as looser."""


def _listed(value: object, name: str, path: str, said: list[str]) -> list[Any]:
    """A list value of a settings file; anything else but none at all is said (a difference
    counted as looser) and taken as empty."""
    if isinstance(value, list):
        return value
    if value is not None:
        said.append(f"{name} in {path} is not a list")
    return []


def _object(value: object, name: str, path: str, said: list[str]) -> dict[str, Any]:
    """An object value of a settings file, as `_listed`."""
    if isinstance(value, dict):
        return value
    if value is not None:
        said.append(f"{name} in {path} is not an object")
    return {}


Known = dict[str, "Known | None"]

SANDBOX_KEYS: Known = {
    "enabled": None,
    "failIfUnavailable": None,
    "autoAllowBashIfSandboxed": None,
    "allowUnsandboxedCommands": None,
    "network": {
        "allowedDomains": None,
        "deniedDomains": None,
        "allowManagedDomainsOnly": None,
        "allowUnixSockets": None,
        "allowAllUnixSockets": None,
        "allowLocalBinding": None,
        "allowMachLookup": None,
        "httpProxyPort": None,
        "socksProxyPort": None,
        "tlsTerminate": {"caCertPath": None, "caKeyPath": None},
    },
    "filesystem": {
        "allowWrite": None,
        "denyWrite": None,
        "denyRead": None,
        "allowRead": None,
        "allowManagedReadPathsOnly": None,
        # The sandbox runtime's own switch, which Claude Code sets for a relaxed policy.
        "disabled": None,
    },
    "credentials": {"files": None, "envVars": None},
    "ignoreViolations": None,
    "enableWeakerNestedSandbox": None,
    "enableWeakerNetworkIsolation": None,
    "allowAppleEvents": None,
    "excludedCommands": None,
    "ripgrep": {"command": None, "args": None},
    "bwrapPath": None,
    "socatPath": None,
    "enabledPlatforms": None,
    "filesystemPolicy": None,
}
"""Every key of `sandbox` Claude Code's settings have (2.1.197's schema, `enabledPlatforms`,
which it reads from the managed settings, and `filesystemPolicy`, its name for whether the
filesystem is confined, a remote setting there), with the keys of those that are objects.
What these settings do is known; any other key is not compared, so it counts as looser: a
newer Claude Code may loosen its sandbox with it."""

PATH_LISTS = ("allowWrite", "denyWrite", "denyRead", "allowRead")
"""The path lists of `sandbox.filesystem` (its other keys are switches)."""

STRICT = "strict"
"""The one `filesystemPolicy` that confines writes: "relaxed" confines none (Claude Code
sets `filesystem.disabled`), "relaxedIfForced" is relaxed unless a settings file asks for
the sandbox."""


def _unknown(value: dict[str, Any], known: Known, name: str, path: str) -> list[str]:
    """The keys of `value` (at `name` of the settings file `path`) that `known` lacks, at every
    depth; a value that is not an object where one is known is said by `_object`."""
    said: list[str] = []
    for key, inner in value.items():
        if key not in known:
            said.append(f"{name}.{key} in {path} is not a setting write-guard compares")
        elif (kept := known[key]) is not None and isinstance(inner, dict):
            said += _unknown(inner, kept, f"{name}.{key}", path)
    return said


def _loosening(sandbox: dict[str, Any], path: str) -> list[str]:
    """What one file's `sandbox` (of the settings file `path`) lets a command do beyond its
    lists, named where the setting is known, and every key that is not."""
    said: list[str] = []
    excluded = sandbox.get("excludedCommands")
    if excluded:
        said.append(f"excludedCommands runs {json.dumps(excluded)} outside the sandbox")
    listed = sandbox.get("filesystem")
    if isinstance(listed, dict) and listed.get("allowRead"):
        said.append(f"allowRead re-allows {json.dumps(listed['allowRead'])} within denyRead")
    if isinstance(listed, dict) and listed.get("disabled"):
        said.append("filesystem.disabled is true: Claude Code's sandbox confines no write")
    policy = sandbox.get("filesystemPolicy", STRICT)
    if policy != STRICT:
        said.append(
            f"filesystemPolicy is {json.dumps(policy)}, not {json.dumps(STRICT)} (a relaxed "
            "policy confines no write)"
        )
    network = sandbox.get("network")
    if isinstance(network, dict):
        # Ways out through a socket or (macOS) a system service that acts outside.
        for key in ("allowAllUnixSockets", "allowUnixSockets", "allowMachLookup"):
            if network.get(key):
                said.append(f"network.{key} is {json.dumps(network[key])}, not unset")
    # macOS: the first lets commands reach a system service, the second launch and script
    # applications outside the sandbox.
    for key in ("enableWeakerNestedSandbox", "enableWeakerNetworkIsolation", "allowAppleEvents"):
        if sandbox.get(key):
            said.append(f"{key} is true")
    return said + _unknown(sandbox, SANDBOX_KEYS, "sandbox", path)


def workspace_sandbox(
    files: Sequence[Source], workspace: str = "", home: str | None = None
) -> Found:
    """What Claude Code's sandbox is made of from `files` (see `settings_files`), paths taken
    from their roots, `workspace` and `home` as Claude Code does."""
    home = home or os.path.expanduser("~")
    found: dict[str, Any] = {}
    paths: dict[str, list[str]] = {}
    writable: list[str] = []
    loosening: list[str] = []
    unreadable: list[str] = []
    enabled_here = True
    for source in files:
        path, root = source.path, source.root
        try:
            if source.text is not None:
                settings = json.loads(source.text)
            else:
                # Claude Code strips a leading BOM and applies the file.
                with open(path, encoding="utf-8-sig") as handle:
                    settings = json.load(handle)
        except (FileNotFoundError, NotADirectoryError):
            if source.required:
                unreadable.append(f"cannot read {path} (gone since Claude Code read it)")
            continue
        except (OSError, ValueError) as error:
            # What Claude Code makes of it is unknown here: counted as looser.
            unreadable.append(f"cannot read {path} ({type(error).__name__})")
            continue
        if not isinstance(settings, dict):
            unreadable.append(f"cannot read {path} (not a JSON object)")
            continue
        said = unreadable
        permissions = _object(settings.get("permissions"), "permissions", path, said)
        allowed = _listed(permissions.get("allow"), "permissions.allow", path, said)
        for rule in (_edit_rule(rule) for rule in allowed):
            # `Edit(/x)` is x from the settings' folder, `//x` absolute, `x` from the cwd.
            if rule is not None and rule.startswith("/") and not rule.startswith("//"):
                writable.append(claude_path(rule[1:], root, home) or "")
            elif rule is not None:
                writable.append(claude_path(rule, workspace or root, home) or "")
        folders = permissions.get("additionalDirectories")
        for raw in _listed(folders, "permissions.additionalDirectories", path, said):
            writable.append(claude_path(str(raw), workspace or root, home) or "")
        sandbox = _object(settings.get("sandbox"), "sandbox", path, said)
        if not sandbox:
            continue
        found.update(sandbox)
        loosening += _loosening(sandbox, path)
        for key in ("network", "credentials", "ripgrep"):
            _object(sandbox.get(key), f"sandbox.{key}", path, said)
        platforms = sandbox.get("enabledPlatforms")
        if isinstance(platforms, list) and source.managed:
            # Claude Code's sandbox runs only on the platforms an administrator lists.
            enabled_here = enabled_here and PLATFORM.get(sys.platform) in platforms
        listed = _object(sandbox.get("filesystem"), "sandbox.filesystem", path, said)
        for key in PATH_LISTS:
            items = _listed(listed.get(key), f"sandbox.filesystem.{key}", path, said)
            # Claude Code trims a listed path before it takes it from the root.
            taken = (claude_path(str(item).strip(), root, home) for item in items)
            paths.setdefault(key, []).extend(item for item in taken if item is not None)
    # Only lists, whatever a file held there.
    found["filesystem"] = paths
    if not enabled_here:
        found["enabled"] = False
    return Found(found, tuple(writable), tuple(loosening), tuple(unreadable))


SESSIONS = "sessions"
"""The folder of Claude Code's config dir where each running Claude Code process keeps a
`<pid>.json` naming its session (`sessionId`), with `procStart`, its start time as
`/proc/<pid>/stat` gives it (Claude Code 2.1.197, also with `-p`; it is written shortly after
the start, at times after the session start's hooks)."""

PROC = sys.platform == "linux" and os.path.isdir("/proc/self")
"""Whether a process's command line can be read here (`/proc/<pid>/cmdline`)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """What the command line the session's Claude Code process was started with does to its
    sandbox, beyond the settings files: `--settings` adds settings, `--add-dir` writable
    folders, `--setting-sources` and `--managed-settings` change which settings count."""

    settings: tuple[Source, ...] = ()
    """Its `--settings`, merged over the local file and under the managed ones."""
    said: tuple[str, ...] = ()
    """What else it changes, said as differences counted as looser (and why it cannot be told
    how Claude Code was started)."""
    watched: tuple[tuple[str, str], ...] = ()
    """(path, what follows) for what must lie where no command may write: the record of the
    running sessions, a `--settings` file."""


UNCHECKED = Launch()
"""A command line not read: the platform has no `/proc`, or (at the session start) Claude
Code has not yet said which process is the session's."""


def launch_of(argv: Sequence[str], base: str) -> Launch:
    """What `argv` (Claude Code's command line) does to its sandbox; a relative `--settings`
    file is taken from `base`, the folder Claude Code started in. Options are read as Claude
    Code's parser reads them (`--x v`, `--x=v`, `--add-dir` taking every value up to the next
    option, nothing after `--`)."""
    settings: list[Source] = []
    said: list[str] = []
    watched: list[tuple[str, str]] = []
    index = 1
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            break
        name, equals, value = token.partition("=")
        if name not in ("--settings", "--add-dir", "--setting-sources", "--managed-settings"):
            continue
        values = [value] if equals else list(argv[index : index + 1])
        index += 0 if equals else 1
        if name == "--add-dir":
            while index < len(argv) and not (len(argv[index]) > 1 and argv[index][0] == "-"):
                values.append(argv[index])
                index += 1
            said.append(
                f"Claude Code was started with --add-dir {', '.join(values)}: its sandbox "
                "lets commands write there"
            )
        elif name == "--settings" and values:
            given = values[0].strip()
            if given.startswith("{") and given.endswith("}"):
                settings.append(Source("--settings (given inline)", "", text=given))
            else:
                path = os.path.normpath(os.path.join(base, values[0]))
                settings.append(Source(path, os.path.dirname(path), required=True))
                watched.append((path, f"--settings {path} lies where commands may write"))
        else:
            shown = f" {values[0]}" if values else ""
            said.append(
                f"Claude Code was started with {name}{shown}: which settings count then is "
                "not compared"
            )
    return Launch(tuple(settings), tuple(said), tuple(watched))


def _proc_start(pid: int) -> str | None:
    """A process's start time as `/proc/<pid>/stat` gives it (its 22nd field); None when it
    does not run."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def _proc_argv(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return [part.decode(errors="surrogateescape") for part in raw.split(b"\0")[:-1]]


def session_argvs(folder: str, session_id: str) -> tuple[tuple[str, ...], ...]:
    """The command lines of the running Claude Code processes whose record in `folder` (see
    `SESSIONS`) names `session_id`: a record is taken only while its process runs with the
    start time it gives (a pid used again by another process is not it)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return ()
    found: list[tuple[str, ...]] = []
    for name in names:
        if not name.endswith(".json") or not name[:-5].isdigit():
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                record = json.load(handle)
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or record.get("sessionId") != session_id:
            continue
        pid = int(name[:-5])
        if record.get("pid") != pid:
            continue
        argv = _proc_argv(pid)
        # After the read: a process that ended before it left its pid to the one read.
        if argv is not None and _proc_start(pid) == record.get("procStart"):
            found.append(tuple(argv))
    return tuple(found)


def session_launch(argvs: Sequence[Sequence[str]], folder: str, base: str) -> Launch:
    """What the command lines of the session's Claude Code processes (`session_argvs` of
    `folder`) do to its sandbox, all of them together. None found: it cannot be told, which
    counts as looser (but at the session start, see `LaunchCache.get`)."""
    why = f"Claude Code's record of its sessions ({folder}) lies where commands may write"
    record = (folder, f"{why}, so how it was started cannot be told")
    if not argvs:
        said = (
            f"cannot tell how Claude Code was started: no running Claude Code process in "
            f"{folder} names this session",
        )
        return Launch(said=said, watched=(record,))
    launches = [launch_of(argv, base) for argv in argvs]
    return Launch(
        tuple(dict.fromkeys(source for launch in launches for source in launch.settings)),
        tuple(dict.fromkeys(said for launch in launches for said in launch.said)),
        (record, *dict.fromkeys(item for launch in launches for item in launch.watched)),
    )


def _within(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def settings_differences(
    found: Found | dict[str, Any],
    expected: dict[str, Any],
    workspace: str = "",
    launch: Launch = UNCHECKED,
) -> tuple[list[str], list[str]]:
    """How the workspace's sandbox settings differ from the policy's: what lets a command do
    more (a flag not as required, more writable paths, fewer protected or hidden ones, a
    setting beside the lists that opens a way out, what Claude Code's command line adds), and
    what lets it do less (a policy root missing from `allowWrite`: commands there fail)."""
    if isinstance(found, dict):
        found = Found(found)
    sandbox = found.sandbox
    looser = [
        f"{key} is {json.dumps(sandbox.get(key))}, not {json.dumps(value)}"
        for key, value in REQUIRED.items()
        if sandbox.get(key) is not value
    ]
    looser += [*found.unreadable, *found.loosening]
    stated = sandbox.get("filesystem")
    files: dict[str, Any] = stated if isinstance(stated, dict) else {}
    wanted = expected["filesystem"]
    have = {key: set(files.get(key, [])) for key in wanted}
    # Claude Code makes its cwd writable itself: a path within what is writable adds nothing
    # (`denyWrite` still holds inside it).
    roots = (
        [os.path.realpath(workspace), workspace, *wanted["allowWrite"]]
        if workspace
        else [*wanted["allowWrite"]]
    )
    extra = sorted(path for path in have["allowWrite"] if not _within(path, roots))
    if extra:
        looser.append(f"allowWrite also allows {', '.join(extra)}")
    opened = sorted({path for path in found.writable if path and not _within(path, roots)})
    if opened:
        looser.append(f"permissions make {', '.join(opened)} writable")
    looser += launch.said
    looser += [why for path, why in launch.watched if _within(path, roots)]
    narrower: list[str] = []
    for key in wanted:
        missing = [path for path in wanted[key] if path not in have[key]]
        if missing:
            (narrower if key == "allowWrite" else looser).append(
                f"{key} lacks {', '.join(missing)}"
            )
    return looser, narrower


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """What the workspace's Claude Code settings make of its sandbox, against the policy."""

    on: bool
    """`sandbox.enabled` is true there: Claude Code runs Bash in its sandbox."""
    mismatch: str | None = None
    """How they differ from the policy's settings (None: they match, or the sandbox is off)."""
    looser: bool = False
    """Among the differences, one that lets a command do what the policy does not."""

    @property
    def holds(self) -> bool:
        """Claude Code's sandbox confines shell commands at least as the policy would: on, no
        way out, no unsandboxed start, no path writable or readable that the policy keeps
        from commands. A policy root it lacks only makes commands there fail (Claude Code
        makes `~/.claude/plans` on its first plan, after install), so it is said, not
        counted against it. The files are protected (read-only in either sandbox, a Write to
        them denied), so only the person changes that."""
        return self.on and not self.looser


OFF = ClaudeSettings(on=False)


def compare_settings(
    files: Sequence[Source],
    expected: Callable[[], dict[str, Any]],
    workspace: str = "",
    home: str | None = None,
    launch: Launch = UNCHECKED,
) -> ClaudeSettings:
    """The settings in `files` (with `launch.settings`) against `expected()` (called only
    when the sandbox is on), for a session in `workspace` with `home`, whose Claude Code was
    started as `launch` says."""
    found = workspace_sandbox(files, workspace, home)
    if found.sandbox.get("enabled") is not True and not found.unreadable:
        return OFF
    looser, narrower = settings_differences(found, expected(), workspace, launch)
    mismatch = "; ".join([*looser, *narrower]) or None
    return ClaudeSettings(on=True, mismatch=mismatch, looser=bool(looser))


Signature = tuple[tuple[str, int, int, int], ...]

RECHECK_S = 30.0
"""How long a comparison holds while the settings files stay the same: the policy's settings
also follow the workspace (a nested repository or a `hookchain.toml` that appears is a path to
protect), as the sandbox's walk for nested repositories does."""
RECENT_NS = 2_000_000_000
"""A settings file changed this recently is compared again at the next call: a second edit
within the file system's clock tick, of the same size, leaves the same signature."""


def settings_signature(files: Sequence[str]) -> tuple[Signature, bool]:
    """The settings files as (path, inode, mtime_ns, size), -1s for a missing one; and
    whether one changed within `RECENT_NS`."""
    found: list[tuple[str, int, int, int]] = []
    recent = False
    now = time.time_ns()
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            found.append((path, -1, -1, -1))
            continue
        found.append((path, info.st_ino, info.st_mtime_ns, info.st_size))
        recent = recent or now - info.st_mtime_ns < RECENT_NS
    return tuple(found), recent


class SettingsCache:
    """`compare_settings` per workspace, done again only when a settings file changed (or
    `RECHECK_S` passed): a `stat` per file and shell command instead of JSON reads and a
    sandbox plan."""

    def __init__(self, kept: int = 64) -> None:
        self._kept = kept
        self._known: dict[Hashable, tuple[Signature, float, ClaudeSettings]] = {}

    def get(
        self,
        key: Hashable,
        files: Sequence[Source],
        expected: Callable[[], dict[str, Any]],
        workspace: str = "",
        home: str | None = None,
        launch: Launch = UNCHECKED,
    ) -> ClaudeSettings:
        """`compare_settings`; `key` names the workspace and `launch` (hashable) too."""
        signature, recent = settings_signature([f.path for f in files if f.text is None])
        now = time.monotonic()
        known = self._known.get(key)
        if known is not None and known[0] == signature and now - known[1] < RECHECK_S:
            return known[2]
        state = compare_settings(files, expected, workspace, home, launch)
        if len(self._known) >= self._kept:
            self._known.clear()
        # A recent change is not trusted to show in the signature: compared again next time.
        self._known[key] = (signature, -math.inf if recent else now, state)
        return state


class LaunchCache:
    """`session_argvs` per (record folder, session), read again only when the folder changes
    (a Claude Code process starting or ending adds or takes out its record there): a `stat`
    per shell command."""

    def __init__(self, kept: int = 64) -> None:
        self._kept = kept
        self._known: dict[tuple[str, str, str], tuple[Signature, bool, Launch]] = {}

    def get(self, folder: str, session_id: str, base: str, at_start: bool = False) -> Launch:
        """What the session's Claude Code command line does to its sandbox (`session_launch`);
        `UNCHECKED` where no command line can be read, and `at_start` while no record names
        the session (Claude Code may not have written it yet: each command checks again)."""
        if not PROC:
            return UNCHECKED
        signature, recent = settings_signature([folder])
        key = (folder, session_id, base)
        known = self._known.get(key)
        if known is not None and known[0] == signature:
            _signature, found, launch = known
        else:
            argvs = session_argvs(folder, session_id)
            found, launch = bool(argvs), session_launch(argvs, folder, base)
            if len(self._known) >= self._kept:
                self._known.clear()
            # A change within the clock's tick may not show in the signature: read again.
            if recent:
                self._known.pop(key, None)
            else:
                self._known[key] = (signature, found, launch)
        return UNCHECKED if at_start and not found else launch


def write_sandbox_settings(workspace: str, value: dict[str, Any]) -> str:
    """Merge `value` as `sandbox` into the workspace's `.claude/settings.json`; its path."""
    folder = os.path.join(workspace, ".claude")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "settings.json")
    try:
        with open(path, encoding="utf-8-sig") as handle:
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
