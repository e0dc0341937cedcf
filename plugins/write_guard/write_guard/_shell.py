"""Split a shell command line into simple commands with their redirections, like bash would."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import NoReturn

_PUNCTUATION = ";&|<>()\n"
_OPERATORS = (
    "&>>", "<<<", "<<-", "&&", "||", ";;", "|&", ">>", ">|", ">&", "&>", "<<", "<&", "<>",
    ";", "&", "|", "(", ")", "\n", ">", "<",
)  # fmt: skip
# The alternation tries longer operators first, as `_OPERATORS` lists them.
_OPERATOR = re.compile("|".join(re.escape(operator) for operator in _OPERATORS))
_SINGLE_OPERATORS = frozenset(_OPERATORS)
_SEPARATORS = frozenset({";", ";;", "&", "&&", "||", "|", "|&", "\n"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_READ_REDIRECTS = frozenset({"<", "<<<", "<&", "<<", "<<-"})
_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "esac"}
)
_CHANGES_DIRECTORY = frozenset({"cd", "pushd"})
# Loops unrolled (`a*(?:b a*)*` rather than `(?:a|b)*`): one regex step per run, not per character.
_SUBSTITUTION = re.compile(r"\$\(([^()]*(?:\([^()]*\)[^()]*)*)\)|`([^`]*)`")
# The tokens of a line as bash splits it for us (the POSIX lexer, `shlex`, splits lines without
# comments the same way, bash's ANSI-C strings aside): blanks " \t\r", one regex step per token
# with the blanks before it: a punctuation run, or a word of plain runs, quoted strings and
# escapes (loops unrolled, one step per run). A `#` starts a comment only where a word would
# start, and the comment stops before its newline, which still ends the command; inside a word
# `#` is a plain character (bash runs `echo a#; rm x` as two commands). A `$'…'` string is
# bash's ANSI-C quoting: a backslash escapes its quote there (`$'\''` is one `'`), unlike in a
# plain single-quoted string. A comment matches with no group; trailing blanks match nothing.
# `bad` is a quote, backslash or `$'` that opens no piece (an unclosed quote, a trailing
# escape). Every quantifier is possessive: no token is a prefix of a longer reading the pattern
# could backtrack to (what follows a run can never start it), so giving characters back never
# finds another match, and the engine keeps no backtracking state per run.
_WORD_PIECE = r"""\$'[^'\\]*+(?:\\.[^'\\]*+)*+'|\$(?!')|'[^']*+'|"[^"\\]*+(?:\\.[^"\\]*+)*+"|\\."""
_TOKEN = re.compile(
    r"""[ \t\r]*+(?:
    (?P<punct>[;&|<>()\n]++)
    |(?P<word>(?:[^ \t\r;&|<>()\n'"\\\#$]++|"""
    + _WORD_PIECE
    + r""")(?:[^ \t\r;&|<>()\n'"\\$]++|"""
    + _WORD_PIECE
    + r""")*+)
    |\#[^\n]*+
    |(?P<bad>['"\\]|\$'))""",
    re.VERBOSE | re.DOTALL,
)
# What a `$((…))` holds when it is arithmetic: one parenthesised expression and nothing after
# (`$((echo a) )` is a command substitution of a subshell). bash runs no command there.
_ARITHMETIC = re.compile(r"\([^()]*\)")
# A backslash-newline joins two lines, unless that backslash is itself escaped (`echo a\\`
# then a newline is two commands): escaped backslashes are matched in pairs, left to right.
_CONTINUATION = re.compile(r"\\(?:\\|\r?\n)")
_PIECE = re.compile(
    r"""\$'((?:[^'\\]|\\.)*)'|\$"([^"\\]*(?:\\.[^"\\]*)*)"|'([^']*)'|"([^"\\]*(?:\\.[^"\\]*)*)"|\\(.)""",
    re.DOTALL,
)
# The escapes of an ANSI-C string, as bash reads them (any other backslash stays as written).
_ANSI_ESCAPE = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
    r"|U([0-9A-Fa-f]{1,8})|c(.))",
    re.DOTALL,
)
_ANSI_LETTERS = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
    "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


COMPUTED = "$(…)"
"""The word the analysis keeps for a substitution `$(…)`: its value is known only at run time."""


def is_computed(word: str) -> bool:
    """Whether a word's value is known only when the line runs (an expansion or substitution:
    `$X`, `${X}`, `$1`, `$@`, `$(…)`, backticks). A lone `$` is a letter, and `$?`, `$#`, `$$`
    and `$!` are numbers, which spell no program, option or ref."""
    if "`" in word:
        return True
    if "$" not in word or word == "$":
        return False
    return _EXPANSION.search(word) is not None


# An expansion that may spell anything (`$?`, `$#`, `$$` and `$!` are numbers; a `$` last is
# a letter).
_EXPANSION = re.compile(r"\$(?![?#$!]|$)")


class ShellParseError(ValueError):
    """The command line cannot be split with confidence (unbalanced quotes or parentheses)."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command: its words, the files it redirects output to, and the cwd it runs in."""

    argv: tuple[str, ...]
    redirects: tuple[tuple[str, str], ...] = ()
    cwd_prefix: str | None = None


@dataclass(slots=True)
class ParsedLine:
    """Every simple command found, including those inside substitutions, plus heredoc bodies."""

    commands: list[SimpleCommand] = field(default_factory=list)
    heredocs: list[str] = field(default_factory=list)
    substitutions: list[str] = field(default_factory=list)


def parse_line(command: str) -> ParsedLine:
    """Parse a command line; raises `ShellParseError` when it cannot be split with confidence."""
    text = join_continued_lines(command)
    text, heredocs, expanding = _cut_heredocs(text)
    tokens = _operator_tokens(text)
    # Substitutions are read from the raw text: a word split by spaces would hide them. A
    # heredoc whose delimiter is unquoted runs the substitutions of its body too.
    substitutions = [
        inner
        for source in (text, *expanding)
        if "$(" in source or "`" in source
        for m in _SUBSTITUTION.finditer(source)
        if not _ARITHMETIC.fullmatch(inner := m.group(1) or m.group(2) or "")
    ]
    parsed = ParsedLine(heredocs=heredocs, substitutions=substitutions)
    _collect(tokens, parsed)
    return parsed


def join_continued_lines(command: str) -> str:
    """`command` with each unescaped backslash-newline removed, as bash joins continued lines."""
    return _CONTINUATION.sub(_join_continued, command) if "\\" in command else command


def _join_continued(match: re.Match[str]) -> str:
    pair = match.group()
    return pair if pair == "\\\\" else ""


def shell_tokens(text: str) -> list[str]:
    """Words and punctuation runs of `text`, exactly as the POSIX lexer splits them."""
    return [token for token, _is_punctuation in _lex(text)]


def _lex(text: str) -> list[tuple[str, bool]]:
    """The tokens of `shell_tokens`, each flagged when it is made of punctuation only.

    A quoted or escaped word of punctuation (`'>'`, `\\;`) is flagged too: the command analysis
    has always read it as an operator, the cautious reading for a guard.
    """
    tokens: list[tuple[str, bool]] = []
    append = tokens.append
    for punctuation, word, bad in _TOKEN.findall(text):
        if punctuation:
            append((punctuation, True))
        elif word:
            if "'" in word or '"' in word or "\\" in word:
                word = _PIECE.sub(_unquote, word)
                append((word, _is_punctuation_run(word)))
            else:
                append((word, False))  # a plain run never holds punctuation
        elif bad:
            _refuse(text)
    return tokens


def _operator_tokens(text: str) -> list[tuple[str, bool]]:
    """`_split_operators(_lex(text))` in one pass over the tokens (this runs for every line
    the full analysis reads): each punctuation run broken into its operators as it is lexed."""
    tokens: list[tuple[str, bool]] = []
    append = tokens.append
    for punctuation, word, bad in _TOKEN.findall(text):
        if word:
            if "'" not in word and '"' not in word and "\\" not in word:
                append((word, False))  # a plain run never holds punctuation
                continue
            word = _PIECE.sub(_unquote, word)
            if not _is_punctuation_run(word):
                append((word, False))
                continue
            punctuation = word  # a quoted word of punctuation reads as operators (see `_lex`)
        if punctuation:
            if punctuation in _SINGLE_OPERATORS:
                append((punctuation, True))
            else:
                tokens.extend((operator, True) for operator in _OPERATOR.findall(punctuation))
        elif bad:
            _refuse(text)
    return tokens


def _is_punctuation_run(token: str) -> bool:
    return bool(token) and not token.strip(_PUNCTUATION)


def _unquote(match: re.Match[str]) -> str:
    ansi, locale, single, double, escaped = match.groups()
    if single is not None:
        return str(single)
    if ansi is not None:
        return _ANSI_ESCAPE.sub(_ansi_escape, ansi) if "\\" in ansi else str(ansi)
    if double is None:
        double = locale  # `$"…"` is a double-quoted string bash may translate
        if double is None:
            return str(escaped)
    if "\\" not in double:
        return str(double)
    # Inside double quotes a backslash escapes only a quote or a backslash; before anything else
    # both characters stay. Pairs are taken left to right: first every `\\`, and no piece
    # between them holds another, so each remaining `\"` is a pair of its own.
    return "\\".join(piece.replace('\\"', '"') for piece in double.split("\\\\"))


def _ansi_escape(match: re.Match[str]) -> str:
    letter, octal, hexa, short, long, control = match.groups()
    if letter is not None:
        return _ANSI_LETTERS[letter]
    if control is not None:
        return chr(ord(control) & 0x1F)
    number = int(octal, 8) & 0xFF if octal is not None else int(hexa or short or long, 16)
    return chr(number) if number <= 0x10FFFF else match.group()


def _refuse(text: str) -> NoReturn:
    """A quote or backslash that opens nothing: refused, in the POSIX lexer's words if it has
    some (it reads `#` inside a word as a comment, so it may find nothing wrong: refused too)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        list(lexer)
    except ValueError as error:
        raise ShellParseError(str(error)) from None
    raise ShellParseError("a quote or an escape that is never closed")


def _cut_heredocs(text: str) -> tuple[str, list[str], list[str]]:
    """Drop heredoc bodies from the line (their text is data, not commands) and keep them; and
    the bodies bash expands (an unquoted delimiter: `$(…)` in them runs).

    Only a `<<` bash reads as an operator opens one: not inside quotes, a comment, arithmetic
    or `${…}` (a line that only seems to open one must not have its next lines taken for data).
    The delimiter is the word after it with its quotes removed (`E"O"F` is `EOF`). A body ends
    at a line that is the delimiter, blanks aside: never later than bash ends it."""
    if "<<" not in text:
        return text, [], []
    scan = _HeredocScan(text)
    scan.run()
    return "".join(scan.kept), scan.bodies, scan.expanding


# What ends an unquoted word (a heredoc's delimiter), and what a comment may follow.
_WORD_END = frozenset(" \t\n;&|<>()")
_BEFORE_WORD = frozenset(" \t\n;&|<>()")


class _HeredocScan:
    """One pass over a line as bash reads its quoting, collecting heredoc bodies (see
    `_cut_heredocs`). `stack` holds the contexts open at the current character: `"` a double
    quote, `` ` `` a backtick substitution, `(` a command substitution, `P` a parenthesis,
    `a` arithmetic (`$((`, `((`), `b` a `${` or `$[` expansion, `p` a bracket inside these two."""

    __slots__ = ("bodies", "expanding", "kept", "pending", "stack", "start", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.kept: list[str] = []
        self.bodies: list[str] = []
        self.expanding: list[str] = []
        self.pending: list[tuple[str, bool, bool]] = []
        self.stack: list[str] = []
        self.start = 0

    def run(self) -> None:
        text, stack = self.text, self.stack
        size = len(text)
        index = 0
        while index < size:
            char = text[index]
            top = stack[-1] if stack else ""
            if top == '"':
                index = self._in_double_quotes(index, char)
            elif top in ("a", "b", "p"):
                index = self._in_expansion(index, char, top)
            else:
                index = self._in_command(index, char)
        self.kept.append(text[self.start :])

    def _in_double_quotes(self, index: int, char: str) -> int:
        text = self.text
        if char == "\\":
            return index + 2
        if char == '"':
            self.stack.pop()
        elif char == "$" and text.startswith("$((", index):
            self.stack.append("a")
            return index + 3
        elif char == "$" and text.startswith("$(", index):
            self.stack.append("(")
            return index + 2
        elif char == "$" and text.startswith(("${", "$["), index):
            self.stack.append("b")
            return index + 2
        elif char == "`":
            self.stack.append("`")
        return index + 1

    def _in_expansion(self, index: int, char: str, top: str) -> int:
        stack = self.stack
        if char == "\\":
            return index + 2
        if char in "([{":
            stack.append("p")
        elif char in ")]}":
            if top == "p":
                stack.pop()
            elif top == "a" and char == ")" and self.text.startswith("))", index):
                stack.pop()
                return index + 2
            elif top == "b" and char in "]}":
                stack.pop()
        return index + 1

    def _in_command(self, index: int, char: str) -> int:
        text, stack = self.text, self.stack
        starts_word = index == 0 or text[index - 1] in _BEFORE_WORD
        if char == "\\":
            return index + 2
        if char == "'":
            end = text.find("'", index + 1)
            return len(text) if end < 0 else end + 1
        if char == '"':
            stack.append('"')
        elif char == "`":
            if stack and stack[-1] == "`":
                stack.pop()
            else:
                stack.append("`")
        elif char == "$":
            if text.startswith("$((", index):
                stack.append("a")
                return index + 3
            if text.startswith("$(", index):
                stack.append("(")
                return index + 2
            if text.startswith(("${", "$["), index):
                stack.append("b")
                return index + 2
        elif char == "(":
            if starts_word and text.startswith("((", index):
                stack.append("a")
                return index + 2
            stack.append("P")
        elif char == ")":
            if stack and stack[-1] in ("(", "P"):
                stack.pop()
        elif char == "#" and starts_word:
            end = text.find("\n", index)
            return len(text) if end < 0 else end
        elif char == "<" and text.startswith("<<", index):
            if text.startswith("<<<", index):
                return index + 3
            return self._operator(index)
        elif char == "\n" and self.pending:
            return self._bodies(index)
        return index + 1

    def _operator(self, index: int) -> int:
        """Read the delimiter after the `<<` at `index`; its body starts at the next newline."""
        text = self.text
        size = len(text)
        at = index + 2
        strip_tabs = text.startswith("-", at)
        at += strip_tabs
        while at < size and text[at] in " \t":
            at += 1
        word = at
        while at < size and text[at] not in _WORD_END:
            if text[at] == "\\":
                at += 2
            elif text[at] in "'\"":
                end = _closing_quote(text, at)
                at = size if end < 0 else end + 1
            else:
                at += 1
        raw = text[word:at]
        if raw:
            quoted = "'" in raw or '"' in raw or "\\" in raw
            self.pending.append((_PIECE.sub(_unquote, raw), strip_tabs, quoted))
        return at

    def _bodies(self, newline: int) -> int:
        """Cut the pending heredocs' bodies, which start after the newline at `newline`."""
        text = self.text
        self.kept.append(text[self.start : newline + 1])
        at = newline + 1
        for delimiter, strip_tabs, quoted in self.pending:
            wanted = delimiter.strip()
            lines: list[str] = []
            while at <= len(text):
                end = text.find("\n", at)
                end = len(text) if end < 0 else end
                line = text[at:end]
                at = end + 1
                if (line.lstrip("\t") if strip_tabs else line).strip() == wanted:
                    break
                lines.append(line)
            body = "\n".join(lines)
            self.bodies.append(body)
            if not quoted:
                self.expanding.append(body)
        self.pending.clear()
        self.start = min(at, len(text))
        return at


def _closing_quote(text: str, start: int) -> int:
    """The index of the quote that closes the one at `start` (-1: none)."""
    quote = text[start]
    if quote == "'":
        return text.find("'", start + 1)
    at = start + 1
    while at < len(text):
        if text[at] == "\\":
            at += 2
        elif text[at] == '"':
            return at
        else:
            at += 1
    return -1


def _split_operators(tokens: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Break punctuation runs (`)\\n`, `>&`) into operators; flag which tokens are operators."""
    out: list[tuple[str, bool]] = []
    append = out.append
    for token, is_punctuation in tokens:
        if not is_punctuation:
            append((token, False))
        elif token in _SINGLE_OPERATORS:
            append((token, True))
        else:
            out.extend((operator, True) for operator in _OPERATOR.findall(token))
    return out


def _collect(tokens: list[tuple[str, bool]], parsed: ParsedLine) -> None:
    argv: list[str] = []
    redirects: list[tuple[str, str]] = []
    cwd_stack: list[str | None] = [None]
    depth = 0

    def flush() -> None:
        if not argv and not redirects:
            return  # back-to-back separators: no command between them
        start = 0
        while start < len(argv) and argv[start] in _KEYWORDS:
            start += 1
        if start < len(argv) or redirects:
            words = tuple(argv[start:]) if start else tuple(argv)
            parsed.commands.append(SimpleCommand(words, tuple(redirects), cwd_stack[-1]))
            if words and words[0] in _CHANGES_DIRECTORY:
                cwd_stack[-1] = _next_cwd(cwd_stack[-1], list(words[1:]))
        argv.clear()
        redirects.clear()

    index = 0
    count = len(tokens)
    while index < count:
        token, is_operator = tokens[index]
        index += 1
        if not is_operator:
            if token[-1:] == "$" and index < count and tokens[index] == ("(", True):
                # A word computed at run time (`touch $(echo DIR)/f`, `git$(true)`, or in a
                # program's place): one word whose value is unknown (the substitution's own
                # commands are read from the text).
                index = _matching_parenthesis(tokens, index)
                word = token[:-1] + COMPUTED
                if index < count and not tokens[index][1] and tokens[index][0].startswith("/"):
                    word += tokens[index][0]
                    index += 1
                argv.append(word)
                continue
            argv.append(token)
            continue
        if token in _SEPARATORS:
            flush()
        elif token == "(":
            flush()
            depth += 1
            cwd_stack.append(cwd_stack[-1])
        elif token == ")":
            flush()
            depth -= 1
            if depth < 0:
                raise ShellParseError("unbalanced parenthesis")
            cwd_stack.pop()
        elif token in _WRITE_REDIRECTS or token in _READ_REDIRECTS:
            if index >= count or tokens[index][1]:
                raise ShellParseError(f"redirection {token!r} without a target")
            target = tokens[index][0]
            index += 1
            if argv and argv[-1].isdigit() and token != "&>":
                argv.pop()  # the fd number belongs to the redirection, not to the command
            if token == ">&" and (target.isdigit() or target == "-"):
                continue  # duplicating a file descriptor writes no file
            if token in _WRITE_REDIRECTS:
                redirects.append((token, target))
            elif token == "<&" and not target.isdigit() and target != "-":
                raise ShellParseError("unusual descriptor redirection")
    flush()
    if depth != 0:
        raise ShellParseError("unbalanced parenthesis")


def _matching_parenthesis(tokens: list[tuple[str, bool]], start: int) -> int:
    """The index after the `)` that closes the `(` at `start` (the end when none does)."""
    depth = 0
    for index in range(start, len(tokens)):
        if tokens[index] == ("(", True):
            depth += 1
        elif tokens[index] == (")", True):
            depth -= 1
            if depth == 0:
                return index + 1
    return len(tokens)


def _next_cwd(current: str | None, arguments: list[str]) -> str | None:
    words = [word for word in arguments if not word.startswith("-") or word == "-"]
    if not words:
        return "~"
    target = words[0]
    if target == "-":
        return "$OLDPWD"  # unknowable: anything relative to it is rejected later
    if target.startswith(("/", "~", "$")) or current is None:
        return target
    return current.rstrip("/") + "/" + target
