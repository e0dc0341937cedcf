"""The control plane: Bash lines that would stop, reconfigure, uninstall or bypass hookchain.

Read on the raw text as well as on the parsed commands: a line built to hide its program
(`$(echo hookchain) serve`, a script piped to a shell) still names what it drives, and a
denial here costs the agent nothing it needs (the person runs hookchain, never the agent)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

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
_KILLERS = frozenset({"kill", "pkill", "killall", "skill", "pgrep"})
_KILL_TARGET = re.compile(r"hookchain|framework|python|uvicorn|_client", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ControlDenial:
    what: str


def control_denial(
    command: str, programs: Iterable[tuple[str, ...]], host_pids: Iterable[int] = ()
) -> ControlDenial | None:
    """Why `command` would drive hookchain itself, or None."""
    folded = command.casefold()
    if ("hookchain_" in folded or "write_guard_" in folded) and _ENV.search(command):
        return ControlDenial("it sets or unsets hookchain's configuration in the environment")
    pids = {str(pid) for pid in host_pids}
    for argv in programs:
        words = [word for word in argv if not _assignment(word)]
        if not words:
            continue
        name = words[0].rpartition("/")[2]
        if name == "hookchain":
            sub = next((word for word in words[1:] if not word.startswith("-")), "--help")
            if sub not in _READ_ONLY:
                return ControlDenial(f"it runs `hookchain {sub}`")
        if name in _KILLERS and name != "pgrep":
            rest = words[1:]
            if any(word in pids or word in {"-1", "0", "-0"} for word in rest):
                return ControlDenial("it signals the hookchain host or every process")
            if name != "kill" and any(_KILL_TARGET.search(word) for word in rest):
                return ControlDenial("it signals processes that include the hookchain host")
    if ("hookchain" in folded or "framework" in folded) and _HOST_WORDS.search(folded):
        for match in _HOST_WORDS.finditer(folded):
            tail = folded[match.end() : match.end() + 200]
            if _DRIVING.search(tail):
                return ControlDenial("it drives hookchain itself")
    return None


def _assignment(word: str) -> bool:
    return "=" in word and word.partition("=")[0].isidentifier()


def control_reason(denial: ControlDenial) -> str:
    return (
        f"denied this (control-plane): {denial.what}. hookchain and its guards are "
        "the person's to run, stop or reconfigure. Instead: carry on without it, or tell the "
        "person what you would change and why"
    )
