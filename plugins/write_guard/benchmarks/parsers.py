"""Today's shell analyser against tree-sitter-bash, on the shared corpus's Bash commands and on
the attack suite: time per command (median over commands of each one's median) and how many
lines each cannot read (today: a parse refusal; tree-sitter: a tree with ERROR or MISSING).

    python plugins/write_guard/benchmarks/parsers.py

Needs `tree-sitter` and `tree-sitter-bash` (PyPI), which write-guard itself does not."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from write_guard._bash import analyse_bash

HERE = Path(__file__).resolve()
REPEATS = 30
sys.path.insert(0, str(HERE.parents[1] / "tests"))  # the corpus reader and the attack table


def corpus_commands() -> list[str]:
    from wg_corpus import LABELLED, TRANSCRIPTS, bash_commands

    return bash_commands(sorted([*TRANSCRIPTS.glob("*.jsonl"), *LABELLED.glob("*.jsonl")]))


def attack_commands() -> list[str]:
    from wg_attack_table import ATTACKS, CONTROLS

    fill = {"{WS}": "/w/ws", "{OUT}": "/w/out", "{HOME}": "/w/home", "{RUN}": "/w/run",
            "{DATA}": "/w/data", "{REMOTE}": "/w/remote.git", "{TMP}": "/w/tmp"}  # fmt: skip

    def filled(text: str) -> str:
        for key, value in fill.items():
            text = text.replace(key, value)
        return text.replace("{{", "{").replace("}}", "}")

    return [filled(a.command) for a in ATTACKS] + [filled(c.command) for c in CONTROLS]


def per_command_us(fn: Callable[[str], object], commands: list[str]) -> float:
    medians = []
    clock = time.perf_counter_ns
    for command in commands:
        samples = []
        for _ in range(REPEATS):
            started = clock()
            fn(command)
            samples.append(clock() - started)
        medians.append(statistics.median(samples))
    return statistics.median(medians) / 1000


def main() -> None:
    try:
        import tree_sitter_bash
        from tree_sitter import Language, Parser
    except ImportError:
        print("tree-sitter and tree-sitter-bash are not installed: pip install both to compare")
        return
    parser = Parser(Language(tree_sitter_bash.language()))

    def ts_parse(command: str) -> object:
        return parser.parse(command.encode("utf-8", "surrogatepass"))

    def ts_commands(command: str) -> list[list[bytes]]:
        """The least an analyser on the tree does: every simple command's words, found by a
        walk over the whole tree (no unquoting, no redirections, no git or path reading)."""
        found: list[list[bytes]] = []
        stack = [parser.parse(command.encode("utf-8", "surrogatepass")).root_node]
        while stack:
            node = stack.pop()
            if node.type == "command":
                found.append([child.text or b"" for child in node.named_children])
            stack.extend(node.named_children)
        return found

    def ts_unreadable(command: str) -> bool:
        root = parser.parse(command.encode("utf-8", "surrogatepass")).root_node
        return root.has_error

    def old_unreadable(command: str) -> bool:
        return any(reason.startswith("cannot parse") for reason in analyse_bash(command).uncertain)

    for name, commands in (("corpus", corpus_commands()), ("attacks", attack_commands())):
        old_us = per_command_us(analyse_bash, commands)
        ts_us = per_command_us(ts_parse, commands)
        walk_us = per_command_us(ts_commands, commands)
        old_bad = sum(map(old_unreadable, commands))
        ts_bad = sum(map(ts_unreadable, commands))
        print(
            f"{name}: {len(commands)} commands; today's analyser {old_us:.1f} us/command "
            f"({old_bad} refused); tree-sitter parse alone {ts_us:.1f} us/command "
            f"({ts_bad} with errors), ratio {ts_us / old_us:.2f}; parse and walk to the "
            f"commands {walk_us:.1f} us/command, ratio {walk_us / old_us:.2f}"
        )


if __name__ == "__main__":
    main()
