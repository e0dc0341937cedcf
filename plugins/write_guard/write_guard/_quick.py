"""Prove, without parsing, that a Bash command line writes nothing but `/dev/null`."""

from __future__ import annotations

import re

from write_guard._bash import ANALYSED_COMMANDS, INTERPRETER_PREFIXES
from write_guard._shell import join_continued_lines

_PUNCTUATION = ";&|<>()\n"
# `N>&M` (and ` >&M`) duplicates a descriptor and writes no file; the lexer reads it as the
# word N, the operator `>&` and the all-digit word M, which the analysis skips.
# Written to start with the literal `>`, which the regex engine looks for at C speed.
_DUPLICATION = re.compile(r">(?<=[0-9 \t]>)&[0-9]+(?=[ \t\r\n;&|]|$)")
# A redirection to /dev/null, the target a whole word. The analysis reads each as one write
# of /dev/null when the operator is a punctuation run of its own, which the character before
# it tells (checked apart: a leading lookbehind would cost a regex step per character).
_SINK = re.compile(r"(&>>|&>|>>|>\||>)[ \t]*/dev/null(?=[ \t\r\n;&|]|$)")
# Before an operator, these may make it part of a longer run or of a word.
_NOT_BEFORE_SINK = frozenset(";&|<>()\n\\'\"")
# The line splits without error (every quote closed, no trailing escape) exactly when it is a
# sequence of these pieces; unrolled, and possessive: each run ends where the next piece must
# start, so giving characters back could never reach the end of the line.
_BALANCED = re.compile(
    r"""[^'"\\]*+(?:(?:'[^']*+'|"[^"\\]*+(?:\\.[^"\\]*+)*+"|\\.)[^'"\\]*+)*+""", re.DOTALL
)
# The pieces the lexer reads as one: quoted strings and escapes (what `_BALANCED` is made of).
_PIECE = re.compile(r"""'[^']*'|"[^"\\]*(?:\\.[^"\\]*)*"|\\.""", re.DOTALL)
_EXPANSION = re.compile(r"\$(?![?#!$])")
_LITERAL_IN_QUOTES = str.maketrans({"(": "_", ")": "_", ">": "_", "#": "_"})


def writes_nothing(command: str) -> bool:
    """True only when the full analysis of `command` finds no target, git call or doubt."""
    return sink_redirections(command) == []


def sink_redirections(command: str) -> list[str] | None:
    """The operators of the line's redirections to /dev/null, in order, when the full analysis
    of `command` finds exactly those (each a target /dev/null) and no other target, git call
    or doubt; None when that is not proven (which does not mean the line writes).

    What the analysis reacts to, and why its absence proves the rest of the surface empty:
    - `>` outside a descriptor duplication or a redirection to /dev/null, and any `<`:
      redirections and heredocs (a quoted `'>'` counts: the analysis reads a word of
      punctuation as an operator); `(`/`)`: subshells and `$(…)`, the only source of
      unbalanced-parenthesis errors; a backtick: substitutions;
    - `#`: a comment hides quotes from the lexer, which the balance check cannot follow;
    - unclosed quotes or a trailing escape: the line cannot be split;
    - `patch`/`apply`: the patch surface is read from the raw text;
    - any word naming a wrapper, shell, interpreter, `eval`, `git`, `xargs` or a writing
      command (the only words whose presence adds a target, a git call or a doubt).
    Inside a quoted string holding a character other than punctuation, `(`, `)`, `>` and `#`
    are letters of a word (see `_literal_in_quotes`). Anything else the line holds (words,
    quotes, `;`, `&&`, `|`, newlines, assignments) only separates or feeds commands the
    analysis ignores.
    """
    # Most lines the analysis is needed for say so in their first word (`rm`, `git`, `python3`).
    first = command.split(None, 1)
    if first and first[0].rpartition("/")[2] in ANALYSED_COMMANDS:
        return None
    # The analysis joins continued lines first; so must the checks, the same way.
    text = join_continued_lines(command)
    if "patch" in text or "apply" in text:
        return None
    if "<" in text or "`" in text or "$(" in text:
        return None
    # An expansion may compute a program name (`$G reset --hard`, which the analysis reads as
    # git); only `$?`, `$#`, `$$` and `$!` (numbers) never spell one (`$0` is the shell's name).
    if "$" in text and _EXPANSION.search(text) is not None:
        return None
    sinks: list[str] = []
    unexplained = "(" in text or ")" in text or "#" in text
    if not unexplained and ">" in text:
        unexplained = ">" in _DUPLICATION.sub("", text)
    if unexplained and "'" not in text and '"' not in text and "/dev/null" not in text:
        return None  # nothing quoted that could hold these, nor a sink that could explain `>`
    if not _names_nothing_analysed(text):
        return None
    if unexplained:
        # The costly part, only for lines the cheap checks above could not settle.
        if "'" in text or '"' in text:
            text = _PIECE.sub(_literal_in_quotes, text)
        if "(" in text or ")" in text or "#" in text:
            return None
        if ">" in text and "/dev/null" in text:
            kept: list[str] = []
            end = 0
            for match in _SINK.finditer(text):
                start = match.start()
                if start and text[start - 1] in _NOT_BEFORE_SINK:
                    return None
                sinks.append(match.group(1))
                kept.append(text[end:start])
                end = match.end()
            kept.append(text[end:])
            text = " ".join(kept)
        if ">" in text and ">" in _DUPLICATION.sub("", text):
            return None
    return sinks if _BALANCED.fullmatch(text) is not None else None


def _names_nothing_analysed(text: str) -> bool:
    """Whether no word of the line names a command the analysis reacts to.

    Without its quote and backslash characters (no command name holds one; dropping them
    leaves each word's other characters in place, so a name built from quoted pieces shows)
    and split at blanks, punctuation (`<` is absent by now), `#` and `/`, the line holds every
    word's last path segment as one of its pieces. Read before quoted punctuation is made
    letters, it splits more, so it finds any name it would find after.
    """
    words = text.replace("'", "").replace('"', "").replace("\\", "")
    if "git-" in words or any(prefix in words for prefix in INTERPRETER_PREFIXES):
        return False  # a git-core program (`git-reset`) is git
    words = words.replace(";", " ").replace("&", " ").replace("|", " ").replace(">", " ")
    if "(" in words or ")" in words or "#" in words:
        words = words.replace("(", " ").replace(")", " ").replace("#", " ")
    return ANALYSED_COMMANDS.isdisjoint(words.replace("/", " ").split())


def _literal_in_quotes(match: re.Match[str]) -> str:
    """A quoted string with its `(`, `)`, `>`, `#` made letters, when they are letters there.

    The lexer reads a quoted string as part of a word, and a word as an operator only when it
    is punctuation alone: a string holding anything else keeps its punctuation as letters of
    a word the analysis ignores (no command name holds these four, and a path's last segment
    still shows). A punctuation-only string, an escape, and a double-quoted string that could
    substitute (`$(` is refused before) stay as they are, for the checks to refuse.
    """
    piece = match.group(0)
    if not piece[1:-1].strip(_PUNCTUATION):  # an escape's two characters hold nothing inside
        return piece
    return piece.translate(_LITERAL_IN_QUOTES)
