"""Without an OS sandbox: what the line analysis cannot follow, refused (fail closed).

Every program can write files; the analysis knows the writes of a few. Where no sandbox
enforces the roots, a line is let through only when what it runs is read completely: a program
that runs other code or writes through its options is refused with what to do instead."""

from __future__ import annotations

import re
from collections.abc import Iterable

from write_guard._bash import WRAPPER_NAMES, WRITERS_READ
from write_guard._git import GIT_CORE_PREFIX, runs_program
from write_guard._programs import RUNS_NOTHING

# Programs that run code the line does not show, or write where their options or inputs say.
_RUNS_CODE = frozenset({
    "make", "gmake", "cmake", "ninja", "npm", "npx", "yarn", "pnpm",
    "poetry", "uv", "uvx", "pipx", "pip", "pip3", "nix-shell", "nix", "cargo", "go", "mvn",
    "gradle", "rake", "bundle", "tox", "nox", "sqlite3", "psql", "mysql", "awk", "gawk", "mawk",
    "lua", "tclsh", "expect", "vim", "vi", "nvim", "emacs", "ed", "ex",
    "source", ".", "trap", "coproc", "function", "alias", "exec", "script", "parallel",
    "split", "csplit", "patch", "openssl", "7z", "7za", "zip", "unzip", "gzip",
    "gunzip", "bzip2", "xz", "zstd", "cpio", "pax", "ar", "gcc", "cc", "clang", "ld", "as",
    "javac", "rustc", "tsc", "esbuild", "docker", "podman", "ssh", "scp", "sftp", "socat",
    "nc", "ncat", "busybox", "git-shell", "crontab", "at", "systemd-run", "install",
    "rsync", "mktemp", "sponge", "logger", "jq", "yq", "flock",
    # New namespaces and roots: what runs inside sees other mounts.
    "unshare", "bwrap", "nsenter", "chroot", "firejail", "systemd-nspawn", "setpriv",
    "tmux", "screen",
})  # fmt: skip
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "fish", "ash", "mksh"})
# Ways the working directory moves that the analysis does not follow.
_MOVES = frozenset({"builtin", "popd", "OLDPWD", "CDPATH"})
_INTERPRETERS = frozenset({"python", "python3", "node", "perl", "ruby", "php", "deno", "bun"})
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0",
                           "-fprintf", "-fls"})  # fmt: skip
# A substitution where a program name goes: `$(echo tee) f`, `` `echo git` reset ``.
_COMPUTED_PROGRAM = re.compile(r"(?:^|[;&|(\n]|\$\()\s*(?:\$\(|`)")
# sed commands that write or run: `w FILE`, `W FILE`, `e CMD`, the `s///w FILE` flag.
_SED_WRITES = re.compile(r"(?:^|[;{}\s/\d$])[wWe](?:\s|$)")
_UNREAD_TARGET = frozenset("{}*?[")
# Another process's view of the filesystem (`/proc/PID/root`, `/proc/$PPID/cwd`): any path
# seen as that process sees it. `/proc/self/…` is the command's own view, which the
# analysis resolves.
_OTHER_PROC = re.compile(r"/proc/+(?!(?:self|thread-self)(?:/|$|[\s'\"]))[^/\s'\"]")


