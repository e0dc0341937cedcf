"""The shell tokenizer splits lines as bash does: as the POSIX lexer (shlex), comments aside."""

from __future__ import annotations

import random
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from write_guard._shell import (
    ShellParseError,
    _lex,
    _operator_tokens,
    _split_operators,
    parse_line,
    shell_tokens,
)

ALPHABET = "ab/.-_~*=$`{}! \t\r\n;&|<>()0é'\"\\#"


def _without_comments(text: str) -> str:
    """`text` with bash's comments blanked: from a `#` where a word starts (outside quotes) up
    to, not including, its newline. (The POSIX lexer reads a `#` inside a word as a comment too,
    and swallows the newline after one: bash does neither.) A `$'…'` string, bash's ANSI-C
    quoting, is written as the single-quoted string of what it stands for (an unclosed one
    raises ValueError, as the lexer does for an unclosed quote), and `$"…"` as `"…"`."""
    kept: list[str] = []
    index, quote, word_start = 0, "", True
    while index < len(text):
        char = text[index]
        if quote:
            step = 2 if quote == '"' and char == "\\" else 1
            kept.append(text[index : index + step])
            quote = "" if char == quote else quote
            index += step
            continue
        if char == "#" and word_start:
            # A blank in its place: like bash, nothing of it is read, and it ends a token.
            kept.append(" ")
            end = text.find("\n", index)
            if end < 0:
                break
            index = end
            continue
        if text.startswith("$'", index):
            end = index + 2
            while end < len(text) and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            if end >= len(text):
                raise ValueError("an ANSI-C string that is never closed")
            meant = _ANSI.sub(lambda m: _ANSI_MEANT.get(m[1], m[0]), text[index + 2 : end])
            kept.append("'" + meant.replace("'", "'\"'\"'") + "'")
            index, word_start = end + 1, False
            continue
        if text.startswith('$"', index):
            index += 1  # `$"…"`: a double-quoted string bash may translate
            continue
        step = 2 if char == "\\" else 1
        kept.append(text[index : index + step])
        quote = char if char in "'\"" else ""
        word_start = char in " \t\r;&|<>()\n"
        index += step
    return "".join(kept)


# What the escapes that ALPHABET can spell mean in bash's ANSI-C strings (`\0` is octal).
_ANSI = re.compile(r"\\(0[0-7]{0,2}|.)", re.DOTALL)
_ANSI_MEANT = {"a": "\a", "b": "\b", "'": "'", '"': '"', "\\": "\\", "?": "?"}
_ANSI_MEANT.update({f"0{digits}": "\0" for digits in ("", "0", "00")})


def _lexer_tokens(text: str) -> list[str]:
    lexer = shlex.shlex(_without_comments(text), posix=True, punctuation_chars=";&|<>()\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _same_as_lexer(text: str) -> None:
    try:
        expected = _lexer_tokens(text)
    except ValueError:
        with pytest.raises(ShellParseError):
            shell_tokens(text)
        return
    assert shell_tokens(text) == expected, repr(text)
    # A token is flagged as punctuation exactly when it is made of punctuation only, quoted or
    # not (a quoted `'>'` reads as an operator, the cautious reading).
    punctuation = ";&|<>()\n"
    flags = [bool(token) and not token.strip(punctuation) for token in expected]
    assert [flag for _token, flag in _lex(text)] == flags, repr(text)


def test_every_corpus_command_splits_as_the_lexer_splits_it(
    corpus_bash_commands: list[str],
) -> None:
    commands = corpus_bash_commands
    assert len(commands) > 100
    quoted = 0
    for command in commands:
        quoted += bool(set("'\"\\") & set(command))
        _same_as_lexer(command)
    assert quoted > 20


def test_random_lines_split_as_the_lexer_splits_them() -> None:
    chooser = random.Random(20260301)
    for _ in range(20000):
        length = chooser.randint(0, 16)
        _same_as_lexer("".join(chooser.choices(ALPHABET, k=length)))


def test_plain_lines_keep_their_redirections_and_separators() -> None:
    parsed = parse_line("cd build&&make>log.txt 2>&1;ls|tee out")
    assert [command.argv for command in parsed.commands] == [
        ("cd", "build"),
        ("make",),
        ("ls",),
        ("tee", "out"),
    ]
    assert parsed.commands[1].redirects == ((">", "log.txt"),)
    assert parsed.commands[1].cwd_prefix == "build"


def test_an_unclosed_quote_is_still_refused() -> None:
    with pytest.raises(ShellParseError):
        parse_line("echo 'open > x")


def _operators_in_two_passes(text: str) -> list[tuple[str, bool]] | str:
    try:
        return _split_operators(_lex(text))
    except ShellParseError as error:
        return str(error)


def _operators_in_one_pass(text: str) -> list[tuple[str, bool]] | str:
    try:
        return _operator_tokens(text)
    except ShellParseError as error:
        return str(error)


@pytest.mark.parametrize("seed", range(6))
def test_operators_lexed_in_one_pass_are_those_of_the_two_passes(seed: int) -> None:
    chooser = random.Random(seed)
    pieces = [*ALPHABET, "'>'", '"&&"', "\\;", "'a b'", '"x\\"y"', ">>", "2>&1", "''"]
    for _ in range(3000):
        text = "".join(chooser.choices(pieces, k=chooser.randint(0, 14)))
        assert _operators_in_one_pass(text) == _operators_in_two_passes(text), repr(text)


def test_corpus_operators_lexed_in_one_pass_are_those_of_the_two_passes(
    corpus_bash_commands: list[str],
) -> None:
    for command in corpus_bash_commands:
        assert _operators_in_one_pass(command) == _operators_in_two_passes(command), command


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        # A comment ends at its newline, which still ends the command before the next line.
        ("echo hi # note\nrm -rf /etc/x", [("echo", "hi"), ("rm", "-rf", "/etc/x")]),
        ("ls;#x\nrm y", [("ls",), ("rm", "y")]),
        # A `#` inside a word is a plain character, not a comment.
        ("echo a#; rm -rf x", [("echo", "a#"), ("rm", "-rf", "x")]),
        ('echo "a#b" x#y # c', [("echo", "a#b", "x#y")]),
        # An escaped backslash before a newline does not join the lines; a lone one does.
        ("echo a\\\\\nrm -rf x", [("echo", "a\\"), ("rm", "-rf", "x")]),
        ("rm \\\n -rf x", [("rm", "-rf", "x")]),
        ("echo a\\\\\\\nb", [("echo", "a\\b")]),
    ],
)
def test_comments_and_continuations_split_as_bash_splits_them(
    line: str, commands: list[tuple[str, ...]]
) -> None:
    assert [command.argv for command in parse_line(line).commands] == commands


