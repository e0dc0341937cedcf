"""Find the files a Bash command writes, seeing through wrappers, `bash -c` and substitutions."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from write_guard._git import GIT_CORE_PREFIX, GLOBAL_VALUE_OPTIONS
from write_guard._programs import RUNS_NOTHING
from write_guard._shell import (
    COMPUTED,
    ShellParseError,
    is_computed,
    join_continued_lines,
    parse_line,
    shell_tokens,
)

_MAX_DEPTH = 4

# wrapper → options that take a value; the first other word is the wrapped command.
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user"}),
    "doas": frozenset({"-u", "-C"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "setsid": frozenset(),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "coproc": frozenset(),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "chrt": frozenset({"-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"}),
    "taskset": frozenset(),
    "caffeinate": frozenset(),
    "unbuffer": frozenset(),
}
# Wrappers that take one operand before the command: a duration, a CPU mask, a priority.
_BEFORE_COMMAND = frozenset({"timeout", "taskset", "chrt"})
# Builtins whose `NAME=value` arguments set variables for the rest of the line.
_EXPORTERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_XARGS_VALUE_OPTIONS = frozenset({"-I", "-i", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "-e"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
_INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "perl", "php", "deno", "bun"})
INTERPRETER_PREFIXES = ("python3.", "python2")
# Programs the control plane reads the arguments of (see `_control`).
CONTROL_NAMES = frozenset(
    {"hookchain", "kill", "pkill", "killall", "skill", "snice", "killall5", "fuser"}
)


@dataclass(frozen=True, slots=True)
class WriteTarget:
    """A path a command writes, how it writes it, and the directory it is relative to."""

    path: str
    how: str
    cwd_prefix: str | None = None


@dataclass(slots=True)
class BashAnalysis:
    """What a command line writes, the git invocations it runs, and what could not be analysed."""

    targets: list[WriteTarget] = field(default_factory=list)
    git_commands: list[tuple[str, ...]] = field(default_factory=list)
    links: list[WriteTarget] = field(default_factory=list)
    """The targets that may become a link as the line runs (what ln makes, where mv puts a file
    that may be one, what cp makes when it copies links): a path at or below one, written by
    another command of the line, may be written through it (see `_fallback`)."""
    git_dirs: list[WriteTarget] = field(default_factory=list)
    """Where each git call works (its cwd, `-C`, `--git-dir`, `--work-tree`): git writes its
    index, refs and objects there."""
    uncertain: list[str] = field(default_factory=list)
    heredocs: list[str] = field(default_factory=list)
    programs: list[tuple[str, ...]] = field(default_factory=list)
    """Every simple command run, wrappers seen through, `VAR=` assignments kept in front."""
    assigned: list[str] = field(default_factory=list)
    """`VAR=value` set for the rest of the line (a bare assignment, `export`, `declare`); an
    exported name with no value here is `VAR=$(…)`, its value known only when it runs."""


def analyse_bash(command: str) -> BashAnalysis:
    """Analyse a command line; never raises (what it cannot parse lands in `uncertain`)."""
    analysis = BashAnalysis()
    _analyse_line(command, analysis, None, 0)
    if analysis.assigned and analysis.git_commands:
        # What the line sets reaches each git call it runs, wherever it stands (a loop may run
        # the assignment first): in front of the call's own, which git reads last.
        analysis.git_commands = [(*analysis.assigned, *call) for call in analysis.git_commands]
    return analysis


def _analyse_line(line: str, analysis: BashAnalysis, prefix: str | None, depth: int) -> None:
    if depth > _MAX_DEPTH:
        analysis.uncertain.append("nesting too deep")
        return
    try:
        parsed = parse_line(line)
    except ShellParseError as error:
        analysis.uncertain.append(f"cannot parse: {error}")
        if "\n" in line:
            _analyse_complete_lines(line, analysis, prefix, depth)
        return
    analysis.heredocs.extend(parsed.heredocs)
    for inner in parsed.substitutions:
        _analyse_line(inner, analysis, prefix, depth + 1)
    for simple in parsed.commands:
        here = _join_prefix(prefix, simple.cwd_prefix)
        for operator, target in simple.redirects:
            analysis.targets.append(WriteTarget(target, f"redirection {operator}", here))
        _analyse_argv(list(simple.argv), analysis, here, depth, bool(parsed.heredocs))


_COMPLETE_LINES_READ = 200
"""Lines of a text it cannot parse that the analysis still reads, one complete line at a time."""


def _analyse_complete_lines(
    line: str, analysis: BashAnalysis, prefix: str | None, depth: int
) -> None:
    """bash runs each complete line of a text before the one it cannot read (`git branch -D x`
    then a line with an unclosed quote): those lines are read too, each as soon as the lines
    gathered since the last one parse (a quoted string may span lines)."""
    gathered: list[str] = []
    for number, text in enumerate(join_continued_lines(line).split("\n")):
        if number >= _COMPLETE_LINES_READ:
            return
        gathered.append(text)
        complete = "\n".join(gathered)
        try:
            parse_line(complete)
        except ShellParseError:
            continue
        _analyse_line(complete, analysis, prefix, depth)
        gathered.clear()


def _join_prefix(outer: str | None, inner: str | None) -> str | None:
    if inner is None:
        return outer
    if outer is None or inner.startswith(("/", "~", "$")):
        return inner
    return outer.rstrip("/") + "/" + inner


def _analyse_argv(
    argv: list[str], analysis: BashAnalysis, prefix: str | None, depth: int, has_heredoc: bool
) -> None:
    analysis.programs.append(tuple(argv))
    assignments = 0
    while assignments < len(argv) and _is_assignment(argv[assignments]):
        assignments += 1
    env, argv = argv[:assignments], argv[assignments:]
    if not argv:
        analysis.assigned.extend(env)
        return
    name = argv[0].rpartition("/")[2]  # os.path.basename, without its generic path handling
    if name not in ANALYSED_COMMANDS and not name.startswith(INTERPRETER_PREFIXES):
        if name in _EXPORTERS:
            for word in argv[1:]:
                if _is_assignment(word):
                    analysis.assigned.append(word)
                elif word.isidentifier():
                    analysis.assigned.append(f"{word}={COMPUTED}")
        elif name.startswith(GIT_CORE_PREFIX):
            analysis.git_commands.append((*env, *argv))
        elif is_computed(name):
            # A program name known only when the line runs (`$G`, `$(echo git)`, `git${IFS}x`):
            # it may be git with any subcommand, the cautious reading (see `_git`).
            analysis.uncertain.append("a computed command name")
            analysis.git_commands.append((*env, "git", COMPUTED, *_after_computed(argv)))
        elif name not in RUNS_NOTHING:
            _commands_in_arguments(argv, env, analysis, prefix, depth)
        return  # most commands (`ls`, `echo`, `cd`) write nothing: one test rather than eight
    if name in _WRAPPERS:
        if name == "env" and any(word.startswith(("-S", "--split-string")) for word in argv):
            analysis.uncertain.append("env -S splits a string")
        rest = _skip_options(argv[1:], _WRAPPERS[name])
        if name == "time":  # GNU time writes its report where -o says
            options = argv[1 : len(argv) - len(rest)]
            for path in _long_value(options, ("-o", "--output")):
                analysis.targets.append(WriteTarget(path, "time -o", prefix))
        # `env A=1 git …` and `A=1 command git …`: the wrapped command runs with both.
        carried = [word for word in argv[1 : len(argv) - len(rest)] if _is_assignment(word)]
        split = _split_string(argv[1 : len(argv) - len(rest)]) if name == "env" else None
        if split is not None:
            rest = [*_words(split), *rest]  # `env -S 'git branch -D x'`: env splits the string
        elif name in _BEFORE_COMMAND and rest and not {"-p", "--pid"} & set(argv):
            rest = rest[1:]  # `timeout 5 cmd`, `taskset 1 cmd`, `chrt -o 0 cmd`
        if name == "watch":
            _analyse_line(" ".join(rest), analysis, prefix, depth + 1)  # run by `sh -c`
            return
        _analyse_argv([*env, *carried, *rest], analysis, prefix, depth, has_heredoc)
        return
    if name in {"mapfile", "readarray"}:
        callback = _long_value(argv[1:], ("-C",))
        for line in callback:  # run with each batch of lines read
            _analyse_line(line, analysis, prefix, depth + 1)
        return
    if name in {"trap", "alias"}:
        # The action of `trap 'cmd' EXIT` and the value of `alias x='cmd'` are lines bash runs.
        for word in argv[1:2] if name == "trap" else argv[1:]:
            if not word.startswith("-"):
                _analyse_line(word.partition("=")[2] if name == "alias" else word, analysis,
                              prefix, depth + 1)  # fmt: skip
        return
    if name == "xargs":
        rest = _skip_options(argv[1:], _XARGS_VALUE_OPTIONS)
        before = len(analysis.targets)
        probe = BashAnalysis()
        _analyse_argv([*rest, "{xargs-input}"], probe, prefix, depth, has_heredoc)
        analysis.programs.extend(probe.programs)
        analysis.git_commands.extend(probe.git_commands)
        analysis.uncertain.extend(probe.uncertain)
        known = [target for target in probe.targets if "{xargs-input}" not in target.path]
        analysis.targets[before:before] = known
        if len(known) < len(probe.targets):
            analysis.uncertain.append("xargs supplies the paths written")
        return
    if name in _SHELLS:
        script = _option_value(argv[1:], "-c")
        if script is not None:
            _analyse_line(script, analysis, prefix, depth + 1)
        elif len(argv) == 1 and has_heredoc:
            for body in analysis.heredocs:
                _analyse_line(body, analysis, prefix, depth + 1)
        return
    if name == "eval":
        _analyse_line(" ".join(argv[1:]), analysis, prefix, depth + 1)
        return
    if name == "git":
        analysis.git_commands.append((*env, *argv))
        analysis.git_dirs.extend(WriteTarget(path, "git", prefix) for path in _git_dirs(argv))
        return
    if name in _INTERPRETERS or name.startswith(INTERPRETER_PREFIXES):
        inline = any(
            word in {"--eval", "--command"}
            or (_is_short_cluster(word) and set(word[1:]) & {"c", "e", "i"})
            for word in argv[1:]
        )
        if inline or has_heredoc:
            analysis.uncertain.append(f"{name} runs inline code")
        return
    if name == "find":
        for command in _find_commands(argv[1:]):
            probe = BashAnalysis()
            _analyse_argv(command, probe, prefix, depth, has_heredoc)
            analysis.programs.extend(probe.programs)
            analysis.git_commands.extend(probe.git_commands)
            analysis.uncertain.extend(probe.uncertain)
    extractor = _EXTRACTORS.get(name)
    if extractor is not None:
        made = _LINKS_MADE.get(name)
        links = set(made(argv[1:])) if made is not None else set()
        how = "cp -r" if name == "cp" and _copies_trees(argv[1:]) else name
        for path in extractor(argv[1:]):
            target = WriteTarget(path, how, prefix)
            analysis.targets.append(target)
            if path in links:
                analysis.links.append(target)  # the same object: its own write is no doubt
                links.discard(path)


def _after_computed(argv: list[str]) -> list[str]:
    """The words after a computed program name; a backtick substitution split at its blanks
    (`` `echo git` branch``) ends at the word that closes it."""
    index = 1
    if argv[0].count("`") % 2:
        while index < len(argv) and not argv[index].count("`") % 2:
            index += 1
        index += 1
    return argv[index:]


def _commands_in_arguments(
    argv: list[str], env: list[str], analysis: BashAnalysis, prefix: str | None, depth: int
) -> None:
    """A program that may run a command named in its arguments (`strace -o f git …`,
    `parallel git … ::: x`, `script -qc 'git …'`, `su -c 'git …'`): a word that is git starts
    a git call, and the string of a `-c` or `--command` option is read as a line."""
    for index, word in enumerate(argv[1:], 1):
        base = word.rpartition("/")[2]
        if base == "git" or base.startswith(GIT_CORE_PREFIX):
            analysis.git_commands.append((*env, *argv[index:]))
            return
        before = argv[index - 1]
        if before == "--command" or (_is_short_cluster(before) and before.endswith("c")):
            _analyse_line(word, analysis, prefix, depth + 1)
        elif word.startswith("--command="):
            _analyse_line(word.partition("=")[2], analysis, prefix, depth + 1)


def _git_dirs(argv: list[str]) -> list[str]:
    """The folders a git call works in: `-C` values joined in turn (git applies each to the
    last), else its cwd; and what `--git-dir` and `--work-tree` name."""
    here = "."
    named: list[str] = []
    index = 1
    while index < len(argv):
        word = argv[index]
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if word == "-C":
            here = following if following.startswith(("/", "~", "$")) else f"{here}/{following}"
        elif word in {"--git-dir", "--work-tree"}:
            named.append(following)
        elif word.startswith(("--git-dir=", "--work-tree=")):
            named.append(word.partition("=")[2])
        elif not word.startswith("-"):
            break
        index += 2 if word in GLOBAL_VALUE_OPTIONS else 1
    return [here, *named]


def _find_commands(words: list[str]) -> list[list[str]]:
    """The commands of find's `-exec`, `-execdir`, `-ok`, `-okdir`, each ended by `;` or `+`
    (the lexer ends the whole command at a `;`: the last one runs to the end)."""
    commands: list[list[str]] = []
    index = 0
    while index < len(words):
        if words[index] in {"-exec", "-execdir", "-ok", "-okdir"}:
            end = index + 1
            while end < len(words) and words[end] not in {";", "+"}:
                end += 1
            commands.append(words[index + 1 : end])
            index = end
        index += 1
    return [command for command in commands if command]


def _split_string(options: list[str]) -> str | None:
    """The string of env's `-S STRING`, `-SSTRING` or `--split-string=STRING`, if any."""
    for index, word in enumerate(options):
        if word in {"-S", "--split-string"}:
            return options[index + 1] if index + 1 < len(options) else None
        if word.startswith("--split-string="):
            return word.partition("=")[2]
        if word.startswith("-S"):
            return word[2:]
    return None


