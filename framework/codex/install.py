"""`hookchain install --harness codex`: hookchain's hooks in Codex's config.toml, and their trust.

Codex reads hooks from `config.toml` (`$CODEX_HOME`, default `~/.codex`, or a project's
`.codex/`) and runs a hook only once it is trusted: an untrusted hook is skipped without a word.
Trust is a hash per hook in `[hooks.state."<key>"] trusted_hash`, the key and hash being what
Codex's own app server reports (`codex app-server`, `hooks/list`). So the installer writes its
hooks, asks Codex for their keys and hashes, and records the trust of hookchain's hooks (and
only those) — the person asked for them by running `install`. Without a `codex` binary it says
exactly how to trust them instead.

The file is TOML the person edits by hand, so hookchain writes only between its own marker lines
(`# >>> hookchain …` / `# <<< hookchain …`): uninstall removes those blocks and nothing else, a
changed result is checked to parse before it is written, and the previous file is kept beside.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from framework.claude_code.install import (
    MARKER,
    InstallError,
    InstallPlan,
    LedgerChange,
    client_command,
)
from framework.codex.mapping import EVENTS
from framework.core import plugin_settings as contributed

__all__ = ["EVENTS", "TRUST_HELP", "CodexHook", "CodexUnavailable", "Scope"]

Scope = Literal["user", "project"]

HOOKS_BLOCK = "hooks"
TRUST_BLOCK = "trust"
SETTINGS_BLOCK = "settings"
"""Plugins' settings (`harness_settings`): at the top of the file, since top-level keys must
come before the first table; nested keys are written dotted, one `# plugin: <name>` section
each. What install wrote is also recorded beside the file (as for Claude Code): the block is
text the person can edit, and an edited value read back as install's would be reset by the
next install and removed by uninstall."""
_PLUGIN_LINE = "# plugin: "
TIMEOUTS_S: Mapping[str, int] = {"SessionEnd": 3}
"""Codex clamps a SessionEnd hook above 3 s (with a warning)."""
DEFAULT_TIMEOUT_S = 30
APP_SERVER_TIMEOUT_S = 20.0


def codex_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    chosen = env.get("CODEX_HOME")
    return Path(chosen) if chosen else Path(env.get("HOME") or Path.home()) / ".codex"


def config_path(scope: Scope, project_dir: Path, environ: Mapping[str, str] | None = None) -> Path:
    if scope == "user":
        return codex_home(environ) / "config.toml"
    return project_dir / ".codex" / "config.toml"


def _begin(block: str) -> str:
    return f"# >>> hookchain {block} (written by `hookchain install --harness codex`) >>>"


def _end(block: str) -> str:
    return f"# <<< hookchain {block} <<<"


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def hooks_block(
    events: Sequence[str] = EVENTS, python: str | None = None, client: str | None = None
) -> str:
    lines = [_begin(HOOKS_BLOCK)]
    for event in dict.fromkeys(events):
        command = client_command(f"codex:{event}", python, client)
        lines += [
            f"[[hooks.{event}]]",
            f"[[hooks.{event}.hooks]]",
            'type = "command"',
            f"command = {_quote(command)}",
            f"timeout = {TIMEOUTS_S.get(event, DEFAULT_TIMEOUT_S)}",
        ]
    lines.append(_end(HOOKS_BLOCK))
    return "\n".join(lines) + "\n"


def trust_block(trusted: Mapping[str, str]) -> str:
    lines = [_begin(TRUST_BLOCK)]
    for key, digest in sorted(trusted.items()):
        lines += [f"[hooks.state.{_quote(key)}]", f"trusted_hash = {_quote(digest)}"]
    lines.append(_end(TRUST_BLOCK))
    return "\n".join(lines) + "\n"


def without_block(text: str, block: str) -> str:
    """`text` without hookchain's block of that name; a half block is refused, not guessed."""
    begin, end = _begin(block), _end(block)
    pattern = re.compile(
        rf"^{re.escape(begin[: begin.index('(')])}.*?^{re.escape(end)}[ \t]*\n?", re.S | re.M
    )
    cleaned, count = pattern.subn("", text)
    if count == 0 and (f"hookchain {block} (" in text or end in text):
        raise InstallError(
            f"hookchain's {block} block in the Codex config has lost a marker line; "
            "remove what is left of it by hand first"
        )
    return cleaned


