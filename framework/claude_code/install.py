"""`hookchain install` / `uninstall`: merge hookchain's hooks into Claude Code's settings.json."""

from __future__ import annotations

import copy
import difflib
import json
import os
import py_compile
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from framework import _client
from framework.claude_code import commands as slash
from framework.core import files
from framework.core import plugin_settings as contributed

Scope = Literal["project", "local", "user"]
SCOPES: tuple[Scope, ...] = ("project", "local", "user")
DEFAULT_SCOPE: Scope = "local"
"""`.claude/settings.local.json`: the hook commands name this machine's interpreter and client by
absolute path, which do not belong in `.claude/settings.json`, the file a team commits."""
Transport = Literal["command", "http"]

MARKER = "# hookchain"
"""Ends every command hookchain writes: how `uninstall` finds its own entries and only those."""

TOKEN_ENV = "HOOKCHAIN_TOKEN"
HTTP_MIN_VERSION = (2, 1, 63)
COMMAND_ONLY_EVENTS = frozenset({"SessionStart", "Setup"})
"""Claude Code does not accept http hooks for these."""

DEFAULT_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
)
TIMEOUTS_S: Mapping[str, int] = {"SessionEnd": 2}
DEFAULT_TIMEOUT_S = 30
BACKUP_SUFFIX = ".hookchain-backup"

KNOWN_EVENTS: tuple[str, ...] = (
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "Stop",
    "SubagentStop",
    "SubagentStart",
    "StopFailure",
    "SessionStart",
    "SessionEnd",
    "Setup",
    "PreCompact",
    "PostCompact",
    "Notification",
    "MessageDisplay",
    "TaskCreated",
    "TaskCompleted",
    "TeammateIdle",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "WorktreeCreate",
    "WorktreeRemove",
    "Elicitation",
    "ElicitationResult",
)
"""Every Claude Code hook event (docs/claude-code.md has what hookchain does with each)."""
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


