"""Normalisation and fingerprints: action keys, output and error signatures, error classes."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from hashlib import blake2b
from itertools import compress
from typing import Any, Literal

Outcome = Literal["ok", "error", "denied"]
"""What a call came to: `classify_outcome` decides it from the result."""

OUTPUT_TAIL_CHARS = 4096
"""Only the tail of an output is looked at: errors surface at the end, and the cost stays flat."""

DENIAL_HEAD_CHARS = 300
"""The start of a failed call's text that is searched for the words of a refusal."""

LABEL_CAP = 60
SNIPPET_CAP = 160
MAX_ERROR_LINES = 12
WHOLE_TAIL_LINES = 24
"""Lines of an output read as its identity when none says what failed: a linter's last issues
and its summary, not a whole log."""

# Fields that describe a call for people without changing what it does.
COSMETIC_FIELDS = frozenset({"description", "explanation", "brief", "reason", "thought", "timeout"})

# Fields of a structured result that say how a call ran (its duration, its tokens, a subagent's
# id), not what it returned: two runs that found the same thing differ in them every time.
RUN_FIELDS = frozenset(
    {"durationMs", "totalDurationMs", "totalTokens", "totalToolUseCount", "usage", "agentId"}
)

NEVER_COUNTED_TOOLS = frozenset(
    {
        "TodoWrite",
        "TodoRead",
        "ToolSearch",
        "AskUserQuestion",
        "EnterPlanMode",
        "ExitPlanMode",
        "TaskCreate",
        "TaskUpdate",
        "ScheduleWakeup",
    }
)
SIBLING_CANCELLED = "Sibling tool call errored"
POLL_TOOLS = frozenset(
    {"BashOutput", "TaskOutput", "Monitor", "TaskGet", "TaskList", "GetTask", "Poll"}
)
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
TARGETED_TOOLS = EDIT_TOOLS | {"Read", "NotebookRead", "LS", "WebFetch"}
"""Tools whose failures are about the one file, folder or address they name (`target_of`),
whether or not the error text names it ("File does not exist.", "status code 404")."""

_POLL_COMMAND = re.compile(r"^\s*(sleep\s+\d|watch\s|tail\s+-f|gh\s+run\s+watch)")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Plain substring search: Python's regex alternations cost ~70 ns a character on 4 KiB tails.
_ERROR_WORDS = (
    "error",
    "fail",
    "exception",
    "traceback",
    "not found",
    "denied",
    "cannot",
    "unable",
    "refused",
    "invalid",
    "fatal",
    "panic",
    "no such",
    "could not",
    "timed out",
    "too many",
    "no space",
    "rate limit",
    "unauthori",
    "forbidden",
    "not permitted",
    "not recognized",
    "exit code",
    "expected:",
    "received:",
    "✕",
    "●",
)
_ERROR_LINE_SCAN_CAP = 40
_CLASS_LINE_CAP = 160
# Volatile parts that differ between two runs of the same failure. Separate small patterns,
# each tried only when a cheap substring test says it can match: one big alternation is slow.
_LINE_COL = re.compile(r"(?<=[:(])\d+(?:[:,]\d+)*")
_DURATION = re.compile(r"\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b")
# `2025-09-17T16:56:06.576Z`, and as npm writes it into a log file name, `2025-09-17T16_56_06_576Z`.
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[T _]\d\d[:_]\d\d[:_]\d\d(?:[._]\d+)?Z?")
_TIME_OF_DAY = re.compile(r"(?<!\d)\d\d:\d\d:\d\d(?:[.,]\d+)?(?!\d)")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_LINE_WORD = re.compile(r"line \d+")
_GUTTER = re.compile(r"\s*>?\s*\d+\s*\|")
_TMP_PATH = re.compile(r"(?:/private)?(?:/var/folders/|/tmp/)[\w.\-/]+")
# What names one request or run, new every time: a cloud API's request, host or correlation id
# (`RequestID: 1A2B…, HostID: base64…`), and any UUID.
_RUN_ID = re.compile(
    r"(?i)\b((?:request|correlation|trace|span|host|amz-request|activity)[ _-]?id)\b"
    r"[\"']?\s*[:=]?\s*[\"']?[\w+/=.\-]{6,}"
)
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)

