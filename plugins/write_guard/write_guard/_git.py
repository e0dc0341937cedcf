"""Recognise git invocations that rewrite history, discard work or switch branches."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

# global options that take a separate value: `git -C dir`, `git -c key=value`, ...
_GLOBAL_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}
)
_SAFE_REBASE = frozenset({"--abort", "--continue", "--quit", "--show-current-patch", "--edit-todo"})
_READ_ONLY_SWITCH = frozenset({"-h", "--help"})


def dangerous_git(argv: tuple[str, ...]) -> str | None:
    """Name of the dangerous operation `argv` (starting with `git`) performs, or None."""
    words = list(argv[1:])
    aliases: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        if word in _GLOBAL_VALUE_OPTIONS:
            if word == "-c" and index + 1 < len(words):
                key, _, value = words[index + 1].partition("=")
                if key.lower().startswith("alias."):
                    aliases[key[len("alias.") :].lower()] = value
            index += 2
            continue
        if word.startswith("-"):
            index += 1
            continue
        break
    if index >= len(words):
        return None
    subcommand, rest = words[index], words[index + 1 :]
    if subcommand.lower() in aliases:
        expansion = aliases[subcommand.lower()]
        if expansion.startswith("!"):
            return f"a shell alias ({subcommand})"
        try:
            expanded = shlex.split(expansion)
        except ValueError:
            return f"an unparsable alias ({subcommand})"
        return dangerous_git(("git", *expanded, *rest))
    return _subcommand_danger(subcommand, rest)


def _short_flags(words: Iterable[str]) -> set[str]:
    flags: set[str] = set()
    for word in words:
        if word == "--":
            break
        if word.startswith("-") and not word.startswith("--"):
            flags.update(word[1:])
    return flags


def _subcommand_danger(subcommand: str, rest: list[str]) -> str | None:
    longs = {word.split("=", 1)[0] for word in rest if word.startswith("--")}
    shorts = _short_flags(rest)
    if subcommand == "rebase":
        return None if longs & _SAFE_REBASE else "rebase"
    if subcommand == "reset" and "--hard" in longs:
        return "reset --hard"
    if subcommand == "push":
        forced = longs & {"--force", "--force-with-lease", "--force-if-includes", "--mirror"}
        if forced or "f" in shorts:
            return "push --force"
        if any(word.startswith("+") for word in rest):
            return "push of a forced (+) refspec"
        return None
    if subcommand == "checkout":
        operands = [word for word in rest if not word.startswith("-")]
        if operands or shorts & {"b", "B"} or longs & {"--orphan", "--detach"} or "--" in rest:
            return "checkout (branch switch or discarding files)"
        return None
    if subcommand == "switch":
        return None if longs & _READ_ONLY_SWITCH or not rest else "switch"
    if subcommand == "branch":
        deleting = "d" in shorts or "--delete" in longs
        if "D" in shorts or (deleting and ("f" in shorts or "--force" in longs)):
            return "branch -D"
        return None
    if subcommand == "clean":
        return "clean -f" if "f" in shorts or "--force" in longs else None
    if subcommand == "stash" and rest and rest[0] in {"drop", "clear"}:
        return f"stash {rest[0]}"
    if subcommand == "commit" and "--amend" in longs:
        return "commit --amend"
    return None