class InstallError(Exception):
    """The settings file cannot be changed safely; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class LedgerChange:
    """The record of plugins' settings beside a settings file: its text before and after
    (after "" : no record is left, the file goes)."""

    path: Path
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class InstallPlan:
    """A settings change: the file, its text before and after, and what plugins' settings did
    (the record beside the file, the keys added, kept and removed)."""

    path: Path
    before: str
    after: str
    ledger: LedgerChange | None = None
    plugins: contributed.Merged | None = field(default=None, compare=False)

    @property
    def changed(self) -> bool:
        ledger = self.ledger
        return self.before != self.after or (ledger is not None and ledger.before != ledger.after)

    def diff(self) -> str:
        files = [(self.path, self.before, self.after)]
        if self.ledger is not None:
            files.append((self.ledger.path, self.ledger.before, self.ledger.after))
        lines: list[str] = []
        for path, before, after in files:
            lines += difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                fromfile=f"{path} (now)",
                tofile=f"{path} (after)",
            )
        return "".join(lines)


def settings_path(scope: Scope, project_dir: Path, home: Path | None = None) -> Path:
    if scope == "user":
        return (home or Path.home()) / ".claude" / "settings.json"
    if scope == "local":
        return project_dir / ".claude" / "settings.local.json"
    return project_dir / ".claude" / "settings.json"


def companion_files(scope: Scope, project_dir: Path) -> tuple[Path, ...]:
    """The other settings file Claude Code reads with this scope's in the project: the
    committed one beside the local one, and the reverse (none for user scope)."""
    if scope == "user":
        return ()
    other: Scope = "project" if scope == "local" else "local"
    return (settings_path(other, project_dir),)


def commands_folder(scope: Scope, project_dir: Path, home: Path | None = None) -> Path:
    """Where Claude Code looks for slash command files of that scope (`local` shares the
    project's: a command file holds no machine-specific path)."""
    base = (home or Path.home()) if scope == "user" else project_dir
    return base / ".claude" / "commands"


def write_command_files(
    folder: Path, commands: Mapping[str, tuple[str, str]], *, dry_run: bool = False
) -> tuple[list[Path], list[Path]]:
    """One command file per plugin command, so Claude Code lets `/name` through to the hooks.
    A file of the same name that hookchain did not write is left alone. (Written, skipped.)"""
    written: list[Path] = []
    skipped: list[Path] = []
    for path, text in slash.command_files(folder, commands).items():
        if path.exists() and not slash.is_ours(path):
            skipped.append(path)
            continue
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        written.append(path)
        if not dry_run:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return written, skipped


def remove_command_files(folder: Path, *, dry_run: bool = False) -> list[Path]:
    """The command files hookchain wrote in `folder`, removed."""
    if not folder.is_dir():
        return []
    ours = sorted(path for path in folder.glob("*.md") if slash.is_ours(path))
    if not dry_run:
        for path in ours:
            path.unlink()
    return ours


def find_project_root(cwd: Path, environ: Mapping[str, str] | None = None) -> Path:
    """Where Claude Code reads project settings: $CLAUDE_PROJECT_DIR, else the git root above
    `cwd`, else `cwd` (so `install` run from a subfolder changes the project's file)."""
    env = os.environ if environ is None else environ
    given = env.get("CLAUDE_PROJECT_DIR")
    if given:
        return Path(given).resolve()
    here = cwd.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def check_events(events: Sequence[str]) -> tuple[str, ...]:
    """The events, each a known Claude Code hook event; else an error naming the known ones."""
    by_lower = {name.lower(): name for name in KNOWN_EVENTS}
    for event in events:
        if event in KNOWN_EVENTS:
            continue
        suggestion = by_lower.get(event.lower()) or next(
            iter(difflib.get_close_matches(event, KNOWN_EVENTS, n=1)), None
        )
        hint = f"; did you mean {suggestion}?" if suggestion else ""
        raise InstallError(
            f"{event!r} is not a Claude Code hook event{hint} Known events: "
            + ", ".join(KNOWN_EVENTS)
        )
    return tuple(events)


def client_command(event: str, python: str | None = None, client: str | None = None) -> str:
    """The shell command of one event: the absolute interpreter, `-S`, the client, the marker."""
    interpreter = sys.executable if python is None else python
    if not Path(interpreter).is_absolute():
        # Claude Code runs hooks with its own PATH and cwd: only an absolute path is certain.
        raise InstallError(f"the interpreter path {interpreter!r} is not absolute")
    script = client or str(Path(_client.__file__).resolve())
    return f"{shlex.quote(interpreter)} -S {shlex.quote(script)} {event} {MARKER}"


def command_handler(
    event: str, python: str | None = None, client: str | None = None
) -> dict[str, Any]:
    return {
        "type": "command",
        "command": client_command(event, python, client),
        "timeout": TIMEOUTS_S.get(event, DEFAULT_TIMEOUT_S),
    }


def http_handler(event: str, port: int) -> dict[str, Any]:
    """An http hook whose token comes from the environment, never from this (committable) file."""
    return {
        "type": "http",
        "url": f"http://127.0.0.1:{port}/hook?event={event}",
        "headers": {"Authorization": f"Bearer ${TOKEN_ENV}"},
        "allowedEnvVars": [TOKEN_ENV],
        "timeout": TIMEOUTS_S.get(event, DEFAULT_TIMEOUT_S),
    }


def precompile_client() -> Path:
    """Write the client's bytecode now, so no hook call compiles it (nor needs a writable dir)."""
    from framework import _client_core, _launch

    launched = py_compile.compile(_launch.__file__, doraise=True)  # the client imports it
    written = py_compile.compile(_client_core.__file__, doraise=True)
    if written is None or launched is None:
        raise InstallError("the hook client could not be byte-compiled")
    return Path(written)


def is_ours(handler: object) -> bool:
    if not isinstance(handler, Mapping):
        return False
    if handler.get("type") == "http":
        env = handler.get("allowedEnvVars")
        return isinstance(env, list) and TOKEN_ENV in env
    command = handler.get("command")
    return isinstance(command, str) and command.rstrip().endswith(MARKER)


def _checked_hooks(settings: Mapping[str, Any]) -> dict[str, Any]:
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError("settings `hooks` is not an object; fix it by hand first")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise InstallError(f"settings `hooks.{event}` is not a list; fix it by hand first")
    return hooks


def remove(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` without hookchain's handlers; every other hook, group and key is kept as is."""
    result = copy.deepcopy(dict(settings))
    hooks = _checked_hooks(result)
    for event in list(hooks):
        kept_groups = []
        for group in hooks[event]:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(is_ours(h) for h in handlers):
                kept_groups.append(group)
                continue
            remaining = [h for h in handlers if not is_ours(h)]
            if remaining:
                kept_groups.append({**group, "hooks": remaining})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if "hooks" in result and not hooks and "hooks" not in settings:
        del result["hooks"]
    return result


def merge(
    settings: Mapping[str, Any],
    events: Sequence[str] = DEFAULT_EVENTS,
    *,
    transport: Transport = "command",
    port: int | None = None,
    keep_pre_tool_use_on_command: bool = False,
    python: str | None = None,
    client: str | None = None,
) -> dict[str, Any]:
    """`settings` with one hookchain handler per event (matcher `""`), replacing earlier ones."""
    check_events(events)
    if transport == "http" and port is None:
        raise InstallError("the http transport needs the host's port")
    result = remove(settings)
    hooks = result.setdefault("hooks", {})
    for event in dict.fromkeys(events):
        on_command = (
            transport == "command"
            or event in COMMAND_ONLY_EVENTS
            or (event == "PreToolUse" and keep_pre_tool_use_on_command)
        )
        handler = (
            command_handler(event, python, client) if on_command else http_handler(event, port or 0)
        )
        hooks.setdefault(event, []).append({"matcher": "", "hooks": [handler]})
    return result


def render(settings: Mapping[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def read_settings(path: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and object; an absent file is empty. Unreadable JSON is refused."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    if not text.strip():
        return text, {}
    try:
        settings = json.loads(text)
    except ValueError as error:
        raise InstallError(f"{path} is not valid JSON ({error}); fix it by hand first") from None
    if not isinstance(settings, dict):
        raise InstallError(f"{path} does not hold a JSON object; fix it by hand first")
    return text, settings


def plan_install(
    path: Path,
    events: Sequence[str] = DEFAULT_EVENTS,
    *,
    plugin_settings: Mapping[str, Mapping[str, Any]] | None = None,
    unchanged_plugins: Collection[str] = (),
    elsewhere: Sequence[Path] = (),
    **options: Any,
) -> InstallPlan:
    """The change that installs hookchain's hooks and, unless `plugin_settings` is None (the
    plugins could not be asked), what the plugins ask for in the same file (plugin name →
    nested mapping); `unchanged_plugins` keep what an earlier install wrote for them (they
    could not be asked this time). A key the person set in one of the `elsewhere` files
    (the harness reads them with this one) is the person's too: kept, not written here."""
    before, settings = read_settings(path)
    merged = merge(settings, events, **options)
    if plugin_settings is None:
        return _plan(path, before, merged, None, None)
    ledger_file = contributed.ledger_path(path)
    ledger_text, ledger = _read_ledger(ledger_file)
    others = {str(other): read_settings(other)[1] for other in elsewhere if other != path}
    plugins = contributed.merge_plugin_settings(
        merged, plugin_settings, ledger, unchanged=unchanged_plugins, elsewhere=others
    )
    change = _ledger_change(ledger_file, ledger_text, ledger, plugins)
    return _plan(path, before, plugins.settings, change, plugins)


def plan_uninstall(path: Path) -> InstallPlan:
    """The change that removes hookchain's hooks and what plugins' settings install wrote."""
    before, settings = read_settings(path)
    ledger_file = contributed.ledger_path(path)
    ledger_text, ledger = _read_ledger(ledger_file)
    if not before and not ledger_text:
        return InstallPlan(path, before, before)
    plugins = contributed.remove_plugin_settings(remove(settings), ledger)
    change = _ledger_change(ledger_file, ledger_text, ledger, plugins)
    if not before:
        return InstallPlan(path, before, before, change, plugins)
    return _plan(path, before, plugins.settings, change, plugins)


def _plan(
    path: Path,
    before: str,
    settings: Mapping[str, Any],
    ledger: LedgerChange | None,
    plugins: contributed.Merged | None,
) -> InstallPlan:
    after = render(settings)
    return InstallPlan(path, before, before if _same(before, after) else after, ledger, plugins)


def _read_ledger(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        ledger = contributed.read_ledger(path)
    except contributed.PluginSettingsError as error:
        raise InstallError(str(error)) from None
    return (path.read_text(encoding="utf-8") if ledger else ""), ledger


def _ledger_change(
    path: Path, text: str, ledger: Mapping[str, Any], plugins: contributed.Merged
) -> LedgerChange | None:
    if plugins.ledger is None:
        return LedgerChange(path, text, "") if text else None
    after = contributed.render_ledger(plugins.ledger)
    same = bool(ledger) and contributed.render_ledger(ledger) == after
    return LedgerChange(path, text, text if same else after)


def _same(before: str, after: str) -> bool:
    """Unchanged content is left alone even when the file is formatted differently."""
    if not before.strip():
        return False
    try:
        return bool(json.loads(before) == json.loads(after))
    except ValueError:
        return False


def apply(plan: InstallPlan) -> Path | None:
    """Write the plan atomically. The file as it was before hookchain first changed it is kept
    beside it, once: later changes never overwrite that backup. The backup's path, if any."""
    if not plan.changed:
        return None
    plan.path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600
    if plan.path.exists():
        mode = plan.path.stat().st_mode & 0o777
        backup = plan.path.with_name(plan.path.name + BACKUP_SUFFIX)
        if not backup.exists():
            shutil.copy2(plan.path, backup)
            backup.chmod(0o600)
    if plan.before != plan.after:
        files.write_private(plan.path, plan.after, mode=mode)
    ledger = plan.ledger
    if ledger is not None and ledger.before != ledger.after:
        if ledger.after:
            files.write_private(ledger.path, ledger.after, mode=mode)
        else:
            ledger.path.unlink(missing_ok=True)
    return backup


def parse_version(text: str) -> tuple[int, int, int] | None:
    match = _VERSION.search(text)
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def claude_version(executable: str = "claude") -> tuple[int, int, int] | None:
    """The installed Claude Code's version, or None when `claude` is not on PATH or says nothing."""
    found = shutil.which(executable)
    if found is None:
        return None
    try:
        done = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_version(done.stdout)


def check_http_support(version: tuple[int, int, int] | None) -> str | None:
    """Refuse http hooks on a Claude Code older than them; a warning when the version is unknown."""
    if version is None:
        return "could not run `claude --version`; http hooks need Claude Code 2.1.63 or later"
    if version < HTTP_MIN_VERSION:
        shown = ".".join(map(str, version))
        raise InstallError(
            f"Claude Code {shown} has no http hooks (they arrived in 2.1.63); "
            "upgrade Claude Code or install with --transport command"
        )
    return None