_ERROR_CLASSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "command-not-found",
        (
            "command not found",
            "is not recognized as an internal or external command",
            "failed to spawn",
            "executable file not found",
        ),
    ),
    (
        "missing-module",
        (
            "modulenotfounderror",
            "no module named",
            "cannot find module",
            "cannot find package",
            "err_module_not_found",
        ),
    ),
    ("permission", ("permission denied", "eacces", "eperm", "operation not permitted")),
    (
        "network",
        (
            "could not resolve host",
            "enotfound",
            "econnrefused",
            "econnreset",
            "network is unreachable",
            "connection refused",
            "name resolution",
        ),
    ),
    ("rate-limit", (" 429", "rate limit", "too many requests")),
    ("auth", (" 401", "unauthorized", "unauthorised", "authentication failed", "invalid api key")),
    ("disk", ("no space left on device", "enospc", "disk quota exceeded")),
    ("timeout", ("timed out", "etimedout", "deadline exceeded")),
)
# Every marker with its class, in class order: the first marker found names the earliest class
# that has one, as a scan class by class would, in one flat loop.
_CLASS_MARKERS = tuple(
    (marker, error_class) for error_class, markers in _ERROR_CLASSES for marker in markers
)
# Tried in order: `zsh: command not found: rg` names `rg`, not the shell. Each with the fixed
# text any match of it holds: a pattern is searched only where that text is found (a substring
# test in C), as a search that starts at every space of a text of long paths backtracks at each.
_COMMAND_TOKENS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple(
    (literals, re.compile(pattern))
    for literals, pattern in (
        (("command not found:",), r"command not found:\s*([\w.\-/]{1,60})"),
        ((": command not found",), r"(?:^|\s)([\w.\-/]{1,60}): command not found"),
        (("' is not recognized",), r"'([\w.\-/]{1,60})' is not recognized"),
        (("no module named",), r"no module named '?([\w.]{1,60})"),
        (("cannot find module '",), r"cannot find module '([^']{1,60})'"),
        (("failed to spawn",), r"failed to spawn:? `([\w.\-/]{1,60})`"),
        (
            ('": executable file not found',),
            r"exec: \"([\w.\-/]{1,60})\": executable file not found",
        ),
        (("cannot find package ",), r"cannot find package [\"']([^\"']{1,60})[\"']"),
        ((": permission denied",), r"(?:^|\s)([\w.\-/]{1,60}): permission denied"),
        (("could not resolve host",), r"could not resolve host:?\s*([\w.\-]{1,60})"),
        (
            ("econnrefused", "enotfound", "econnreset"),
            r"(?:econnrefused|enotfound|econnreset)\s+([\w.:\-]{1,60})",
        ),
        (("failed to connect to ",), r"failed to connect to ([\w.\-]{1,60}) port"),
    )
)

PRECONDITION = "precondition"
"""The error class of a failed harness precondition of an edit (`PRECONDITION_MARKERS`)."""

PRECONDITION_MARKERS = (
    "file has not been read yet",
    "string to replace not found",
    "matches of the string to replace",
    "file has been modified since read",
    "file has been unexpectedly modified",
)
"""Claude Code's own checks before an edit (in a failed call's first lines, lower case)."""

_PERSON_DENIAL = ("doesn't want to proceed", "tool use was rejected", "user rejected")
_RULE_DENIAL = ("has been denied", "permission to use", "denied by")
_HOOK_DENIAL = ("hook error:", "blocked by hook", "prompt hook condition was not met")
_DENIAL_MARKERS = _PERSON_DENIAL + _RULE_DENIAL + _HOOK_DENIAL  # joined once, not per error