def _words(text: str) -> list[str]:
    """`text` split into words as the shell would (env -S splits its string that way)."""
    try:
        return shell_tokens(text)
    except ShellParseError:
        return [COMPUTED]


def _is_assignment(word: str) -> bool:
    if "=" not in word:
        return False
    return word.partition("=")[0].isidentifier()


def _skip_options(words: list[str], value_options: frozenset[str]) -> list[str]:
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return words[index + 1 :]
        if _is_assignment(word):
            index += 1
            continue
        if not word.startswith("-") or word == "-":
            return words[index:]
        index += 2 if word in value_options else 1
    return []


def _option_value(words: list[str], option: str) -> str | None:
    for index, word in enumerate(words):
        clustered = _is_short_cluster(word) and word[1:].isalpha() and option[1] in word[1:]
        if word == option or clustered:
            rest = words[index + 1 :]
            if rest[:1] == ["--"]:
                rest = rest[1:]  # `bash -c -- 'script'`
            return rest[0] if rest else None
    return None


def _positionals(words: list[str], value_options: frozenset[str] = frozenset()) -> list[str]:
    if "--" not in words and value_options.isdisjoint(words):
        # Nothing ends the options or takes a value: every word is read on its own.
        return [word for word in words if not word.startswith("-") or word == "-"]
    out: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            out.extend(words[index + 1 :])
            break
        if word.startswith("-") and word != "-":
            index += 2 if word in value_options else 1
            continue
        out.append(word)
        index += 1
    return out