def with_block(text: str, block: str, content: str) -> str:
    base = without_block(text, block)
    if base and not base.endswith("\n"):
        base += "\n"
    if base and not base.endswith("\n\n"):
        base += "\n"
    return base + content


def _checked(path: Path, text: str) -> str:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InstallError(
            f"{path} would not be valid TOML with hookchain's hooks ({error}); if it defines "
            "`hooks` inline (hooks = {{…}} or PreToolUse = [...]), move those to [[hooks.X]] tables"
        ) from None
    return text


def read_text(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InstallError(f"{path} is not valid TOML ({error}); fix it by hand first") from None
    return text


def _toml_value(plugin: str, key: contributed.Key, value: Any) -> str:
    if value is None or isinstance(value, float):
        raise InstallError(
            f"plugin {plugin!r} asks for Codex setting {contributed.dotted(key)!r} = "
            f"{value!r}, which hookchain does not write to TOML; ask for a string, number, "
            "boolean or list"
        )
    return json.dumps(value, ensure_ascii=False)  # JSON strings, ints, bools, lists are TOML


def settings_block(ledger: Mapping[str, Any]) -> str:
    """hookchain's settings block holding the `written` entries of a plugin-settings ledger."""
    by_plugin: dict[str, list[str]] = {}
    for entry in ledger.get("written", []):
        key = tuple(entry["key"])
        line = f"{'.'.join(_quote(part) if not part.isidentifier() else part for part in key)}"
        line += f" = {_toml_value(entry['plugin'], key, entry['value'])}"
        by_plugin.setdefault(str(entry["plugin"]), []).append(line)
    lines = [_begin(SETTINGS_BLOCK)]
    for plugin, entries in sorted(by_plugin.items()):
        lines += [f"{_PLUGIN_LINE}{plugin}", *entries]
    lines.append(_end(SETTINGS_BLOCK))
    return "\n".join(lines) + "\n"


def settings_ledger(text: str) -> dict[str, Any]:
    """What hookchain's settings block in `text` holds, as a plugin-settings ledger."""
    begin = text.find(_begin(SETTINGS_BLOCK))
    end = text.find(_end(SETTINGS_BLOCK))
    if begin < 0 or end < begin:
        return {}
    written: list[dict[str, Any]] = []
    plugin = ""
    chunk: list[str] = []
    for line in [*text[begin:end].splitlines()[1:], _PLUGIN_LINE]:
        if line.startswith(_PLUGIN_LINE):
            for key, value in contributed.leaves(tomllib.loads("\n".join(chunk))):
                written.append({"plugin": plugin, "key": list(key), "value": value})
            plugin, chunk = line.removeprefix(_PLUGIN_LINE).strip(), []
        else:
            chunk.append(line)
    return {"written": written}


def without_settings(text: str) -> str:
    """`text` without hookchain's settings block and the blank line install put after it."""
    cleaned = without_block(text, SETTINGS_BLOCK)
    return cleaned.lstrip("\n") if cleaned != text else text


def _recorded(path: Path, text: str) -> tuple[Path, str, dict[str, Any]]:
    """The record of what install wrote into `path`: its file, text and content. An install
    from before the record kept it in the block alone, so the block is read then."""
    ledger_file = contributed.ledger_path(path)
    try:
        ledger = contributed.read_ledger(ledger_file)
    except contributed.PluginSettingsError as error:
        raise InstallError(str(error)) from None
    if ledger:
        _refuse_edits_in_block(path, text, ledger)
        return ledger_file, ledger_file.read_text(encoding="utf-8"), ledger
    return ledger_file, "", settings_ledger(text)


def _refuse_edits_in_block(path: Path, text: str, ledger: Mapping[str, Any]) -> None:
    """A value the person set inside hookchain's block would be lost: install rewrites the
    block from the record and uninstall removes it. Said, with what to do, before anything."""
    wrote = {tuple(entry["key"]): entry["value"] for entry in ledger.get("written", [])}
    for entry in settings_ledger(text).get("written", []):
        key, value = tuple(entry["key"]), entry["value"]
        if key in wrote and wrote[key] == value:
            continue
        was = f"install wrote {wrote[key]!r}" if key in wrote else "install did not write it"
        raise InstallError(
            f"{path}: {contributed.dotted(key)} inside hookchain's settings block holds "
            f"{value!r} ({was}); the block is rewritten by install and removed by uninstall. "
            f"To keep your value, move its line above `{_begin(SETTINGS_BLOCK)}`; to let "
            "install set it, put back install's value; then run the command again"
        )


def _ledger_change(
    ledger_file: Path, ledger_text: str, merged: contributed.Merged
) -> LedgerChange | None:
    after = contributed.render_ledger(merged.ledger) if merged.ledger else ""
    return LedgerChange(ledger_file, ledger_text, after) if after != ledger_text else None


def _with_settings(
    path: Path,
    text: str,
    plugin_settings: Mapping[str, Mapping[str, Any]],
    unchanged: frozenset[str],
) -> tuple[str, contributed.Merged, LedgerChange | None]:
    ledger_file, ledger_text, ledger = _recorded(path, text)
    try:
        merged = contributed.merge_plugin_settings(
            tomllib.loads(text), plugin_settings, ledger, unchanged=unchanged
        )
    except contributed.PluginSettingsError as error:
        raise InstallError(str(error)) from None
    base = without_settings(text)
    change = _ledger_change(ledger_file, ledger_text, merged)
    if merged.ledger is None:
        return base, merged, change
    after = settings_block(merged.ledger) + ("\n" + base if base.strip() else "")
    try:
        tomllib.loads(after)
    except tomllib.TOMLDecodeError as error:
        names = ", ".join(sorted(plugin_settings))
        raise InstallError(
            f"{path} would not be valid TOML with the settings of {names} ({error}): a table "
            "of yours holds keys they set dotted; set those keys in your table by hand"
        ) from None
    return after, merged, change


def plan_install(
    path: Path,
    events: Sequence[str] = EVENTS,
    *,
    python: str | None = None,
    client: str | None = None,
    plugin_settings: Mapping[str, Mapping[str, Any]] | None = None,
    unchanged_plugins: frozenset[str] = frozenset(),
) -> InstallPlan:
    """`path` with hookchain's hooks; with `plugin_settings` (plugin name → nested mapping)
    also the plugins' settings, merged as for Claude Code (a key the person set is kept and
    reported; `unchanged_plugins` keep what an earlier install wrote for them)."""
    unknown = [event for event in events if event not in EVENTS]
    if unknown:
        raise InstallError(
            f"{', '.join(unknown)}: not Codex events hookchain maps; choose among "
            + ", ".join(EVENTS)
        )
    before = read_text(path)
    after = _checked(path, with_block(before, HOOKS_BLOCK, hooks_block(events, python, client)))
    if plugin_settings is None:
        return InstallPlan(path, before, after)
    after, merged, change = _with_settings(path, after, plugin_settings, unchanged_plugins)
    return InstallPlan(path, before, _checked(path, after), change, merged)


def plan_trust(path: Path, trusted: Mapping[str, str]) -> InstallPlan:
    """`path` with hookchain's trust block holding `trusted` besides the entries it had."""
    before = read_text(path)
    merged = {**recorded_trust(before), **trusted}
    after = with_block(before, TRUST_BLOCK, trust_block(merged)) if merged else before
    return InstallPlan(path, before, _checked(path, after))


def _tidy(before: str, after: str) -> str:
    if after == before:
        return after
    return after.rstrip("\n") + "\n" if after.strip() else ""


def recorded_trust(text: str) -> dict[str, str]:
    """The trust entries of hookchain's trust block (key → hash)."""
    begin = text.find(_begin(TRUST_BLOCK))
    end = text.find(_end(TRUST_BLOCK))
    if begin < 0 or end < begin:
        return {}
    block = tomllib.loads(text[begin:end])
    state = block.get("hooks", {}).get("state", {})
    return {str(k): str(v.get("trusted_hash", "")) for k, v in state.items() if isinstance(v, dict)}


def _without_trust_of(text: str, hooks_file: Path) -> str:
    """`text` with hookchain's trust block keeping only entries of hooks in other files."""
    prefix = f"{hooks_file}:"
    kept = {k: v for k, v in recorded_trust(text).items() if not k.startswith(prefix)}
    if not kept:
        return without_block(text, TRUST_BLOCK)
    return with_block(text, TRUST_BLOCK, trust_block(kept))


def plan_uninstall(path: Path, trust_file: Path | None = None) -> InstallPlan:
    """`path` without hookchain's hooks and settings blocks, and without the trust entries of
    its hooks."""
    before = read_text(path)
    ledger_file, ledger_text, _ledger = _recorded(path, before)
    after = without_settings(without_block(before, HOOKS_BLOCK))
    if trust_file is None or trust_file == path:
        after = _without_trust_of(after, path)
    change = LedgerChange(ledger_file, ledger_text, "") if ledger_text else None
    return InstallPlan(path, before, _checked(path, _tidy(before, after)), change)


def plan_untrust(trust_file: Path, hooks_file: Path) -> InstallPlan:
    """`trust_file` without the trust entries of the hooks `hooks_file` held."""
    before = read_text(trust_file)
    after = _without_trust_of(before, hooks_file)
    return InstallPlan(trust_file, before, _checked(trust_file, _tidy(before, after)))


# -- trust, as Codex itself reports it -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CodexHook:
    """One hook as `codex app-server` lists it."""

    key: str
    event: str
    command: str
    current_hash: str
    trust: str

    @property
    def ours(self) -> bool:
        return self.command.rstrip().endswith(MARKER)


class CodexUnavailable(RuntimeError):
    """No `codex` binary, or its app server did not answer; the message says which."""


def codex_binary(explicit: str | None = None) -> str:
    found = explicit or os.environ.get("HOOKCHAIN_CODEX") or shutil.which("codex")
    if not found:
        raise CodexUnavailable("no `codex` on PATH (set HOOKCHAIN_CODEX to its path)")
    return found


def list_hooks(
    cwd: Path, binary: str | None = None, environ: Mapping[str, str] | None = None
) -> list[CodexHook]:
    """Every hook Codex sees for `cwd`, with its trust, from `codex app-server` (`hooks/list`)."""
    requests: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "hookchain", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    argv = [codex_binary(binary), "app-server"]
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ if environ is None else environ),
            cwd=str(cwd),
        )
    except OSError as error:
        raise CodexUnavailable(f"cannot run {argv[0]}: {error}") from None
    try:
        return _read_hooks(process, requests)
    finally:
        process.kill()
        process.wait(timeout=5)