# `json.dumps(output, sort_keys=True, default=str)`, with the encoder built once.
_encode = json.JSONEncoder(sort_keys=True, default=str).encode


def digest(text: str) -> str:
    """A short stable fingerprint (the same across processes, unlike `hash`)."""
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def is_counted(tool: str, text: str, *, is_error: bool = True) -> bool:
    """Whether a call takes part in detection (bookkeeping tools and interrupts do not).

    Interrupts and sibling cancels are reported as error results: a successful call's text is
    not searched for them."""
    if tool in NEVER_COUNTED_TOOLS:
        return False
    if not is_error:
        return True
    if text.startswith("[Request interrupted"):
        return False
    # A call cancelled because a parallel call failed did nothing of its own.
    return SIBLING_CANCELLED not in text[:80]


def output_text(output: Any) -> str:
    """The output as the model read it, as text."""
    if isinstance(output, str):
        return output
    if output is None:
        return ""
    try:
        return _encode(output)
    except (TypeError, ValueError):
        return str(output)


def tail(text: str) -> str:
    return text[-OUTPUT_TAIL_CHARS:] if len(text) > OUTPUT_TAIL_CHARS else text


def classify_outcome(is_error: bool, denied: bool, text: str) -> Outcome:
    """`denied` for refusals (person, permission rule, hook), `error` for failures, else `ok`."""
    if denied:
        return "denied"
    if not is_error:
        return "ok"
    head = text[:DENIAL_HEAD_CHARS].lower()
    for marker in _DENIAL_MARKERS:
        if marker in head:
            return "denied"
    return "error"


def action_key(tool: str, tool_input: Mapping[str, Any]) -> str:
    """Tool plus its canonical input: sorted keys, cosmetic fields dropped, whitespace collapsed."""
    parts = [tool]
    nested: dict[str, Any] = {}
    for name in sorted(tool_input):
        if name in COSMETIC_FIELDS:
            continue
        value = tool_input[name]
        if isinstance(value, str):
            if name == "command" and value.startswith("sleep"):
                # The wait before a command does not change what it does: `sleep 10 && curl …`
                # and `sleep 30 && curl …` ask the same thing, a little later.
                value = without_wait(value)
            parts.append(f"{name}={collapse_whitespace(value)}")
        elif value is None or isinstance(value, (bool, int, float)):
            parts.append(f"{name}={value!r}")
        else:
            nested[name] = value
    if nested:
        try:
            parts.append(json.dumps(nested, sort_keys=True, separators=(",", ":"), default=str))
        except (TypeError, ValueError):
            parts.append(repr(nested))
    return digest("\x00".join(parts))


_WAIT_PREFIX = re.compile(r"sleep\s+\d+(?:\.\d+)?[smh]?\s*(?:&&|;)\s*")


def without_wait(command: str) -> str:
    """`command` without a leading `sleep N &&` (or `sleep N;`)."""
    wait = _WAIT_PREFIX.match(command)
    return command[wait.end() :] if wait is not None else command


# A duration or age as status tables print it: `12s`, `2m5s`, `3h`, `250ms`, `1.5s`.
_AGE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:ms|[dhms])(?:\d+(?:ms|[hms]))*(?!\w)")


def steady_text(text: str) -> str:
    """`text` without the parts that change while nothing happens (timestamps, times of day,
    durations and ages): what a poll's answer is compared by."""
    if "-" in text:
        text = _TIMESTAMP.sub("#", text)
    if ":" in text:
        text = _TIME_OF_DAY.sub("#", text)
    return _DURATION.sub("#", _AGE.sub("#", text))


def collapse_whitespace(text: str) -> str:
    """`" ".join(text.split())`: runs of whitespace made one space, none at the ends."""
    # A printable text has no whitespace but the plain space (every other kind is a control or a
    # separator), so a text with no doubled or outer space is already collapsed: most commands,
    # paths and patterns are, and are not split into words to be joined again.
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    return " ".join(text.split())