def _long_value(words: list[str], names: tuple[str, ...]) -> list[str]:
    """The values of the options `names` in every spelling the programs accept: `--name=V`,
    `--name V`, an abbreviation of a long name (`--target=V`), `-nV`, and a short option last
    in a cluster (`-so V`)."""
    found: list[str] = []
    for index, word in enumerate(words):
        if not word.startswith("-") or word == "-":
            continue
        if word == "--":
            break
        following = words[index + 1] if index + 1 < len(words) else None
        if word.startswith("--"):
            key, equals, value = word.partition("=")
            for name in names:
                if name.startswith("--") and (
                    key == name or (len(key) >= 5 and name.startswith(key))
                ):
                    if equals:
                        found.append(value)
                    elif following is not None:
                        found.append(following)
                    break
            continue
        for name in names:
            if name.startswith("--") or len(name) != 2:
                continue
            letter = name[1]
            if word == name or (
                word[1:].isalpha()
                and word.endswith(letter)
                and len(word) > 2
                and letter in word[1:]
                and word[1:].index(letter) == len(word) - 2
            ):
                if following is not None:
                    found.append(following)
                break
            if word.startswith(name) and len(word) > 2:
                found.append(word[2:])
                break
    return found


def _every_operand(words: list[str]) -> list[str]:
    return _positionals(words)