def fallback_doubt(
    programs: Iterable[tuple[str, ...]], command: str, targets: Iterable[str] = ()
) -> str | None:
    """What the line analysis cannot follow in `command`, or None when it reads it all.
    `targets`: the paths the analysis found it writes (a file written and then run is a
    script the analysis never read)."""
    if "<(" in command or ">(" in command:
        return "process substitution"
    if ("$(" in command or "`" in command) and _COMPUTED_PROGRAM.search(command):
        return "a program name computed at run time"
    if "/proc/" in command and _OTHER_PROC.search(command):
        return "a path through another process's view of the filesystem (/proc/PID/…)"
    written = {target.rpartition("/")[2] for target in targets}
    defined = _defined_functions(command)
    for target in targets:
        if _UNREAD_TARGET & set(target):
            return f"a path with braces or wildcards ({target})"
    for argv in programs:
        if any(word.startswith(("OLDPWD=", "CDPATH=")) for word in argv):
            return "a change of directory the analysis does not follow"
        words = [word for word in argv if not _assignment(word)]
        if not words:
            continue
        name = words[0].rpartition("/")[2]
        runs_files = name in _SHELLS or name in _INTERPRETERS or name.startswith("python")
        if name in written or (
            runs_files and any(word.rpartition("/")[2] in written for word in words[1:])
        ):
            return "a script the command writes and then runs"
        if name in _MOVES:
            return "a change of directory the analysis does not follow"
        if name == "cd" and (words[1:2] == ["-"] or len(words) == 1):
            return "a change of directory the analysis does not follow"
        if name == "env" and any(w in {"-C", "--chdir"} or w.startswith("--chdir=") for w in words):
            return "env -C changes the directory"
        if name in _SHELLS and not any(
            w == "-c" or (w[:1] == "-" and "c" in w[1:]) for w in words[1:]
        ):
            return f"`{name}` runs a script the command line does not show"
        if name == "find" and _FIND_ACTIONS & set(words):
            return "find runs a command or writes a file"
        if name in {"sed", "gsed"}:
            if any(_SED_WRITES.search(w) for w in words[1:]) or {"-f", "--file"} & set(words):
                return "a sed script that writes or runs"
            continue  # the analysis reads `-i` and its files
        if name == "git" or name.startswith(GIT_CORE_PREFIX):
            how = runs_program(argv)
            if how is not None:
                return f"git runs a program or writes where it is told through {how}"
            continue
        if name in {"jq", "yq"} and not any(
            word.startswith(("-o", "--output", "-i", "--in-place")) for word in words[1:]
        ):
            continue
        if name in _RUNS_CODE:
            return f"`{name}` runs code or writes files the command line does not show"
        if ("$" in name or "`" in name) and name != "$":
            return "a command name computed at run time"
        doubt = _unknown_program(words, name, defined)
        if doubt is not None:
            return doubt
    return None


# Where a program given by its path is one of the system's, not a file the line or an earlier
# call may have written (`./tool`, `bin/x`, `.venv/bin/pytest`).
_SYSTEM_PROGRAMS = ("/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/", "/usr/local/bin/",
                    "/opt/homebrew/bin/", "/nix/store/")  # fmt: skip
# Read by the analysis, or run nothing and write nothing the line does not show: the wrappers
# (their command is read as a program of its own), xargs's, the control plane's programs.
_READ = frozenset({*WRAPPER_NAMES, *WRITERS_READ, "xargs", "eval", "git", "hookchain", "kill",
                   "pkill", "killall", "pgrep", "fuser", "watch", *_SHELLS})  # fmt: skip
# Readers that write a file their options or a second operand name (`sort -o`, `uniq in out`,
# `xxd in out`): (short option letters, long options, how many operands they may take).
_READER_WRITES: dict[str, tuple[str, tuple[str, ...], int]] = {
    "sort": ("oT", ("--output", "--temporary-directory", "--compress-program"), 99),
    "shuf": ("o", ("--output", "--random-source"), 99),
    "iconv": ("o", ("--output",), 99),
    "tree": ("oR", ("--output",), 99),
    "file": ("C", ("--compile",), 99),
    "base64": ("o", ("--output",), 1),
    "uniq": ("", (), 1),
    "xxd": ("", (), 1),
}
_READER_VALUES = {"sort": "ktSoT", "shuf": "nio", "uniq": "fsw", "iconv": "fto",
                  "tree": "LPIoHT", "file": "mfFeP", "xxd": "cglosn", "base64": "bio"}  # fmt: skip
_VERSION_ONLY = frozenset({"--version", "-V", "-v", "--help", "-h"})