def file_of(tool: str, tool_input: Mapping[str, Any]) -> str:
    """The file an edit tool changes, or ""."""
    if tool not in EDIT_TOOLS:
        return ""
    for name in ("file_path", "notebook_path", "path"):
        value = tool_input.get(name)
        if isinstance(value, str):
            return value
    return ""


def short_path(path: str) -> str:
    """The last two non-empty parts of `path`, `\\` read as `/`."""
    parts = (path.replace("\\", "/") if "\\" in path else path).split("/")
    if len(parts) >= 2 and parts[-1] and parts[-2]:
        # The usual path: its last two parts are not empty, so no filtering is needed.
        return f"{parts[-2]}/{parts[-1]}"
    parts = [part for part in parts if part]
    return "/".join(parts[-2:]) if parts else path


def target_of(tool_input: Mapping[str, Any]) -> str:
    """The file, folder or address a call names, or ""."""
    for name in ("file_path", "notebook_path", "path", "url"):
        value = tool_input.get(name)
        if isinstance(value, str):
            return value
    return ""


_LABEL_FIELDS = ("file_path", "notebook_path", "path", "url", "pattern")


def label_of(tool: str, tool_input: Mapping[str, Any]) -> str:
    """A short human label: `npm test`, `Edit src/users.py`, `WebFetch`."""
    command = tool_input.get("command")
    # `isspace` says what `strip` would, without copying a long command.
    if isinstance(command, str) and command and not command.isspace():
        text = " ".join(command[: LABEL_CAP * 2].split())
    else:
        for name in _LABEL_FIELDS:
            path = tool_input.get(name)
            if isinstance(path, str):
                break
        else:
            path = ""
        text = f"{tool} {short_path(path)}" if path else tool
    return text if len(text) <= LABEL_CAP else text[: LABEL_CAP - 1] + "…"


# A shell command that may change files: a redirection into a file, in-place editors, file
# moves, version-control and package-manager commands that rewrite the tree, formatters.
# A redirection and a `--fix`/`--write` flag start with a literal, which `re` finds by a fast
# scan. The words are one pattern each that starts with its word (a literal too), the word start
# checked behind it: a pattern that starts with `\b`, or an alternation of the words, is tried
# at every position of a long command (a `python -c` script of 2,000 characters took 150 us).
# Each is tried only when its word is in the command at all, which a substring search says
# faster still. A test compares them with the one alternation on many commands.
_REDIRECTION = re.compile(r">(?<![\d&>]>)>?\s*(?!&|/dev/null)[\w~./$\"']")
_FIXING_FLAG = re.compile(r"--(?:fix|write)\b")
_INSTALLS = r"\s+(?:install|i|add|remove|uninstall|update|upgrade|get|sync|mod\s+tidy)\b"
_GIT_REWRITES = (
    r"\s+(?:checkout|switch|reset|restore|apply|am|stash|merge|rebase|pull|cherry-pick"
    r"|revert|rm|mv|clean)\b"
)
_MUTATING_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (word, re.compile(f"{word}(?<!\\w{word}){rest}"))
    for word, rest in (
        *((word, r"\b") for word in ("tee", "mv", "cp", "rm", "touch", "mkdir", "patch")),
        *((word, r"\b") for word in ("chmod", "ln", "truncate", "unzip", "black")),
        ("tar", r"\s+-?x\w*\b"),
        ("sed", r"\s+(?:-\w*\s+)*-i"),
        ("perl", r"\s+-\w*i"),
        ("git", _GIT_REWRITES),
        *((word, _INSTALLS) for word in ("npm", "pnpm", "yarn", "bun", "uv", "poetry", "cargo")),
        ("go", _INSTALLS),
        ("pip", "3?" + _INSTALLS),
        ("gofmt", r"\s+-\w*w"),
        ("ruff", r"\s+format\b"),
    )
)

_MUTATING_NAMES = tuple(word for word, _ in _MUTATING_WORDS)
_MUTATING_PATTERNS = tuple(pattern for _, pattern in _MUTATING_WORDS)