def _truncate(words: list[str]) -> list[str]:
    return _positionals(words, frozenset({"-s", "--size", "-r", "--reference"}))


def _after_first(words: list[str]) -> list[str]:
    if any(word.startswith("--reference") for word in words):
        return _positionals(words)
    return _positionals(words)[1:]


# A symbolic mode of chmod; one that starts with `-` (`-x`, `-w`, `-rwx`) is the mode, not an
# option (chmod's options are letters none of these modes holds alone: -c, -f, -v, -R).
_CHMOD_MODE = re.compile(r"[ugoa]*[-+=][rwxXstugo]*(?:,[ugoa]*[-+=][rwxXstugo]*)*")


def _chmod(words: list[str]) -> list[str]:
    if any(word.startswith("--reference") for word in words):
        return _positionals(words)
    operands: list[str] = []
    mode = False
    for index, word in enumerate(words):
        if word == "--":
            operands.extend(words[index + 1 :])
            break
        if not mode and _CHMOD_MODE.fullmatch(word):
            mode = True
        elif word.startswith("-") and word != "-":
            continue
        elif not mode:
            mode = True
        else:
            operands.append(word)
    return operands[1:] if not mode and operands else operands


def _destination(words: list[str]) -> list[str]:
    explicit = _long_value(words, ("-t", "--target-directory"))
    if explicit:
        return explicit
    operands = _positionals(words, frozenset({"-S", "--suffix", "-m", "--mode", "-o", "-g"}))
    return operands[-1:] if len(operands) >= 2 else operands


