"""The shortcut for Bash lines that write nothing: it never hides what the full analysis finds."""

from __future__ import annotations

import random

import pytest
from write_guard._quick import sink_redirections, writes_nothing
from write_guard._surface import NOTHING, Surface, analysed_bash_surface, extract_surface

FRAGMENTS = [
    "rm", "r", "m", "cp", "git", "sh", "bash", "env", "time", "eval", "xargs", "python3.12",
    "tee", "echo", "uv", "run", "x", "/bin/", "a/", "1", "2", "=", "-c", "-i", " ", " ", "\t",
    "\n", ";", "&", "&&", "|", ">", ">&", "<", "(", ")", "$", "$(", "`", "'", '"', "\\", "\\\n",
    "#", "{", "}", "patch", "apply", ".", "~", "/dev/null", ">/dev/null", "2>/dev/null", "&>",
    ">>", ">|", "'(x)'", '"a>b"', "'#'", "'('", '")"', "\\>", "'a'", "null", "/dev/",
]  # fmt: skip


def _empty(surface: Surface) -> bool:
    return not (surface.targets or surface.git_commands or surface.uncertain or surface.malformed)


def test_a_corpus_line_it_passes_has_an_empty_surface(corpus_bash_commands: list[str]) -> None:
    commands = corpus_bash_commands
    passed = [command for command in commands if writes_nothing(command)]
    for command in passed:
        assert _empty(analysed_bash_surface(command)), command
    # The shortcut earns its keep: a fair share of real lines take it.
    assert len(passed) * 5 > len(commands)


def test_a_random_line_it_passes_has_an_empty_surface() -> None:
    chooser = random.Random(20261130)
    passed = 0
    for _ in range(30000):
        line = "".join(chooser.choices(FRAGMENTS, k=chooser.randint(1, 9)))
        if writes_nothing(line):
            passed += 1
            assert _empty(analysed_bash_surface(line)), repr(line)
    assert passed > 1000


def _sinks_only(surface: Surface) -> list[str] | None:
    """The operators of a surface made of /dev/null redirections alone, else None."""
    if surface.git_commands or surface.uncertain or surface.malformed:
        return None
    if any(target.path != "/dev/null" for target in surface.targets):
        return None
    return [target.how.removeprefix("redirection ") for target in surface.targets]


def test_a_corpus_line_it_proves_writes_exactly_its_sinks(corpus_bash_commands: list[str]) -> None:
    commands = corpus_bash_commands
    proven = [command for command in commands if sink_redirections(command)]
    for command in proven:
        assert _sinks_only(analysed_bash_surface(command)) == sink_redirections(command), command
    assert len(proven) * 20 > len(commands)


@pytest.mark.parametrize("seed", range(4))
def test_a_random_line_it_proves_writes_exactly_its_sinks(seed: int) -> None:
    chooser = random.Random(seed)
    proven = quoted_punctuation = 0
    for _ in range(20000):
        line = "".join(chooser.choices(FRAGMENTS, k=chooser.randint(1, 9)))
        sinks = sink_redirections(line)
        if sinks is not None:
            proven += bool(sinks)
            quoted_punctuation += any(mark in line for mark in "()#")
            assert _sinks_only(analysed_bash_surface(line)) == sinks, repr(line)
    assert proven > 200
    assert quoted_punctuation > 200


@pytest.mark.parametrize(
    "command",
    [
        'r"m" -rf x',
        "r''m x",
        "\\rm x",
        "r\\\nm x",
        "/bin/rm x",
        "FOO=1 rm x",
        "echo x 2>&1a",
        "echo x &>&1",
        "echo x >&2>y",
        "echo '>' y",
        "echo a > b",
        "echo a >> b",
        "cat < a",
        "cat <<EOF\nx\nEOF",
        "echo $(rm x)",
        "echo `rm x`",
        "(cd a)",
        "echo x # it's",
        'echo #"\necho "x',  # the comment hides a quote: the line does not split
        "echo 'open",
        'echo "open',
        "echo x\\",
        "patch -p1 < d",
        "git apply d",
        "git status",
        "bash -c 'echo'",
        "sh script",
        "env X=1 ls",
        "time ls",
        "eval ls",
        "ls | xargs echo",
        "python3.12 -c 'print(1)'",
        "python2 x",
        "node -e 1",
        "sudo ls",
        "dd if=a of=b",
        "tar -xf a.tgz",
        "echo 'rm -rf /' ok",  # quoted, yet a command name: not proven, analysed in full
        "echo '(' x",  # a quoted word of punctuation is read as an operator
        'echo ")"',
        "echo '>' /dev/null",
        'echo "$(rm x)"',
        'echo "$(echo x > y)"',
        "echo \\(x\\)",
        "ls >>|/dev/null",
        "ls &>|/dev/null",
        "ls >/dev/null/x",
        "ls >/dev/nullx",
        "ls >'/dev/null'",
        "ls '>'/dev/null",
        "ls \\>/dev/null",
        "ls >&/dev/null",
        "ls >/dev/null >x",
        "ls 2>/dev/null; rm x",
        'echo "(x)" # y',
        'echo "(x)" > y',
        "cat a 2>/dev/null <b",
    ],
)
def test_it_refuses_to_prove_a_line_the_analysis_reacts_to(command: str) -> None:
    assert not writes_nothing(command)
    assert sink_redirections(command) is None


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        'echo \'{"tool_name": "Bash", "tool_input": {"command": "echo hello"}}\' | uv run h.py',
        'uv run /a/b.py 2>&1; echo "EXIT: $?"',
        "pytest -q 2>&1 | tail -5",
        "npm test >&2",
        "cat a.txt && grep -n x b.txt || echo none",
        "X=1 ./build.sh arg",
        'echo "--- Agents (root) ---" && ls a/*.md',
        'echo "a > b" "#1" \'(x)\'',
    ],
)
def test_harmless_lines_take_the_shortcut_to_the_same_empty_surface(command: str) -> None:
    assert writes_nothing(command)
    assert _empty(analysed_bash_surface(command))
    assert extract_surface("Bash", {"command": command}) == Surface(command=command)
    assert extract_surface("Bash", {"command": command}) != NOTHING


@pytest.mark.parametrize(
    ("command", "operators"),
    [
        ("ls a/*.md 2>/dev/null | wc -l", [">"]),
        ("make >/dev/null 2>&1 && echo ok", [">"]),
        ("npm ci &>/dev/null; ls >> /dev/null", ["&>", ">>"]),
        ('echo "(done)" >|/dev/null', [">|"]),
    ],
)
def test_lines_writing_only_to_dev_null_take_the_shortcut_to_the_same_targets(
    command: str, operators: list[str]
) -> None:
    assert sink_redirections(command) == operators
    assert _sinks_only(analysed_bash_surface(command)) == operators
    surface = extract_surface("Bash", {"command": command})
    assert [(target.path, target.how) for target in surface.targets] == [
        ("/dev/null", f"redirection {operator}") for operator in operators
    ]
    assert not surface.git_commands
    assert not surface.uncertain