def may_change_files(command: str) -> bool:
    """Whether a successful shell command may have changed files (so a repeat after it may see
    something new): cheap to over-answer, since it only keeps a repeat from counting."""
    if _REDIRECTION.search(command) or _FIXING_FLAG.search(command):
        return True
    # The words are looked for in C (`compress` of the substring tests), most often finding
    # none: a Python step for each of the words cost more than the searches.
    for pattern in compress(_MUTATING_PATTERNS, map(command.__contains__, _MUTATING_NAMES)):
        if pattern.search(command) is not None:
            return True
    return False


def is_poll(tool: str, tool_input: Mapping[str, Any]) -> bool:
    if tool in POLL_TOOLS:
        return True
    command = tool_input.get("command")
    return tool == "Bash" and isinstance(command, str) and bool(_POLL_COMMAND.match(command))


def edit_transition(tool: str, tool_input: Mapping[str, Any]) -> tuple[str, str, str]:
    """What an edit does to its file: ("write", content hash, "") or ("edit", old, new) hashes."""
    if tool == "Write":
        content = tool_input.get("content")
        return ("write", digest(content) if isinstance(content, str) else "", "")
    if tool == "MultiEdit":
        edits = tool_input.get("edits")
        pairs = (
            [edit for edit in edits if isinstance(edit, Mapping)] if isinstance(edits, list) else []
        )
        old = "\x00".join(str(edit.get("old_string", "")) for edit in pairs)
        new = "\x00".join(str(edit.get("new_string", "")) for edit in pairs)
        return ("edit", digest(old), digest(new))
    old_value = tool_input.get("old_string", tool_input.get("old_source", ""))
    new_value = tool_input.get("new_string", tool_input.get("new_source", ""))
    return ("edit", digest(str(old_value)), digest(str(new_value)))


@dataclass(frozen=True, slots=True)
class Failure:
    """What a failed call's output says, without its content: signature, class, snippet."""

    signature: str
    error_class: str
    token: str
    snippet: str
    bare: bool = False
    """Whether the output says nothing but an exit code: the same only for the same command."""
    precondition: str = ""
    """The marker of a failed harness precondition of its edit tools ("file has not been read
    yet"), or "": the harness teaching the model, which is a loop only when the same target
    keeps failing the same way (whatever text it quotes back)."""


def _has_digit(line: str) -> bool:
    """Whether `line` holds an ASCII digit: ten substring scans in C, where a set test would
    make a string of every character."""
    return (
        "0" in line
        or "1" in line
        or "2" in line
        or "3" in line
        or "4" in line
        or "5" in line
        or "6" in line
        or "7" in line
        or "8" in line
        or "9" in line
    )


def _clean_line(line: str) -> str:
    if "/tmp/" in line or "/var/folders/" in line:
        line = _TMP_PATH.sub("#", line)
    if "id" in line or "ID" in line or "Id" in line:
        line = _RUN_ID.sub(r"\1 #", line)
    if not _has_digit(line):
        return " ".join(line.split())
    gutter = _GUTTER.match(line)
    if gutter is not None:
        line = line[gutter.end() :]
    if "0x" in line:
        line = _HEX.sub("#", line)
    if "-" in line:
        line = _UUID.sub("#", _TIMESTAMP.sub("#", line))
    if ":" in line:
        line = _TIME_OF_DAY.sub("#", line)
    if "line " in line:
        line = _LINE_WORD.sub("line #", line)
    # Durations before line numbers: `(0.02s)` is one duration, not a line 0 and a `.02s`.
    if "s" in line:
        line = _DURATION.sub("#", line)
    if ":" in line or "(" in line:
        line = _LINE_COL.sub("#", line)
    return " ".join(line.split())