def _read_hooks(
    process: subprocess.Popen[bytes], requests: list[dict[str, Any]]
) -> list[CodexHook]:
    import selectors
    import time

    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
    process.stdin.flush()
    deadline = time.monotonic() + APP_SERVER_TIMEOUT_S
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("id") == 2:
                    return _hooks_of(message)
    raise CodexUnavailable("codex app-server did not answer hooks/list in time")


def _hooks_of(message: Mapping[str, Any]) -> list[CodexHook]:
    if "error" in message:
        raise CodexUnavailable(f"codex app-server refused hooks/list: {message['error']}")
    hooks: list[CodexHook] = []
    for entry in message.get("result", {}).get("data", []):
        for hook in entry.get("hooks", []):
            hooks.append(
                CodexHook(
                    key=str(hook.get("key", "")),
                    event=str(hook.get("eventName", "")),
                    command=str(hook.get("command") or ""),
                    current_hash=str(hook.get("currentHash", "")),
                    trust=str(hook.get("trustStatus", "")),
                )
            )
    return hooks


def untrusted_ours(hooks: Sequence[CodexHook]) -> list[CodexHook]:
    return [hook for hook in hooks if hook.ours and hook.trust not in ("trusted", "managed")]


def project_trust_help(project_dir: Path) -> str:
    """Why Codex lists none of a project's hooks: it reads a project's config only when trusted."""
    return (
        f"Codex reads {project_dir / '.codex' / 'config.toml'} only in a project it trusts: "
        f'add [projects."{project_dir}"] trust_level = "trusted" to '
        f"{codex_home() / 'config.toml'} (or run `codex` in {project_dir} and trust it), then "
        "run `hookchain install --harness codex --scope project` again"
    )


def missing_ours(hooks: Sequence[CodexHook], installed_in: Sequence[Path]) -> list[Path]:
    """Config files holding hookchain's hooks of which Codex lists none (so it runs none)."""
    listed = {hook.key.split(":", 1)[0] for hook in hooks if hook.ours}
    return [path for path in installed_in if str(path) not in listed]


TRUST_HELP = (
    "Codex skips hooks it does not trust, silently. Trust hookchain's hooks once: run `codex`, "
    "type /hooks and trust each hookchain entry (its command ends with `# hookchain`); or run "
    "`hookchain install --harness codex` again where `codex` is on PATH (it records the trust "
    "Codex reports for hookchain's hooks); automation that vets every hook may pass "
    "`--dangerously-bypass-hook-trust` to `codex exec`."
)