def _unknown_program(words: list[str], name: str, defined: frozenset[str]) -> str | None:
    """Why the analysis cannot vouch for what this program writes (None: it can): a program
    file given by a path outside the system's folders, an interpreter running a script, a
    reader with an option or operand that writes, and any program it does not know."""
    program = words[0]
    if "/" in program and not program.startswith(_SYSTEM_PROGRAMS):
        return f"`{program}` runs a program file the analysis has not read"
    if name in _INTERPRETERS or name.startswith(("python", "pypy")):
        if all(word in _VERSION_ONLY for word in words[1:]):
            return None
        return f"`{name}` runs a script or module the command line does not show"
    writes = _READER_WRITES.get(name)
    if writes is not None:
        letters, longs, operands = writes
        values = _READER_VALUES.get(name, "")
        found = _options_found(words[1:], letters, longs, values)
        if found is not None or len(_operands(words[1:], values)) > operands:
            return f"`{name}` writes a file its options or operands name"
        return None
    if name in RUNS_NOTHING or name in _READ or name in defined:
        return None
    if name == "gh":
        return _gh_doubt(words)
    return f"`{name}` is a program whose writes the analysis does not know"


def _options_found(
    words: list[str], letters: str, longs: tuple[str, ...], values: str
) -> str | None:
    """The first of these options `words` hold: a short letter anywhere in a cluster before a
    letter that takes a value (`-uo FILE`), or a long option or an abbreviation of one."""
    for word in words:
        if word == "--":
            return None
        if word.startswith("--"):
            key = word.partition("=")[0]
            if len(key) > 2 and any(name.startswith(key) for name in longs):
                return word
        elif word.startswith("-") and len(word) > 1:
            for letter in word[1:]:
                if letter in letters:
                    return word
                if letter in values:
                    break  # the rest of the word is this option's value
    return None


def _operands(words: list[str], values: str) -> list[str]:
    """The operands of a reader, its option values skipped (`-f 1`, `-k2`)."""
    found: list[str] = []
    skip = False
    for index, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word == "--":
            found.extend(words[index + 1 :])
            break
        if word.startswith("-") and word != "-":
            if not word.startswith("--") and word[-1] in values and len(word) == 2:
                skip = True
            continue
        found.append(word)
    return found


# gh: what it runs is GitHub's side; these write local files or run programs (a clone, a
# download, a checkout, extensions, aliases, its configuration).
_GH_WRITES = frozenset({"download", "clone", "checkout", "fork", "extension", "extensions",
                        "ext", "alias", "config", "codespace", "cs", "sync", "setup-git",
                        "login", "logout", "refresh", "switch", "token"})  # fmt: skip


def _gh_doubt(words: list[str]) -> str | None:
    found = next((word for word in words[1:] if word in _GH_WRITES), None)
    if found is not None:
        return f"`gh … {found}` writes local files or runs programs"
    return None


def _defined_functions(command: str) -> frozenset[str]:
    """The names of the functions the line defines (their bodies are read as its commands)."""
    if "(" not in command and "function" not in command:
        return frozenset()
    return frozenset(match[1] or match[2] for match in _FUNCTION.finditer(command))


_FUNCTION = re.compile(
    r"(?:^|[\s;&|(){}])(?:function\s+([A-Za-z_][\w.:-]*)|([A-Za-z_][\w.:-]*)\s*\(\s*\))"
)


def _assignment(word: str) -> bool:
    return "=" in word and word.partition("=")[0].isidentifier()


NO_SANDBOX = "no OS sandbox is available here"


def fallback_reason(doubt: str, why: str = NO_SANDBOX) -> str:
    """The refusal of a line the analysis cannot read fully; `why`: why no OS sandbox
    confines it."""
    return (
        f"denied this (no-sandbox): {why}, so shell "
        f"writes are checked by reading the command line, and this one cannot be read "
        f"completely ({doubt}). Instead: write files with the Write or Edit tool, and run "
        "plain commands whose outputs are named on the line (one command per call)"
    )