# `path/to/file.ext:12` (or `file.ext(12,5)`) at a line's start: compilers, linters and test
# runners name each failure so, often with no error word on the line (golangci-lint, tsc -p).
_LOCATION_LINE = re.compile(
    r"^[ \t]*(?:"
    r"[\w.\\/@+\-]*\w\.[A-Za-z]\w{0,7}(?::\d+|\(\d+|[ \t]*$)"  # a.go:3, a.ts(3,1), a.ts
    r'|File "[^"\n]+", line \d+'  # a Python traceback's frame
    r"|In [\w.\\/@+\-]+ line \d+"  # shellcheck
    r")",
    re.MULTILINE,
)
# A line that reports a pass: words of an error may be in a test's name ("error page renders:
# OK, passed 100 tests"), and such a line says nothing of the failure.
_PASS_WORDS = ("passed", ": ok", ", ok", "✓", "✔")
_PASS_STARTS = ("ok ", "ok\t", "pass ", "--- pass", "=== run")
_BLOB_RUN = 60
"""A line with a run this long of letters, digits and `+/=_-` and no space is data (base64, a
hash, a minified bundle): never an error line, never a quote."""


def _is_pass_line(lowered: str) -> bool:
    if "fail" in lowered or "falsif" in lowered or "panic" in lowered or "fatal" in lowered:
        return False
    return lowered.startswith(_PASS_STARTS) or any(word in lowered for word in _PASS_WORDS)


def _is_blob(line: str) -> bool:
    if len(line) < _BLOB_RUN:
        return False
    longest = max(map(len, line.split()), default=0)
    return longest >= _BLOB_RUN and " " not in line.strip()[:_BLOB_RUN]


def _worth_reading(line: str) -> bool:
    """Whether a candidate line can describe a failure: not a pass line, not a blob."""
    return not _is_blob(line) and not _is_pass_line(line.lower())


def error_lines(text: str) -> list[str]:
    """The last error-looking lines of `text`: lines with an error word (found by substring
    search, not a regex scan) and, when one of them says more than an exit code, the lines that
    locate it (`path:line`, a file header, a traceback's frames); never a pass line or a blob."""
    lowered = text.lower()
    if "\n" not in text:
        # One line: it is the only candidate, and the first word found decides.
        line = text.strip()
        if line and _worth_reading(line) and any(word in lowered for word in _ERROR_WORDS):
            return [line]
        return []
    starts: set[int] = set()
    for word in _ERROR_WORDS:
        position = lowered.rfind(word)
        found = 0
        while position >= 0 and found < _ERROR_LINE_SCAN_CAP:
            line_start = lowered.rfind("\n", 0, position) + 1
            starts.add(line_start)
            found += 1
            position = lowered.rfind(word, 0, line_start)
    kept = _lines_at(text, starts)
    # Locations alone (`In a.sh line 3:`, a bare path) may be all that differs between two
    # reports, or all that is alike: they join lines that say what failed, and without such a
    # line the whole tail is read instead (`failure_of`).
    if (":" in text or "(" in text) and any(not _EXIT_ONLY.fullmatch(line) for _, line in kept):
        # Only the last lines are kept: a location before the earliest one kept cannot be.
        since = kept[0][0] if len(kept) == MAX_ERROR_LINES else 0
        starts.update(match.start() for match in _LOCATION_LINE.finditer(text, since))
        kept = _lines_at(text, starts)
    return [line for _, line in kept]


def _lines_at(text: str, starts: set[int]) -> list[tuple[int, str]]:
    """The last `MAX_ERROR_LINES` lines worth reading that start at `starts`, in text order,
    with where each starts."""
    lines = []
    for line_start in sorted(starts, reverse=True):
        line_end = text.find("\n", line_start)
        line = text[line_start : line_end if line_end >= 0 else len(text)].strip()
        if line and _worth_reading(line):
            lines.append((line_start, line))
            if len(lines) == MAX_ERROR_LINES:
                break
    lines.reverse()
    return lines


