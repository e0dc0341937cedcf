"""Without an OS sandbox: what the line analysis cannot follow, refused (fail closed).

Every program can write files; the analysis knows the writes of a few. Where no sandbox
enforces the roots, a line is let through only when what it runs is read completely: a program
that runs other code or writes through its options is refused with what to do instead."""

from __future__ import annotations

from collections.abc import Iterable

from write_guard._git import GIT_CORE_PREFIX, runs_program

# Programs that run code the line does not show, or write where their options or inputs say.
_RUNS_CODE = frozenset({
    "make", "gmake", "cmake", "ninja", "npm", "npx", "yarn", "pnpm",
    "poetry", "uv", "uvx", "pipx", "pip", "pip3", "nix-shell", "nix", "cargo", "go", "mvn",
    "gradle", "rake", "bundle", "tox", "nox", "sqlite3", "psql", "mysql", "awk", "gawk", "mawk",
    "lua", "tclsh", "expect", "vim", "vi", "nvim", "emacs", "ed", "ex",
    "source", ".", "trap", "coproc", "function", "alias", "exec", "script", "parallel",
    "sort", "split", "csplit", "patch", "openssl", "7z", "7za", "zip", "unzip", "gzip",
    "gunzip", "bzip2", "xz", "zstd", "cpio", "pax", "ar", "gcc", "cc", "clang", "ld", "as",
    "javac", "rustc", "tsc", "esbuild", "docker", "podman", "ssh", "scp", "sftp", "socat",
    "nc", "ncat", "busybox", "git-shell", "crontab", "at", "systemd-run", "install",
    "rsync", "mktemp", "sponge", "logger", "jq", "yq", "sed", "gsed",
})  # fmt: skip
_SAFE_SED = frozenset({"-n", "-E", "-r", "--quiet", "--silent", "-e"})


def fallback_doubt(programs: Iterable[tuple[str, ...]], command: str) -> str | None:
    """What the line analysis cannot follow in `command`, or None when it reads it all."""
    if "<(" in command or ">(" in command:
        return "process substitution"
    for argv in programs:
        words = [word for word in argv if not _assignment(word)]
        if not words:
            continue
        name = words[0].rpartition("/")[2]
        if name == "git" or name.startswith(GIT_CORE_PREFIX):
            how = runs_program(argv)
            if how is not None:
                return f"git runs a program or writes where it is told through {how}"
            continue
        if name in {"sed", "gsed"} and all(
            word in _SAFE_SED or not word.startswith("-") for word in words[1:]
        ):
            continue  # reading sed: the analysis sees `-i`
        if name in {"jq", "yq", "sort"} and not any(
            word.startswith(("-o", "--output", "-i", "--in-place")) for word in words[1:]
        ):
            continue
        if name in _RUNS_CODE:
            return f"`{name}` runs code or writes files the command line does not show"
        if ("$" in name or "`" in name) and name != "$":
            return "a command name computed at run time"
    return None


def _assignment(word: str) -> bool:
    return "=" in word and word.partition("=")[0].isidentifier()


def fallback_reason(doubt: str) -> str:
    return (
        "write-guard denied this (no-sandbox): no OS sandbox is available here, so shell "
        f"writes are checked by reading the command line, and this one cannot be read "
        f"completely ({doubt}). Instead: write files with the Write or Edit tool, and run "
        "plain commands whose outputs are named on the line (one command per call)"
    )