def _link(words: list[str]) -> list[str]:
    operands = _positionals(words, frozenset({"-S", "--suffix", "-t"}))
    explicit = _long_value(words, ("-t", "--target-directory"))
    if explicit:
        made = explicit
    elif len(operands) == 1:
        # `ln -s /usr/share/dict`: the link is made in the cwd, named after the target.
        made = [operands[0].rstrip("/").rpartition("/")[2] or operands[0]]
    else:
        made = operands[-1:]
    if _has_flag(words, "s", "--symbolic"):
        return made
    return made + _sources(operands, bool(explicit))


def _copy(words: list[str]) -> list[str]:
    made = _destination(words)
    if not _has_flag(words, "l", "--link"):
        return made
    operands = _positionals(words, frozenset({"-S", "--suffix", "-t"}))
    return made + _sources(operands, bool(_long_value(words, ("-t", "--target-directory"))))


def _sources(operands: list[str], explicit_target: bool) -> list[str]:
    """The files a hard link is made to (every operand but the last, or all of them after
    -t): written through the new name, as they are the same file."""
    if explicit_target or len(operands) == 1:
        return operands
    return operands[:-1]


def _has_flag(words: list[str], letter: str, long: str) -> bool:
    """Whether `words` hold a flag as `-x`, in a short cluster (`-sf`), or as its long name."""
    for word in words:
        if word == "--":
            return False
        if word == long or (_is_short_cluster(word) and word[1:].isalpha() and letter in word):
            return True
    return False


def _link_names(words: list[str]) -> list[str]:
    """The names ln makes (not the files a hard link is made to)."""
    explicit = _long_value(words, ("-t", "--target-directory"))
    if explicit:
        return explicit
    operands = _positionals(words, frozenset({"-S", "--suffix", "-t"}))
    if len(operands) == 1:
        return [operands[0].rstrip("/").rpartition("/")[2] or operands[0]]
    return operands[-1:]


def _moved_to(words: list[str]) -> list[str]:
    explicit = _long_value(words, ("-t", "--target-directory"))
    return explicit or _positionals(words, frozenset({"-S", "--suffix", "-t"}))[-1:]


def _copies_links(words: list[str]) -> list[str]:
    """Where cp puts what it copies when it copies links as links (recursively, -a, -d, -P,
    -s): they may be links to anywhere."""
    keeps = any(_has_flag(words, letter, long) for letter, long in _LINK_COPY_FLAGS)
    keeps = keeps or any(word.startswith("--preserve=") and "links" in word for word in words)
    return _destination(words) if keeps or _copies_trees(words) else []


def _copies_trees(words: list[str]) -> bool:
    return any(_has_flag(words, letter, long) for letter, long in _TREE_COPY_FLAGS)


_TREE_COPY_FLAGS = (("r", "--recursive"), ("R", "--recursive"), ("a", "--archive"))
_LINK_COPY_FLAGS = (("d", "--no-dereference"), ("P", "--no-dereference"),
                    ("s", "--symbolic-link"))  # fmt: skip


