"""Recognise git invocations that rewrite history, discard work, or make git run a program.

git accepts any unambiguous prefix of a long option (`reset --h` is `reset --hard`), global
`-c` and `GIT_CONFIG_*` overrides (aliases included), and the git-core programs
(`git-reset`): each is read here the way git reads it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable

from write_guard._shell import is_computed

# global options that take a separate value: `git -C dir`, `git -c key=value`, ...
GLOBAL_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env",
     "--super-prefix", "--list-cmds", "--attr-source"}
)  # fmt: skip
_SAFE_REBASE = ("--abort", "--continue", "--quit", "--show-current-patch", "--edit-todo", "--skip")
_HELP = ("--help",)
# Configuration keys (exact or `prefix.`) whose value git runs as a program or that make it
# write or fetch through a program: under the OS sandbox the program is confined like the
# command, without it the line analysis cannot follow it.
_PROGRAM_KEYS = (
    "core.fsmonitor", "core.sshcommand", "core.pager", "core.editor", "core.hookspath",
    "core.askpass", "core.gitproxy", "core.worktree", "diff.external", "sequence.editor",
    "gpg.program", "gpg.ssh.program", "gpg.x509.program", "credential.helper", "pager.",
    "alias.", "filter.", "diff.", "merge.", "protocol.", "uploadpack.", "receivepack.",
    "remote.", "url.", "include.", "includeif.", "http.proxy", "ssh.variant", "interactive.",
    "mergetool.", "difftool.", "browser.", "web.browser", "man.", "sendemail.",
)  # fmt: skip
_PROGRAM_ENV = (
    "GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_PAGER", "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXEC_PATH",
    "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG",
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_TEMPLATE_DIR",
    "GIT_ALLOW_PROTOCOL", "GIT_CONFIG_PARAMETERS", "EDITOR", "VISUAL", "PAGER",
    "HOME", "XDG_CONFIG_HOME",
)  # fmt: skip
# The GIT_* variables that only name who and when, or quiet git: any other may make it run a
# program or write a file (GIT_TRACE=/path, GIT_TRACE2_EVENT, GIT_DIR, …).
_PLAIN_ENV = frozenset({
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_MERGE_AUTOEDIT",
    "GIT_FLUSH", "GIT_OPTIONAL_LOCKS", "GIT_CONFIG_NOSYSTEM", "GIT_ADVICE",
})  # fmt: skip
_PROGRAM_OPTIONS = ("--upload-pack", "--receive-pack", "--exec", "--ext-diff", "--template",
                    "--separate-git-dir", "--output", "--output-directory", "--config")  # fmt: skip
_CLONE_LIKE = frozenset({"clone", "fetch", "pull", "ls-remote", "push", "archive", "submodule",
                         "remote", "bundle"})  # fmt: skip
GIT_CORE_PREFIX = "git-"


def _is_assignment(word: str) -> bool:
    return "=" in word and word.partition("=")[0].isidentifier()


def has_long(words: Iterable[str], name: str) -> bool:
    """Whether `words` holds the long option `name`, or a prefix of it git would accept."""
    for word in words:
        if word == "--":
            return False
        if not word.startswith("--"):
            continue
        key = word.split("=", 1)[0]
        if key == name or (len(key) >= 3 and name.startswith(key)):
            return True
    return False


def _any_long(words: list[str], names: Iterable[str]) -> bool:
    return any(has_long(words, name) for name in names)


def _short_flags(words: Iterable[str]) -> set[str]:
    flags: set[str] = set()
    for word in words:
        if word == "--":
            break
        if word.startswith("-") and not word.startswith("--"):
            flags.update(word[1:])
    return flags


def _operands(words: list[str]) -> list[str]:
    return [word for word in words if not word.startswith("-")]


class GitCall:
    """One git invocation read like git reads it: environment, global options, subcommand."""

    __slots__ = ("aliases", "configs", "env", "rest", "subcommand")

    def __init__(self, argv: tuple[str, ...]) -> None:
        words = list(argv)
        self.env: dict[str, str] = {}
        while words and _is_assignment(words[0]):
            key, _, value = words.pop(0).partition("=")
            self.env[key] = value
        program = words.pop(0).rpartition("/")[2] if words else "git"
        self.configs: dict[str, str] = {}
        count = self.env.get("GIT_CONFIG_COUNT", "0")
        for index in range(int(count) if count.isdigit() else 0):
            name = self.env.get(f"GIT_CONFIG_KEY_{index}")
            if name is not None:
                self.configs[name.lower()] = self.env.get(f"GIT_CONFIG_VALUE_{index}", "")
        self.aliases: dict[str, str] = {}
        self.subcommand = ""
        self.rest: list[str] = []
        if program.startswith(GIT_CORE_PREFIX) and program != "git":
            self.subcommand, self.rest = program[len(GIT_CORE_PREFIX) :], words
            return
        index = 0
        while index < len(words):
            word = words[index]
            if word in GLOBAL_VALUE_OPTIONS:
                value = words[index + 1] if index + 1 < len(words) else ""
                self._global(word, value)
                index += 2
                continue
            if word.startswith("--") and "=" in word:
                key, _, value = word.partition("=")
                self._global(key, value)
                index += 1
                continue
            if word.startswith("-"):
                index += 1
                continue
            break
        if index < len(words):
            self.subcommand, self.rest = words[index], words[index + 1 :]
        if self.configs:
            self.aliases = {
                key[len("alias.") :]: value
                for key, value in self.configs.items()
                if key.startswith("alias.")
            }

    def _global(self, option: str, value: str) -> None:
        if option == "-c":
            key, _, val = value.partition("=")
            self.configs[key.lower()] = val
        elif option == "--config-env":
            key, _, env = value.partition("=")
            self.configs[key.lower()] = f"${env}"
        elif option == "--exec-path":
            self.configs["--exec-path"] = value


PathTest = Callable[[str], bool]


def dangerous_git(argv: tuple[str, ...], is_path: PathTest | None = None) -> str | None:
    """Name of the dangerous operation `argv` (a git call, perhaps with `VAR=` assignments
    first, or a git-core program) performs, or None. `is_path` tells whether an operand names
    a file or folder of the work tree (`git checkout logs` discards, `git checkout main`
    switches)."""
    call = GitCall(argv)
    danger = _danger(call, 0)
    if danger is None and is_path is not None and call.subcommand == "checkout":
        operands = _operands(call.rest)
        if len(operands) == len(call.rest) == 1 and is_path(operands[0]):
            return "checkout of a path (discards its local changes)"
    return danger


def _danger(call: GitCall, depth: int) -> str | None:
    subcommand, rest = call.subcommand, call.rest
    alias = call.aliases.get(subcommand.lower()) if subcommand else None
    if alias is not None:
        if alias.startswith("!"):
            return f"a shell alias ({subcommand})"
        if depth > 3:
            return f"an alias loop ({subcommand})"
        try:
            expanded = shlex.split(alias)
        except ValueError:
            return f"an unparsable alias ({subcommand})"
        inner = GitCall(("git", *expanded, *rest))
        inner.configs, inner.aliases = call.configs, call.aliases
        return _danger(inner, depth + 1)
    if is_computed(subcommand):
        # Known only when the line runs: it may be any subcommand. Read as if the next word
        # were the subcommand, for the operation to name when that one is dangerous already.
        inner = GitCall(("git", *rest))
        inner.configs, inner.aliases = call.configs, call.aliases
        return _danger(inner, depth + 1) or "a git command known only when the line runs"
    if any(is_computed(key) for key in call.configs):
        return "git configuration known only when the line runs"
    source = _configuration_from_the_line(call)
    if source is not None:
        return f"git reads configuration {source}"
    if subcommand == "clean" and "clean.requireforce" in call.configs:
        return "clean (forced by configuration)"
    danger = _subcommand_danger(subcommand, rest)
    if danger is None and subcommand in _GATED:
        computed = _computed_argument(rest)
        if computed is not None:
            return f"{subcommand} with an argument known only when the line runs ({computed})"
    return danger


# Options whose value is a message, a name or a date, never an option of git's: a value known
# only at run time there (`commit -m "$(cat <<'EOF' …)"`) changes nothing the gate reads.
_VALUE_OPTIONS = frozenset({
    "-m", "--message", "-F", "--file", "-C", "--reuse-message", "-c", "--reedit-message",
    "--author", "--date", "-t", "--template", "--trailer", "-b", "--fixup", "--squash",
})  # fmt: skip


def _computed_argument(rest: list[str]) -> str | None:
    """The first word of a gated subcommand's arguments known only when the line runs (it may
    be `-D`, `--hard` or a forced refspec), but a value of `_VALUE_OPTIONS` or a path after
    `--`; None when there is none."""
    value_next = False
    for word in rest:
        if value_next:
            value_next = False
            continue
        if word == "--":
            return None
        if word.startswith("--"):
            key, equals, _value = word.partition("=")
            if key in _VALUE_OPTIONS:
                value_next = not equals
                continue
        elif word.startswith("-"):
            # A short cluster: the first value option in it takes the rest of the word, or
            # the next word when it is last (`-am "$msg"`, `-m"$msg"`).
            letters = word[1:]
            at = next((i for i, c in enumerate(letters) if f"-{c}" in _VALUE_OPTIONS), -1)
            if at >= 0:
                value_next = at == len(letters) - 1
                if not is_computed(letters[: at + 1]):
                    continue
        if is_computed(word):
            return word
    return None


# Variables that make git read its configuration from where the line says (a file, HOME's
# .gitconfig, `-c` pairs): aliases and settings there could make any subcommand destructive.
_CONFIGURATION_ENV = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                      "GIT_CONFIG", "HOME", "XDG_CONFIG_HOME")  # fmt: skip
# Settings that make a fetch, pull or push force or delete refs, or gc prune what only reflogs
# keep (`-c remote.origin.mirror=true push`, `-c gc.pruneExpire=now gc`).
_REFS_SETTINGS = {
    "push": ("remote.", "push."), "fetch": ("remote.", "fetch."), "pull": ("remote.", "fetch."),
    "gc": ("gc.",), "maintenance": ("gc.", "maintenance."), "send-pack": ("remote.", "push."),
}  # fmt: skip
_CORRECTION_OFF = frozenset({"0", "false", "no", "off", "never", "show"})


def _configuration_from_the_line(call: GitCall) -> str | None:
    """Where the line points git's configuration (None: at the person's own files only)."""
    for key in _CONFIGURATION_ENV:
        if key in call.env:
            return f"from what the line sets in {key}"
    count = call.env.get("GIT_CONFIG_COUNT")
    if count is not None and not count.isdigit():
        return "from GIT_CONFIG_COUNT, known only when the line runs"
    refs = _REFS_SETTINGS.get(call.subcommand)
    for key, value in call.configs.items():
        if key == "include.path" or key.startswith("includeif."):
            return f"from a file the line names ({key})"
        if key == "help.autocorrect" and value.strip().lower() not in _CORRECTION_OFF:
            return "that runs a misspelt subcommand as the one git guesses (help.autocorrect)"
        if refs is not None and key.startswith(refs):
            return f"that changes what {call.subcommand} forces, deletes or prunes ({key})"
    return None


# The git commands the line analysis reads, without a sandbox: what they write is the work
# tree and the repository (held by the gate where it loses work), where they run. The rest
# (plumbing that writes where its options say, commands that write configuration, external
# `git-*` programs, aliases of the person's configuration) is refused there.
_READ_COMMANDS = frozenset({
    "status", "log", "diff", "show", "add", "commit", "checkout", "switch", "restore",
    "reset", "stash", "tag", "branch", "merge", "rebase", "cherry-pick", "revert", "rm", "mv",
    "grep", "blame", "annotate", "rev-parse", "rev-list", "ls-files", "ls-tree", "ls-remote",
    "cat-file", "describe", "shortlog", "reflog", "fetch", "pull", "push", "remote", "config",
    "worktree", "gc", "clean", "notes", "whatchanged", "name-rev", "for-each-ref", "show-ref",
    "symbolic-ref", "merge-base", "diff-tree", "diff-files", "diff-index", "count-objects",
    "fsck", "verify-commit", "verify-tag", "var", "version", "help", "check-ignore",
    "check-attr", "apply", "am", "range-diff", "show-branch", "cherry", "update-ref",
    "init", "clone", "format-patch", "bundle", "archive", "bisect", "submodule",
})  # fmt: skip
# Options of read commands that write the repository's configuration (an upstream, a
# tracking branch, a renamed branch's section) or run a program.
_CONFIG_OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "branch": (("--set-upstream-to", "--unset-upstream", "--track", "--edit-description",
                "--move", "--copy"), "utmMcC"),
    "checkout": (("--track",), "t"),
    "switch": (("--track",), "t"),
    "push": (("--set-upstream",), "u"),
    "grep": (("--open-files-in-pager",), "O"),
}  # fmt: skip
_REMOTE_READS = frozenset({"show", "get-url", "-v", "--verbose"})


def git_plain_variable(name: str) -> bool:
    """Whether a GIT_* variable only names who and when, or quiets git (see `_PLAIN_ENV`)."""
    return name in _PLAIN_ENV


def unread_command(argv: tuple[str, ...]) -> str | None:
    """Why the line analysis cannot read what a git call writes, without a sandbox (None: it
    reads it): a command it does not read, one of its options that writes configuration or
    runs a program, or a repository named elsewhere (`-C /x`, `--git-dir=/x`)."""
    call = GitCall(argv)
    subcommand = call.subcommand
    if not subcommand:
        return None
    if subcommand not in _READ_COMMANDS:
        return f"git {subcommand} (a command, alias or program the analysis does not read)"
    longs, letters = _CONFIG_OPTIONS.get(subcommand, ((), ""))
    if _any_long(call.rest, longs) or _short_flags(call.rest) & set(letters):
        return f"git {subcommand} with an option that writes configuration or runs a program"
    if subcommand == "remote" and call.rest and call.rest[0] not in _REMOTE_READS:
        return f"git remote {call.rest[0]} (it writes the repository's configuration)"
    if subcommand == "worktree" and call.rest[:1] not in (["list"], []):
        return f"git worktree {call.rest[0]}"
    return None


def runs_program(argv: tuple[str, ...]) -> str | None:
    """How a git call makes git run a program or write outside the work tree, or None.

    Under the OS sandbox that program is confined like the command; the line analysis alone
    (no sandbox) cannot follow it, so there it is refused."""
    call = GitCall(argv)
    for key in call.env:
        if key in _PROGRAM_ENV or (key.startswith("GIT_") and key not in _PLAIN_ENV):
            return f"the environment variable {key}"
    for key in call.configs:
        if key == "--exec-path" or any(
            key == known or (known.endswith(".") and key.startswith(known))
            for known in _PROGRAM_KEYS
        ):
            return f"the configuration {key}"
    rest = call.rest
    for option in _PROGRAM_OPTIONS:
        if has_long(rest, option):
            return f"the option {option}"
    # `-u` is the upload program of clone, fetch and ls-remote (for push it sets the upstream).
    uploads = "-u" in rest and call.subcommand in {"clone", "fetch", "pull", "ls-remote"}
    if call.subcommand in _CLONE_LIKE and (uploads or any("::" in w for w in rest)):
        return "a remote helper or upload program"
    if call.subcommand in {"push", "send-pack"} and any(
        word.startswith(("/", "./", "../", "~", "file:")) for word in _operands(rest)
    ):
        return "a repository elsewhere on this machine"
    reading = ("--get", "--get-all", "--get-regexp", "--list", "--show-origin", "--get-urlmatch")
    if call.subcommand == "config" and _operands(rest) and not _any_long(rest, reading):
        return "git config (it changes what git runs)"
    if call.subcommand in {"bisect", "difftool", "mergetool", "filter-branch", "submodule"}:
        return f"git {call.subcommand} (it runs programs)"
    if call.subcommand == "rebase" and ("-x" in rest or _short_flags(rest) & {"x"}):
        return "rebase --exec"
    if call.subcommand in {"init", "clone", "format-patch", "bundle", "archive"} or (
        call.subcommand == "worktree" and rest[:1] in (["add"], ["move"])
    ):
        return f"git {call.subcommand} (it writes where its arguments say)"
    return None


def _fetch_danger(rest: list[str], shorts: set[str], operands: list[str]) -> str | None:
    """A fetch or pull that moves a local branch or tag by force (`git fetch . +main:feature`,
    `-f` with `main:feature`, `--force --tags`): the commits only it had are lost. Forced
    updates of remote-tracking refs (`refs/remotes/…`, what a plain fetch does) are not."""
    forced = "f" in shorts or has_long(rest, "--force")
    if forced and ("t" in shorts or has_long(rest, "--tags")):
        return "fetch --force of tags (overwrites local tags)"
    pruning = "p" in shorts or has_long(rest, "--prune")
    for operand in operands[1:]:
        _source, colon, destination = operand.partition(":")
        local = colon and destination and not destination.startswith("refs/remotes/")
        if local and (forced or operand.startswith("+") or pruning):
            return "fetch into a local branch or tag by force (a forced refspec)"
    return None


# Every subcommand `_subcommand_danger` can name: the rest (status, log, diff...) never are.
_GATED = frozenset({
    "rebase", "reset", "push", "checkout", "switch", "restore", "branch", "tag", "update-ref",
    "symbolic-ref", "reflog", "prune", "filter-branch", "filter-repo", "replace", "prune-packed",
    "gc", "clean", "stash", "commit", "worktree", "rm", "read-tree", "checkout-index",
    "fetch", "pull", "send-pack",
})  # fmt: skip


def _subcommand_danger(subcommand: str, rest: list[str]) -> str | None:
    if subcommand not in _GATED:
        return None
    shorts = _short_flags(rest)
    operands = _operands(rest)
    if has_long(rest, "--help") and len(rest) == 1:
        return None
    if subcommand == "rebase":
        return None if _any_long(rest, _SAFE_REBASE) else "rebase"
    if subcommand == "reset":
        for mode in ("--hard", "--merge", "--keep"):
            if has_long(rest, mode):
                return f"reset {mode}"
        return None
    if subcommand in {"fetch", "pull"}:
        return _fetch_danger(rest, shorts, operands)
    if subcommand in {"push", "send-pack"}:
        forced = _any_long(rest, ("--force", "--force-with-lease", "--force-if-includes",
                                  "--mirror", "--delete", "--prune"))  # fmt: skip
        if forced or shorts & {"f", "d"}:
            return "push --force or --delete"
        if any(word.startswith("+") or word.startswith(":") for word in operands):
            return "push of a forced (+) or deleting (:) refspec"
        return None
    if subcommand == "checkout":
        if shorts & {"f", "B", "p"} or _any_long(rest, ("--force", "--patch", "--merge")):
            return "checkout --force (discards local changes)"
        # A ref name never ends with `/`: `git checkout logs/` names a folder.
        if (
            "--" in rest
            or "." in operands
            or len(operands) >= 2
            or any(operand.endswith("/") for operand in operands)
        ):
            return "checkout of paths (discards their local changes)"
        return None  # a branch switch: git refuses one that would overwrite local changes
    if subcommand == "switch":
        if shorts & {"f", "C"} or _any_long(rest, ("--discard-changes", "--force-create",
                                                   "--force")):  # fmt: skip
            return "switch --discard-changes"
        return None
    if subcommand == "restore":
        staged_only = has_long(rest, "--staged") and not has_long(rest, "--worktree")
        staged_only = staged_only or ("S" in shorts and "W" not in shorts)
        return None if staged_only else "restore (discards local changes)"
    if subcommand == "branch":
        deleting = "d" in shorts or has_long(rest, "--delete")
        forced = "f" in shorts or has_long(rest, "--force")
        if shorts & {"D", "M", "C"} or (deleting and forced) or (forced and operands):
            return "branch -D/-M/-f"
        return None
    if subcommand == "tag":
        if shorts & {"d", "f"} or _any_long(rest, ("--delete", "--force")):
            return "tag -d/-f"
        return None
    if subcommand == "update-ref" or (subcommand == "symbolic-ref" and "d" in shorts):
        return f"{subcommand} (moves or deletes a ref)"
    if subcommand == "reflog" and rest and rest[0] in {"expire", "delete"}:
        return f"reflog {rest[0]}"
    if subcommand in {"prune", "filter-branch", "filter-repo", "replace", "prune-packed"}:
        return subcommand
    if subcommand == "gc" and has_long(rest, "--prune"):
        return "gc --prune"
    if subcommand == "clean":
        dry = "n" in shorts or has_long(rest, "--dry-run")
        return None if dry else "clean"
    if subcommand == "stash" and rest and rest[0] in {"drop", "clear"}:
        return f"stash {rest[0]}"
    if subcommand == "commit" and has_long(rest, "--amend"):
        return "commit --amend"
    if subcommand == "worktree" and rest and rest[0] in {"remove", "prune"}:
        return f"worktree {rest[0]}"
    if subcommand == "rm" and ("f" in shorts or has_long(rest, "--force")):
        return "rm --force"
    if subcommand == "read-tree" and ("u" in shorts or has_long(rest, "--reset")):
        return "read-tree -u"
    if subcommand == "checkout-index" and ("f" in shorts or has_long(rest, "--force")):
        return "checkout-index --force"
    return None
