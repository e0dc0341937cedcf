"""The control plane: Bash lines that would stop, reconfigure, uninstall or bypass hookchain.

Read on the raw text as well as on the parsed commands: a line built to hide its program
(`$(echo hookchain) serve`, a script piped to a shell) still names what it drives, and a
denial here costs the agent nothing it needs (the person runs hookchain, never the agent)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from write_guard._shell import is_computed

# Subcommands of `hookchain` that only read: the agent may run these.
_READ_ONLY = frozenset({"status", "version", "--version", "--help", "-h", "help", "replay",
                        "check", "list", "doctor"})  # fmt: skip
# Setting these in the environment of a command reconfigures the host it starts or talks to.
_ENV = re.compile(r"(?<![A-Za-z0-9_])(?:HOOKCHAIN|WRITE_GUARD)_[A-Za-z0-9_]*")
_HOST_WORDS = re.compile(
    r"(?<![\w.-])(?:hookchain|framework\._client|framework/_client\.py|-m\s+framework)(?![\w-])"
)
_DRIVING = re.compile(
    r"(?<![\w-])(?:serve|stop|approve|uninstall|install|restore|disable|enable|reload|"
    r"restart|kill|reset|config|settings|hooks?)(?![\w-])"
)
_KILLERS = frozenset({"kill", "pkill", "killall", "skill", "snice", "killall5", "fuser"})
_KILL_TARGET = re.compile(r"hookchain|framework|python|uvicorn|_client", re.IGNORECASE)
# Words of `kill` that name a process of this shell, never the host: its last background job
# (`$!`), itself (`$$`, `$BASHPID`) and job specs (`%1`).
_OWN_PIDS = frozenset({"$!", "${!}", "$$", "${$}", "$BASHPID", "${BASHPID}"})
_OWN_PID_VARIABLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=\$!$")
# pkill/pgrep options that take a value, and those that select processes by something else
# than the pattern (with no pattern they select every process they name: the host's too).
_PKILL_VALUES = frozenset({"--signal", "-u", "-U", "-g", "-G", "-P", "-s", "-t", "-F",
                           "--pidfile", "--ns", "--nslist", "-O", "--older", "-r",
                           "--runstates", "--cgroup", "-d", "--delimiter", "-q", "--queue",
                           "--euid", "--uid", "--pgroup", "--group", "--parent", "--session",
                           "--terminal"})  # fmt: skip
_KILLALL_VALUES = frozenset({"-s", "--signal", "-u", "--user", "-o", "--older-than", "-y",
                             "--younger-than", "-n", "--ns", "-Z", "--context"})  # fmt: skip


@dataclass(frozen=True, slots=True)
class ControlDenial:
    what: str


def host_identity() -> tuple[str, ...]:
    """What a process pattern can match of this process (the host): its full command line as
    pkill -f reads it, its name as pkill and killall read it, and its program files' names."""
    argv: list[str] = list(getattr(sys, "orig_argv", sys.argv))
    try:
        with open("/proc/self/cmdline", "rb") as handle:
            argv = [part.decode("utf-8", "replace") for part in handle.read().split(b"\0") if part]
        with open("/proc/self/comm", encoding="utf-8", errors="replace") as handle:
            comm = handle.read().strip()
    except OSError:
        comm = os.path.basename(argv[0] if argv else sys.executable)[:15]
    names = [os.path.basename(word) for word in argv[:2]]
    return (" ".join(argv), comm, *names)


def control_denial(
    command: str,
    programs: Iterable[tuple[str, ...]],
    host_pids: Iterable[int] = (),
    host: Sequence[str] = (),
) -> ControlDenial | None:
    """Why `command` would drive hookchain itself, or None. `host`: what a process pattern
    can match of the host (`host_identity`)."""
    folded = command.casefold()
    if ("hookchain_" in folded or "write_guard_" in folded) and _ENV.search(command):
        return ControlDenial("it sets or unsets hookchain's configuration in the environment")
    if ("'" in command or '"' in command or "\\" in command) and _ENV.search(
        command.replace("'", "").replace('"', "").replace("\\", "")
    ):
        return ControlDenial("it sets or unsets hookchain's configuration in the environment")
    pids = {str(pid) for pid in host_pids}
    programs = tuple(programs)
    own = _own_pid_variables(programs)
    for argv in programs:
        if any(word.startswith(("HOOKCHAIN_", "WRITE_GUARD_")) for word in argv):
            return ControlDenial("it sets or unsets hookchain's configuration in the environment")
        words = [word for word in argv if not _assignment(word)]
        if not words:
            continue
        name = words[0].rpartition("/")[2]
        if name == "hookchain":
            sub = next((word for word in words[1:] if not word.startswith("-")), "--help")
            if sub not in _READ_ONLY:
                return ControlDenial(f"it runs `hookchain {sub}`")
        if name in _KILLERS:
            why = _signals_host(name, words[1:], pids, own, host)
            if why is not None:
                return ControlDenial(why)
    if ("hookchain" in folded or "framework" in folded) and _HOST_WORDS.search(folded):
        for match in _HOST_WORDS.finditer(folded):
            tail = folded[match.end() : match.end() + 200]
            if _DRIVING.search(tail):
                return ControlDenial("it drives hookchain itself")
    return None