def error_class_of(lines: list[str]) -> tuple[str, str]:
    """The environment class the error lines name (command-not-found, network…) and its token."""
    lowered = "\n".join(line[-_CLASS_LINE_CAP:] for line in lines).lower()
    for marker, error_class in _CLASS_MARKERS:
        if marker in lowered:
            for literals, pattern in _COMMAND_TOKENS:
                if not any(map(lowered.__contains__, literals)):
                    continue
                named = pattern.search(lowered)
                if named is not None:
                    return error_class, named.group(1)
            return error_class, ""
    return "", ""


_EXIT_ONLY = re.compile(r"(?i)(?:error:?\s*)?(?:exit (?:code|status)|exited with)\s*#?\d*\.?")


def _precondition(head: str) -> str:
    return next((marker for marker in PRECONDITION_MARKERS if marker in head), "")


_SNIPPET_WORDS = (
    ("error", "exception"),
    ("fail", "fatal", "panic", "cannot", "not found", "denied", "✕", "●"),
)
"""What the quoted line of a failure says, best first."""


def _quote(lines: list[str], cleaned: list[str]) -> str:
    """The failing line to quote (cleaned, of `lines`): the first naming an error, else one
    naming a failure, else one locating it, else the last line (error lines hold no pass line
    and no blob); an exit code only when nothing else is said."""
    telling = [
        (raw, line)
        for raw, line in zip(lines, cleaned, strict=True)
        if not _EXIT_ONLY.fullmatch(line)
    ]
    if not telling:
        return cleaned[-1] if cleaned else ""
    for words in _SNIPPET_WORDS:
        for _, line in telling:
            low = line.lower()
            if any(word in low for word in words):
                return line
    # No line names a failure: a linter's `path:line: message` is the failing line, not the
    # summary under it.
    return next((line for raw, line in telling if _LOCATION_LINE.match(raw)), telling[-1][1])


def failure_of(text: str) -> Failure:
    """The failure identity of an error output: its error lines (or, with none, every line of
    its tail) with volatile parts stripped, and the failing line to quote."""
    plain = tail(text)
    if "\x1b" in plain:
        plain = _ANSI.sub("", plain)
    lines = error_lines(plain)
    if all(_EXIT_ONLY.fullmatch(line) for line in lines):
        # No line says what failed (an exit code says only that something did): the whole tail
        # is the identity, so two failures that differ anywhere differ here (a constant summary
        # line alone would make them one).
        lines = [
            line
            for line in plain.splitlines()[-WHOLE_TAIL_LINES:]
            if line.strip() and _worth_reading(line)
        ]
    cleaned = [_clean_line(line) for line in lines]
    snippet = _quote(lines, cleaned)
    error_class, token = error_class_of(lines)
    return Failure(
        signature=digest("\n".join(cleaned)),
        error_class=error_class,
        token=token,
        snippet=snippet[:SNIPPET_CAP],
        bare=all(_EXIT_ONLY.fullmatch(line.strip()) for line in cleaned),
        precondition=_precondition(plain[:DENIAL_HEAD_CHARS].lower()),
    )


def redact(text: str) -> str:
    """A snippet safe to show: anything that looks like a secret is masked."""
    if text.isascii():
        # Every match holds one of these words. Only for ASCII text: there `lower` folds case
        # as the pattern's IGNORECASE does, which also lets `ſ` stand for `s` and `K` for `k`.
        lowered = text.lower()
        if not (
            "api" in lowered
            or "token" in lowered
            or "secret" in lowered
            or "passw" in lowered
            or "authorization" in lowered
            or "sk-" in lowered
            or "sk_" in lowered
            or "ghp" in lowered
            or "gho" in lowered
            or "xox" in lowered
        ):
            return text
    return _SECRET.sub("[redacted]", text)


_SECRET = re.compile(
    r"(?i)(?:api[_-]?key|token|secret|password|passwd|authorization)\s*[:=]\s*\S+"
    r"|\b(?:sk|ghp|gho|xox[abp])[-_][A-Za-z0-9_\-]{8,}"
)
