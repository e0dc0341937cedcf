"""Without an OS sandbox: what the line analysis cannot follow, refused (fail closed).

Every program can write files; the analysis knows the writes of a few. Where no sandbox
enforces the roots, a line is let through only when what it runs is read completely: a program
that runs other code or writes through its options is refused with what to do instead."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from write_guard._bash import WRAPPER_NAMES, WRITERS_READ, WriteTarget
from write_guard._decide import Resolved, resolve_target
from write_guard._git import (
    GIT_CORE_PREFIX,
    GitCall,
    git_plain_variable,
    runs_program,
    unread_command,
)
from write_guard._paths import PathContext, PathRejection, ResolvedPath, is_within, root_forms
from write_guard._policy import Policy, protected_verdict
from write_guard._programs import RUNS_NOTHING
from write_guard._surface import Surface

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
    arithmetic = _arithmetic_over_a_variable(command)
    if arithmetic is not None:
        return arithmetic
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
        variable = _influential_variable(argv)
        if variable is not None:
            return (
                f"it sets {variable}, which changes what programs run, load or read, or where "
                "they write"
            )
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
        if _moves_unread(name, words):
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
            if _sed_writes(words[1:]):
                return "a sed script that writes or runs"
            continue  # the analysis reads `-i` and its files
        check = _WRITER_CHECKS.get(name)
        if check is not None:
            doubt = check(words[1:])
            if doubt is not None:
                return doubt
            continue
        if name == "git" or name.startswith(GIT_CORE_PREFIX):
            how = runs_program(argv)
            if how is not None:
                return f"git runs a program or writes where it is told through {how}"
            unread = unread_command(argv)
            if unread is not None:
                return unread
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


# Arithmetic bash evaluates: `$((…))`, `((…))`, `$[…]`, a subscript, `let`, and `[[ … -eq … ]]`.
_ARITHMETIC = re.compile(r"\$\(\((.*?)\)\)|\(\((.*?)\)\)|\$\[(.*?)\]|\$\{[^}\[]*\[([^\]]*)\]|"
                         r"(?:^|[\s;&|(])let\s([^;&|\n]*)", re.DOTALL)  # fmt: skip
_INTEGER_TEST = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)
_INTEGER_OPERATOR = re.compile(r"(?<!\S)-(?:eq|ne|lt|le|gt|ge)(?!\S)")
_LETTER = re.compile(r"[A-Za-z_]")
# What the parts of a numeric `$((…))` read as commands look like (no name in them).
_ONLY_ARITHMETIC = re.compile(r"[\d\s+\-*/%<>=!&|^~?:,.#]+")


def _arithmetic_over_a_variable(command: str) -> str | None:
    """Arithmetic that names a variable: bash evaluates the variable's value as an expression
    in turn, and `a[$(cmd)]` there runs cmd, code the line does not show."""
    if "((" not in command and "$[" not in command and "[" not in command and "let" not in command:
        return None
    for match in _ARITHMETIC.finditer(command):
        expression = next((group for group in match.groups() if group is not None), "")
        if _LETTER.search(expression):
            return "arithmetic over a variable (bash evaluates its value, subscripts included)"
    for match in _INTEGER_TEST.finditer(command):
        test = match.group(1)
        if _INTEGER_OPERATOR.search(test) and _LETTER.search(_INTEGER_OPERATOR.sub("", test)):
            return "an integer test of a variable (bash evaluates its value as arithmetic)"
    return None


def _unknown_program(words: list[str], name: str, defined: frozenset[str]) -> str | None:
    """Why the analysis cannot vouch for what this program writes (None: it can): a program
    file given by a path outside the system's folders, an interpreter running a script, a
    reader with an option or operand that writes, and any program it does not know."""
    program = words[0]
    if _ONLY_ARITHMETIC.fullmatch(program):
        return None  # a numeric `$((1+2))` read as a command too: arithmetic, checked above
    if "/" in program and (not program.startswith(_SYSTEM_PROGRAMS) or "/.." in program):
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


def _sed_writes(words: list[str]) -> bool:
    """Whether sed's scripts may write or run (`w FILE`, `W`, `e CMD`, the `w` and `e` flags of
    `s`), or come from a file; --sandbox makes sed refuse them itself."""
    if "--sandbox" in words:
        return False
    scripts: list[str] = []
    operands: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word in {"-e", "--expression"}:
            scripts.extend(words[index : index + 1])
            index += 1
        elif word.startswith("--expression="):
            scripts.append(word.partition("=")[2])
        elif word in {"-f", "--file"} or word.startswith(("--file=", "-f")):
            return True
        elif word in {"-l", "--line-length"}:
            index += 1
        elif _short(word) and "e" in word[1:]:
            if word.endswith("e"):
                scripts.extend(words[index : index + 1])
                index += 1
            else:
                scripts.append(word[word.index("e") + 1 :])
        elif not word.startswith("-") or word == "-":
            operands.append(word)
    if not scripts and operands:
        scripts.append(operands[0])
    return any(_sed_script_writes(script) for script in scripts)


def _short(word: str) -> bool:
    return word.startswith("-") and not word.startswith("--") and len(word) > 1


_SED_SINGLE = frozenset("=dDgGhHnNpPxzFv")


def _sed_script_writes(script: str) -> bool:
    """Whether a sed script holds a command or flag that writes a file or runs one: read
    command by command (addresses, regular expressions and `s` bodies skipped as sed skips
    them); anything unreadable counts as writing."""
    at, size = 0, len(script)
    while at < size:
        char = script[at]
        if char in " \t\n;{}!":
            at += 1
            continue
        at = _sed_address(script, at)
        if at >= size:
            return False
        char = script[at]
        if char in "{}!":
            continue
        at += 1
        if char in "wWe":
            return True
        if char in "sy":
            if at >= size:
                return True
            delimiter = script[at]
            at = _sed_part(script, _sed_part(script, at + 1, delimiter), delimiter)
            if char == "s":
                while at < size and script[at] not in ";\n}":
                    if script[at] in "we":
                        return True
                    at += 1
        elif char in "aicrRbtT:":
            while at < size and script[at] != "\n" and (char in "aicrR" or script[at] != ";"):
                at += 2 if script[at] == "\\" else 1
        elif char in "qQlL":
            while at < size and script[at].isdigit():
                at += 1
        elif char not in _SED_SINGLE:
            return True
    return False


def _sed_address(script: str, at: int) -> int:
    """The index after the address (or the two, or `first~step`) a command starts with."""
    size = len(script)
    for _ in range(2):
        if at < size and (script[at].isdigit() or script[at] in "$+~"):
            at += 1
            while at < size and (script[at].isdigit() or script[at] == "~"):
                at += 1
        elif at < size and script[at] == "/":
            at = _sed_part(script, at + 1, "/")
        elif at + 1 < size and script[at] == "\\":
            at = _sed_part(script, at + 2, script[at + 1])
        while at < size and script[at] in "IM ":
            at += 1
        if at < size and script[at] == ",":
            at += 1
            continue
        break
    return at


def _sed_part(script: str, at: int, delimiter: str) -> int:
    """The index after a regular expression or replacement ended by `delimiter` (an escaped
    character and a bracket expression do not end it)."""
    size = len(script)
    bracket = False
    while at < size:
        char = script[at]
        if char == "\\":
            at += 2
            continue
        if bracket:
            bracket = char != "]"
        elif char == "[":
            bracket = True
            if script.startswith(("[^]", "[]"), at):
                at += 2 if script[at + 1] == "]" else 3
                continue
        elif char == delimiter:
            return at + 1
        at += 1
    return at


def _curl_doubt(words: list[str]) -> str | None:
    """curl writes only where -o says (the analysis reads it) or to its output."""
    found = _options_found(words, "DcKOJ", _CURL_WRITES, "dDeEFHouUxXwTAbcCrYyzmKQtPhE")
    if found is not None:
        return f"curl writes a file its option names ({found})"
    for index, word in enumerate(words):
        value = None
        if word in {"-w", "--write-out"}:
            value = words[index + 1] if index + 1 < len(words) else ""
        elif word.startswith("--write-out="):
            value = word.partition("=")[2]
        if value is not None and "output" in value:
            return "curl writes a file its --write-out names"
    return None


_CURL_WRITES = ("--dump-header", "--cookie-jar", "--trace", "--trace-ascii", "--stderr",
                "--etag-save", "--hsts", "--alt-svc", "--config", "--libcurl", "--remote-name",
                "--remote-name-all", "--remote-header-name")  # fmt: skip


def _wget_doubt(words: list[str]) -> str | None:
    """wget writes where -O or -P say (the analysis reads them); without them it names its
    file from the URL, and its log, cookie and WARC options and -e name more."""
    found = _options_found(words, "oaexrmpi", _WGET_WRITES, "OPoaeiDTtwQUBY")
    if found is not None:
        return f"wget writes files its options name ({found})"
    if not any(word.startswith(("-O", "--output-document", "-P", "--directory-prefix"))
               for word in words):  # fmt: skip
        return "wget names the file it writes from the URL"
    return None


_WGET_WRITES = ("--output-file", "--append-output", "--execute", "--config", "--save-cookies",
                "--warc-file", "--force-directories", "--recursive", "--mirror",
                "--page-requisites", "--input-file", "--backups")  # fmt: skip


def _tar_doubt(words: list[str]) -> str | None:
    """tar writes where -f says when it creates (the analysis reads it); extracting, it writes
    what its archive names (through any link there), and some options run programs or write
    more files."""
    first = words[0] if words else ""
    mode = first if first and not first.startswith("-") else ""
    extracting = "x" in mode or any(
        word in {"--extract", "--get"} or (_short(word) and "x" in word[1:]) for word in words
    )
    if extracting:
        return "tar writes the files its archive names"
    found = _options_found(words, "IFg", _TAR_RUNS, "fCbHKLNTVX")
    if found is None and any(letter in mode for letter in "IFg"):
        found = mode
    if found is not None:
        return f"tar runs a program or writes a file its option names ({found})"
    if "--force-local" not in words:
        for archive in _tar_archives(words, mode):
            if ":" in archive.partition("/")[0]:
                return f"tar reaches an archive on another host ({archive})"
    return None


_TAR_RUNS = ("--checkpoint-action", "--use-compress-program", "--to-command", "--info-script",
             "--new-volume-script", "--rsh-command", "--rmt-command", "--index-file",
             "--listed-incremental", "--volno-file", "--remove-files")  # fmt: skip


def _tar_archives(words: list[str], mode: str) -> list[str]:
    archives: list[str] = []
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else ""
        if word in {"-f", "--file"} or (_short(word) and word.endswith("f")):
            archives.append(following)
        elif word.startswith("--file="):
            archives.append(word.partition("=")[2])
    if mode and "f" in mode and len(words) > 1:
        archives.append(words[1])
    return archives


_WRITER_CHECKS = {"curl": _curl_doubt, "wget": _wget_doubt, "tar": _tar_doubt}


def _defined_functions(command: str) -> frozenset[str]:
    """The names of the functions the line defines (their bodies are read as its commands)."""
    if "(" not in command and "function" not in command:
        return frozenset()
    return frozenset(match[1] or match[2] for match in _FUNCTION.finditer(command))


_FUNCTION = re.compile(
    r"(?:^|[\s;&|(){}])(?:function\s+([A-Za-z_][\w.:-]*)|([A-Za-z_][\w.:-]*)\s*\(\s*\))"
)


# Variables that change which program a name runs, what a program loads or runs at its start
# (a library, a shell's startup file, default options), or where it writes its own files: set
# on the line, the programs the analysis reads would do what it did not read.
_INFLUENTIAL = frozenset({
    "PATH", "HOME", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
    "TAR_OPTIONS", "TMPDIR", "TMP", "TEMP", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER",
    "CURL_HOME", "WGETRC", "GNUPGHOME", "GCONV_PATH", "LOCPATH", "NLSPATH", "GLIBC_TUNABLES",
    "NODE_OPTIONS", "RUBYOPT", "ZDOTDIR", "INPUTRC", "HISTFILE", "JQ_LIBRARY_PATH",
})  # fmt: skip
_INFLUENTIAL_PREFIXES = ("LD_", "DYLD_", "PYTHON", "PERL", "NODE_PATH", "XDG_", "MALLOC_",
                         "LESS", "SSH_", "GH_", "GIT_")  # fmt: skip
_PLAIN_VARIABLES = frozenset({"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING",
                              "PYTHONHASHSEED", "LESSCHARSET"})  # fmt: skip
_SETTERS = frozenset({"export", "declare", "typeset", "local", "readonly"})


_CHANGES_DIRECTORY = frozenset({"cd", "pushd", "popd"})


def _moves_unread(name: str, words: list[str]) -> bool:
    """Whether this command changes the directory in a way the analysis does not follow:
    physically (`cd -P`, `set -P`: `..` after a link leaves the link's target, where the
    analysis reads cd logically), to a variable's value (`shopt -s cdable_vars`), or by eval or
    command (the move is not carried to the line's next commands)."""
    if name in _CHANGES_DIRECTORY:
        return any(word.startswith("-") and "P" in word for word in words[1:])
    if name == "set":
        joined = " ".join(words[1:])
        return any(word.startswith("-") and "P" in word for word in words[1:]) or (
            "-o physical" in joined
        )
    if name == "shopt":
        return "-s" in words and bool({"cdable_vars", "autocd"} & set(words))
    if name in {"eval", "command"}:
        return any(word.split(None, 1)[:1] and word.split(None, 1)[0] in _CHANGES_DIRECTORY
                   for word in words[1:])  # fmt: skip
    return False


def _influential_variable(argv: tuple[str, ...]) -> str | None:
    """The first variable of `_INFLUENTIAL` this simple command sets: in front of its program,
    as a bare assignment, or through export and its kin."""
    assigned = [word for word in argv if _assignment(word)]
    if argv and argv[0] in _SETTERS:
        assigned += [word for word in argv[1:] if word.isidentifier()]
    for word in assigned:
        name = word.partition("=")[0]
        if name in _PLAIN_VARIABLES or (name.startswith("GIT_") and git_plain_variable(name)):
            continue
        if name in _INFLUENTIAL or name.startswith(_INFLUENTIAL_PREFIXES):
            return name
    return None


_ENTRIES_CHECKED = 4096
"""Entries of a folder cp writes into that are looked at for a link out, at most."""
# git commands that may put any file of a commit in the work tree, a link included.
_UPDATES_WORK_TREE = frozenset({"checkout", "switch", "merge", "pull", "rebase", "cherry-pick",
                                "revert", "reset", "restore", "stash", "am", "apply"})  # fmt: skip


def written_through_links(
    surface: Surface, resolved: Resolved, context: PathContext, policy: Policy
) -> str | None:
    """Why a write of the line may land elsewhere than the path resolved before it runs: a
    path at or below a link the line makes first (ln, mv, cp copying links, git checking out a
    commit), or a folder cp writes into that holds a link out of the roots or to a protected
    file already."""
    written = [(target, path) for target, path in resolved if not isinstance(path, PathRejection)]
    made = []
    for link in surface.links:
        path = resolve_target(link, context)
        if not isinstance(path, PathRejection):
            made.append((link, path.requested.rstrip("/")))
    for target, path in written:
        requested = path.requested.rstrip("/")
        for link, at in made:
            if target is link:
                continue
            below = requested == at or requested.startswith(at + "/")
            if below or (target.how == "cp -r" and at.startswith(requested + "/")):
                return f"a write through a link the line may make first ({link.path})"
    writes = any(path.requested not in policy.sinks for _target, path in written)
    if writes and any(_updates_work_tree(argv) for argv in surface.git_commands):
        return "git may put links in the work tree before the line writes there"
    for target, path in written:
        if target.how in {"cp", "cp -r"} and os.path.isdir(path.resolved):
            found = _link_out(path.resolved, target.how == "cp -r", policy)
            if found is not None:
                return f"cp writes into {path.resolved}, which holds {found}"
    return None


def _updates_work_tree(argv: tuple[str, ...]) -> bool:
    call = GitCall(argv)
    if call.subcommand not in _UPDATES_WORK_TREE:
        return False
    # `checkout -b new` and `switch -c new` with no start point leave the work tree as it is.
    creating = {"-b", "-c", "--create"} & set(call.rest)
    return not (creating and len([w for w in call.rest if not w.startswith("-")]) <= 1)


def _link_out(folder: str, recursive: bool, policy: Policy) -> str | None:
    """A link in `folder` (or below it, `recursive`) to outside the roots or to a protected
    file, which cp would write through; too many entries to look at count as one."""
    roots = [form for root in (policy.workspace_root, *policy.extra_roots)
             for form in root_forms(root)]  # fmt: skip
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in (*dirnames, *filenames):
            seen += 1
            if seen > _ENTRIES_CHECKED:
                return f"more than {_ENTRIES_CHECKED} entries to check for links"
            entry = os.path.join(dirpath, name)
            if not os.path.islink(entry):
                continue
            real = os.path.realpath(entry)
            inside = any(is_within(real, root, case_insensitive=policy.case_insensitive)
                         for root in roots)  # fmt: skip
            if not inside or protected_verdict(ResolvedPath(entry, entry, real), policy):
                return f"a link to {real} ({entry})"
        if not recursive:
            break
    return None


def git_outside(dirs: Iterable[WriteTarget], context: PathContext, policy: Policy) -> str | None:
    """Why a git call works in a folder outside the writable roots (it writes its index,
    refs and objects there), or None."""
    for target in dirs:
        path = resolve_target(target, context)
        if isinstance(path, PathRejection):
            return f"git works in a folder known only when it runs ({path.raw})"
        roots = [form for root in (policy.workspace_root, *policy.extra_roots)
                 for form in root_forms(root)]  # fmt: skip
        for form in {path.requested, path.resolved}:
            if not any(is_within(form, root, case_insensitive=policy.case_insensitive)
                       for root in roots):  # fmt: skip
                return f"git works in {path.resolved}, outside the writable roots"
    return None


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