def _move(words: list[str]) -> list[str]:
    return _positionals(words, frozenset({"-S", "--suffix", "-t"})) + _long_value(
        words, ("-t", "--target-directory")
    )


def _install(words: list[str]) -> list[str]:
    if "-d" in words or "--directory" in words:
        return _positionals(words, frozenset({"-m", "--mode", "-o", "-g"}))
    return _destination(words)


def _sed(words: list[str]) -> list[str]:
    in_place = any(
        word.startswith("--in-place") or (_is_short_cluster(word) and "i" in word[1:])
        for word in words
    )
    if not in_place:
        return []
    has_script_option = any(word in {"-e", "-f", "--expression", "--file"} for word in words)
    # BSD sed spells "no backup" as a separate empty suffix: `sed -i '' script file`.
    operands = [
        w for w in _positionals(words, frozenset({"-e", "-f", "--expression", "--file", "-l"})) if w
    ]
    return operands if has_script_option else operands[1:]


def _is_short_cluster(word: str) -> bool:
    return word.startswith("-") and not word.startswith("--") and len(word) > 1


def _dd(words: list[str]) -> list[str]:
    return [word[3:] for word in words if word.startswith("of=")]


def _curl(words: list[str]) -> list[str]:
    return _long_value(words, ("-o", "--output", "--output-dir"))


def _wget(words: list[str]) -> list[str]:
    return _long_value(words, ("-O", "--output-document", "-P", "--directory-prefix"))


def _find(words: list[str]) -> list[str]:
    if "-delete" not in words:
        return []
    starts: list[str] = []
    for word in words:
        if word.startswith(("-", "(", "!")):
            break
        starts.append(word)
    return starts or ["."]


def _tar(words: list[str]) -> list[str]:
    first = words[0] if words else ""
    mode = first.lstrip("-") if not first.startswith("--") else ""
    creating = any(w in words for w in ("--create", "-c", "-r", "-u", "--append", "--update"))
    if creating or (mode.isalpha() and set(mode) & set("cru")):
        if mode.isalpha() and "f" in mode and not first.startswith("-") and len(words) > 1:
            return [words[1]]  # `tar cf ARCHIVE …`
        return _long_value(words, ("-f", "--file"))
    extracting = (
        "--extract" in words
        or "--get" in words
        or any(_is_short_cluster(word) and "x" in word[1:] for word in words)
        or (not first.startswith("-") and "x" in first)
    )
    if not extracting:
        return []
    return _long_value(words, ("-C", "--directory")) or ["."]


_EXTRACTORS: dict[str, Callable[[list[str]], list[str]]] = {
    "rm": _every_operand,
    "rmdir": _every_operand,
    "unlink": _every_operand,
    "shred": _every_operand,
    "touch": _every_operand,
    "mkfifo": _every_operand,
    "mknod": lambda words: _positionals(words, frozenset({"-m", "--mode"}))[:1],
    "mkdir": lambda words: _positionals(words, frozenset({"-m", "--mode"})),
    "tee": _every_operand,
    "truncate": _truncate,
    "chmod": _chmod,
    "chown": _after_first,
    "chgrp": _after_first,
    "cp": _copy,
    "ln": _link,
    "link": _every_operand,
    "rsync": _destination,
    "mv": _move,
    "install": _install,
    "sed": _sed,
    "gsed": _sed,
    "dd": _dd,
    "curl": _curl,
    "wget": _wget,
    "find": _find,
    "tar": _tar,
}

WRAPPER_NAMES = frozenset(_WRAPPERS)
"""Programs that run the command after their options (read as a program of its own)."""
WRITERS_READ = frozenset(_EXTRACTORS)
"""Programs whose written paths the analysis reads from their words."""

_LINKS_MADE: dict[str, Callable[[list[str]], list[str]]] = {
    "ln": _link_names,
    "mv": _moved_to,
    "cp": _copies_links,
}

# Every command name the analysis reacts to; a line running none of them (and with no
# redirection, substitution or heredoc) writes nothing (see `_quick`).
ANALYSED_COMMANDS = frozenset({
    *_WRAPPERS, "xargs", *_SHELLS, "eval", "git", *_INTERPRETERS, *_EXTRACTORS, *CONTROL_NAMES,
    "trap", "alias", "mapfile", "readarray",
})  # fmt: skip
