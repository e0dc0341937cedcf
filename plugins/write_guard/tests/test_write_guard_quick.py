"""The shortcut for Bash lines that write nothing: it never hides what the full analysis finds."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from write_guard._quick import writes_nothing
from write_guard._surface import NOTHING, Surface, analysed_bash_surface, extract_surface

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "transcripts"
FRAGMENTS = [
    "rm", "r", "m", "cp", "git", "sh", "bash", "env", "time", "eval", "xargs", "python3.12",
    "tee", "echo", "uv", "run", "x", "/bin/", "a/", "1", "2", "=", "-c", "-i", " ", " ", "\t",
    "\n", ";", "&", "&&", "|", ">", ">&", "<", "(", ")", "$", "$(", "`", "'", '"', "\\", "\\\n",
    "#", "{", "}", "patch", "apply", ".", "~",
]  # fmt: skip


def _empty(surface: Surface) -> bool:
    return not (surface.targets or surface.git_commands or surface.uncertain or surface.malformed)


def _corpus_commands() -> list[str]:
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing: expected it at {CORPUS} (beside the clone)")
    commands: list[str] = []
    for path in sorted(CORPUS.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"Bash"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            content = record.get("message", {}).get("content") if isinstance(record, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("name") == "Bash":
                    command = block.get("input", {}).get("command")
                    if isinstance(command, str):
                        commands.append(command)
    return commands


def test_a_corpus_line_it_passes_has_an_empty_surface() -> None:
    commands = _corpus_commands()
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
    ],
)
def test_it_refuses_to_prove_a_line_the_analysis_reacts_to(command: str) -> None:
    assert not writes_nothing(command)


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
    ],
)
def test_harmless_lines_take_the_shortcut_to_the_same_empty_surface(command: str) -> None:
    assert writes_nothing(command)
    assert _empty(analysed_bash_surface(command))
    assert extract_surface("Bash", {"command": command}) == Surface(command=command)
    assert extract_surface("Bash", {"command": command}) != NOTHING