def test_a_quote_that_a_word_opens_after_a_hash_is_refused() -> None:
    # The POSIX lexer would read `#it's` as a comment; bash reads an unclosed quote.
    with pytest.raises(ShellParseError):
        parse_line("echo a#it's")


# Lines whose next lines are commands although a `<<` shows in them, or whose heredoc ends
# where bash ends it: each `touch` bash runs must be a command the analysis reads.
HEREDOC_LINES = [
    "echo '<<EOF'\ntouch r1\nEOF",
    'echo "x<<EOF"\ntouch r2\nEOF',
    "echo x # <<EOF\ntouch r3\nEOF",
    "echo $((1<<2)) >/dev/null\ntouch r4\nEOF",
    "(( x = 1 << 2 ))\ntouch r5\nEOF",
    "echo ${HOME/<</x}\ntouch r6\nEOF",
    'cat <<E"O"F >/dev/null\nx\nEOF\ntouch r7',
    "cat <<\\EOF >/dev/null\nx\nEOF\ntouch r8",
    "cat <<'E ' >/dev/null\nx\nE \ntouch r9",
    "cat <<EOF >/dev/null\n$(touch r10)\nEOF",
    "cat <<A <<B >/dev/null\na\nA\n$(touch r11)\nB\ntouch r12",
    "cat <<-EOF >/dev/null\n\tx\n\tEOF\ntouch r13",
    'x="$(cat <<\'EOF\'\nsay "hi" it\'s\nEOF\n)"; touch r14',
]


@pytest.mark.parametrize("line", HEREDOC_LINES)
def test_every_command_bash_runs_past_a_heredoc_is_read(line: str, tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=10, check=False
    )
    ran = sorted(path.name for path in tmp_path.iterdir())
    assert ran, done.stderr
    parsed = parse_line(line)
    inner = [parse_line(text).commands for text in parsed.substitutions]
    read = {
        command.argv[1]
        for command in [*parsed.commands, *(c for commands in inner for c in commands)]
        if command.argv[:1] == ("touch",)
    }
    assert set(ran) <= read, (ran, read)


def test_a_quoted_delimiter_keeps_its_body_data() -> None:
    parsed = parse_line("cat <<'EOF' > notes.txt\n$(rm -rf x)\nEOF")
    assert parsed.heredocs == ["$(rm -rf x)"] and parsed.substitutions == []


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("$'\\x67it' branch -D x", ("git", "branch", "-D", "x")),
        ("echo $'a\\'b' $'\\t\\101\\u00e9' $\"c\"", ("echo", "a'b", "\tAé", "c")),
        ("$'cd' ..", ("cd", "..")),
        ("echo \"$'x'\" '$'x", ("echo", "$'x'", "$x")),
    ],
)
def test_ansi_c_strings_read_as_bash_reads_them(line: str, words: tuple[str, ...]) -> None:
    assert [command.argv for command in parse_line(line).commands] == [words]


def test_an_ansi_c_quote_escaped_inside_does_not_close_it() -> None:
    # bash: `$'\''` is one quote, so the last line's quote is never closed (the lines before
    # it run); read as plain quotes, `'\''` would close and the middle line be a string.
    with pytest.raises(ShellParseError):
        parse_line("$'\\''\ntouch x\n'")