def _own_pid_variables(programs: tuple[tuple[str, ...], ...]) -> frozenset[str]:
    """`$NAME` and `${NAME}` of the variables the line sets to its last background job."""
    names = {
        match[1] for argv in programs for word in argv if (match := _OWN_PID_VARIABLE.match(word))
    }
    return frozenset({*(f"${name}" for name in names), *(f"${{{name}}}" for name in names)})


def _signals_host(
    name: str, rest: list[str], pids: set[str], own: frozenset[str], host: Sequence[str]
) -> str | None:
    """Why this kill, pkill, killall, skill or fuser may signal the host (None: it cannot)."""
    if name in {"killall5", "skill", "snice"}:
        return "it signals processes by a selection that includes the hookchain host"
    if name == "fuser":
        if any(word == "--kill" or (word[:1] == "-" and word[1:2] != "-" and "k" in word)
               for word in rest):  # fmt: skip
            return "it signals the processes that use a file, the hookchain host's included"
        return None
    if any(word in pids or word in {"-1", "0", "-0"} for word in rest):
        return "it signals the hookchain host or every process"
    if name == "kill":
        for word in rest:
            if word in own or word in _OWN_PIDS or word.startswith("%"):
                continue
            if is_computed(word) or "{xargs-input}" in word:
                return "it signals a process known only when the line runs (it may be the host)"
        return None
    if any(_KILL_TARGET.search(word) for word in rest):
        return "it signals processes that include the hookchain host"
    patterns, flags = _patterns(name, rest)
    if "v" in flags or "F" in flags or "L" in flags:
        return f"{name} selects processes the line cannot show are not the host"
    if not patterns:
        return f"{name} with no name or pattern signals every process it selects, the host's too"
    for pattern in patterns:
        if is_computed(pattern):
            return f"{name} matches processes by a pattern known only when the line runs"
        exact = "x" in flags or (name == "killall" and "r" not in flags)
        try:
            regex = re.compile(pattern if not exact or name != "killall" else re.escape(pattern),
                               re.IGNORECASE if "i" in flags or "I" in flags else 0)  # fmt: skip
        except re.error:
            return f"{name} matches processes by a pattern the guard cannot read ({pattern})"
        for seen in host:
            if (regex.fullmatch(seen) if exact else regex.search(seen)) is not None:
                return f"{name} {pattern!r} matches the hookchain host ({seen})"
    return None


def _patterns(name: str, rest: list[str]) -> tuple[list[str], set[str]]:
    """The patterns (names, for killall) and the single-letter flags of a pkill or killall."""
    values = _PKILL_VALUES if name in {"pkill", "pgrep"} else _KILLALL_VALUES
    patterns: list[str] = []
    flags: set[str] = set()
    index = 0
    while index < len(rest):
        word = rest[index]
        index += 1
        if word == "--":
            patterns.extend(rest[index:])
            break
        if word in values:
            index += 1
            continue
        if word.startswith("--"):
            flags.add({"--inverse": "v", "--pidfile": "F", "--logpidfile": "L"}.get(word, ""))
            continue
        if word[:1] == "-" and len(word) > 1:
            signal = word[1:].isdigit() or (len(word) > 3 and word[1:].isupper())  # -9, -KILL
            if not signal:
                flags.update(word[1:])
            continue
        patterns.append(word)
    return patterns, flags


def _assignment(word: str) -> bool:
    return "=" in word and word.partition("=")[0].isidentifier()


def control_reason(denial: ControlDenial) -> str:
    return (
        f"denied this (control-plane): {denial.what}. hookchain and its guards are "
        "the person's to run, stop or reconfigure. Instead: carry on without it, or tell the "
        "person what you would change and why"
    )
