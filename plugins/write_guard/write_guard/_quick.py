"""Prove, without parsing, that a Bash command line has an empty write surface."""

from __future__ import annotations

import re

from write_guard._bash import ANALYSED_COMMANDS, INTERPRETER_PREFIXES

# `N>&M` (and ` >&M`) duplicates a descriptor and writes no file; the lexer reads it as the
# word N, the operator `>&` and the all-digit word M, which the analysis skips.
# Written to start with the literal `>`, which the regex engine looks for at C speed.
_DUPLICATION = re.compile(r">(?<=[0-9 \t]>)&[0-9]+(?=[ \t\r\n;&|]|$)")
# The line splits without error (every quote closed, no trailing escape) exactly when it is a
# sequence of these pieces; unrolled, so a failing match does not backtrack.
_BALANCED = re.compile(
    r"""[^'"\\]*(?:(?:'[^']*'|"[^"\\]*(?:\\.[^"\\]*)*"|\\.)[^'"\\]*)*""", re.DOTALL
)


def writes_nothing(command: str) -> bool:
    """True only when the full analysis of `command` finds no target, git call or doubt.

    What the analysis reacts to, and why its absence proves the surface empty:
    - `>` outside a descriptor duplication and any `<`: redirections and heredocs (a quoted
      `'>'` counts: the analysis reads it as an operator); `(`/`)`: subshells and `$(…)`, the
      only source of unbalanced-parenthesis errors; a backtick: substitutions;
    - `#`: a comment hides quotes from the lexer, which the balance check cannot follow;
    - unclosed quotes or a trailing escape: the line cannot be split;
    - `patch`/`apply`: the patch surface is read from the raw text;
    - any word naming a wrapper, shell, interpreter, `eval`, `git`, `xargs` or a writing
      command (the only words whose presence adds a target, a git call or a doubt).
    Anything else the line holds (words, quotes, `;`, `&&`, `|`, newlines, assignments) only
    separates or feeds commands the analysis ignores. False means "not proven", not "writes".
    """
    # Most lines the analysis is needed for say so in their first word (`rm`, `git`, `python3`).
    first = command.split(None, 1)
    if first and first[0].rpartition("/")[2] in ANALYSED_COMMANDS:
        return False
    # The analysis joins continued lines first; so must the checks.
    text = command.replace("\\\r\n", "").replace("\\\n", "")
    if "patch" in text or "apply" in text:
        return False
    if "<" in text or "(" in text or ")" in text or "`" in text or "#" in text:
        return False
    if ">" in text and ">" in _DUPLICATION.sub("", text):
        return False
    # Without its quote and backslash characters (no command name holds one; dropping them
    # leaves each word's other characters in place, so a name built from quoted pieces shows)
    # and split at blanks, punctuation (`<`, `(`, `)` are absent by now) and `/`, the line
    # holds every word's last path segment as one of its pieces.
    words = text.replace("'", "").replace('"', "").replace("\\", "")
    if any(prefix in words for prefix in INTERPRETER_PREFIXES):
        return False
    words = words.replace(";", " ").replace("&", " ").replace("|", " ").replace(">", " ")
    if not ANALYSED_COMMANDS.isdisjoint(words.replace("/", " ").split()):
        return False
    return _BALANCED.fullmatch(text) is not None
