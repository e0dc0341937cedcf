"""Labelled synthetic sessions: one per kind of loop and one per kind of healthy work.

Each session is a list of steps (tool calls, and blocked Stops), fed to the core and also written
as a Claude Code transcript that is replayed through the host. A label says which steps form a
loop and by which step it must have been nudged (its 4th repetition at the latest, unless the
label says why not), with the reason. They are scored by the same judge as
the real sessions (`loop_breaker.judge`): a nudge or alert outside every episode is false.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from loop_breaker.core import LoopBreakerCore, Observation

from loop_breaker import judge

HERE = Path(__file__).resolve().parent


Step = tuple[Any, ...]
"""("call", tool, input, outcome, text) or ("stop", feedback)."""


@dataclass(frozen=True)
class Labelled:
    name: str
    reason: str
    steps: Sequence[Step]
    loops: Sequence[tuple[int, int, int]] = ()
    """(lo, hi, nudge_by) step indexes of each loop episode."""
    detectors: frozenset[str] = field(default_factory=frozenset)
    """The detectors expected to speak (empty for healthy work)."""


def bash(command: str, outcome: str = "ok", text: str = "done") -> Step:
    return ("call", "Bash", {"command": command}, outcome, text)


def edit(path: str, old: str, new: str, outcome: str = "ok", text: str = "updated") -> Step:
    return (
        "call",
        "Edit",
        {"file_path": path, "old_string": old, "new_string": new},
        outcome,
        text,
    )


def read(path: str, **extra: Any) -> Step:
    return ("call", "Read", {"file_path": path, **extra}, "ok", f"contents of {path} {extra}")


PYTEST_FAIL = "FAILED tests/test_users.py::test_create - AssertionError: expected 201, got 500\n"
PRE_COMMIT = (
    "ruff.....................................................................Failed\n"
    "- hook id: ruff\n- exit code: 1\n\nsrc/app/users.py:3:8: F401 [*] `os` imported but unused\n"
    "Found 1 error.\n"
)
NOT_READ = (
    "<tool_use_error>File has not been read yet. Read it first before writing to it."
    "</tool_use_error>"
)
NOT_FOUND = "<tool_use_error>String to replace not found in file.\nString: {}</tool_use_error>"
TIMEOUT = "Command timed out after 2m 0.0s"


def _lint(file: str, count: int) -> str:
    # golangci-lint prints no error word: its issues are `path:line:col: text (linter)` lines,
    # and it stops at 3 per linter, so its summary stays the same while the files change.
    return (
        f'{file}:{10 + count}:5: net/http.MethodGet can be used instead of "GET" (usestdlibvars)\n'
        '\treq, err := http.NewRequest("GET", url, nil)\n\t                           ^\n'
        "3 issues:\n* usestdlibvars: 3\n"
    )


def _tsc(errors: Sequence[str]) -> str:
    return "".join(f"{e}\n" for e in errors) + f"\nFound {len(errors)} errors.\n"


LOOPS = [
    Labelled(
        "same-command-same-error",
        "the same test run fails with the same assertion four times, nothing changed between",
        [bash("pytest -q", "error", PYTEST_FAIL)] * 4,
        [(0, 3, 3)],
        frozenset({"repeat-failure"}),
    ),
    Labelled(
        "same-error-despite-edits",
        "edits go in between but the same assertion comes back every run: the edits do not "
        "reach the cause",
        [
            bash("pytest -q", "error", PYTEST_FAIL),
            edit("/w/app/users.py", "return 500", "return 501"),
            bash("pytest -q", "error", PYTEST_FAIL),
            edit("/w/app/users.py", "return 501", "return 502"),
            bash("pytest -q", "error", PYTEST_FAIL),
            edit("/w/app/users.py", "return 502", "return 503"),
            bash("pytest -q", "error", PYTEST_FAIL),
        ],
        [(0, 6, 6)],
        frozenset({"repeat-failure"}),
    ),
    Labelled(
        "commit-rejected-by-the-same-hook",
        "git commit rejected six times by the same pre-commit error while small edits of other "
        "lines go in, each time with a reworded message, ending in --no-verify",
        [
            step
            for round_ in range(6)
            for step in (
                edit("/w/src/app/users.py", f"# note {round_}", f"# note {round_ + 1}"),
                bash(f'git commit -m "users: fix create (try {round_})"', "error", PRE_COMMIT),
            )
        ]
        + [bash('git commit --no-verify -m "users: fix create"', "ok", "[main 1a2b3c] users")],
        [(1, 12, 7)],
        frozenset({"same-error"}),
    ),
    Labelled(
        "errors-that-come-back",
        "a build alternates between the same two errors after edits that undo each other's fix",
        [
            step
            for round_ in range(2)
            for step in (
                bash("go build ./...", "error", "cmd/a.go:3:2: undefined: Foo"),
                edit("/w/cmd/a.go", f"Foo{round_}", f"Bar{round_}"),
                bash("go build ./...", "error", 'cmd/a.go:4:2: "fmt" imported and not used'),
                edit("/w/cmd/a.go", f"Bar{round_}", f"Baz{round_}"),
            )
        ],
        [(0, 6, 6)],
        frozenset({"repeat-failure"}),
    ),
    Labelled(
        "missing-command-retried-with-variations",
        "pnpm is not installed; the agent retries it with different arguments",
        [
            bash("pnpm install", "error", "bash: pnpm: command not found"),
            bash("pnpm i --frozen-lockfile", "error", "bash: pnpm: command not found"),
            bash("pnpm run build", "error", "bash: pnpm: command not found"),
        ],
        [(0, 2, 2)],
        frozenset({"env-blocker"}),
    ),
    Labelled(
        "timeouts-of-one-command",
        "the same integration run times out three times: retrying will not make it faster",
        [bash("npm run test:e2e", "error", TIMEOUT)] * 3,
        [(0, 2, 2)],
        frozenset({"env-blocker"}),
    ),
    Labelled(
        "retry-after-a-denial",
        "the person refused `rm -rf build`; the agent asks again at once",
        [
            bash("rm -rf build", "denied", "The user doesn't want to proceed with this tool use."),
            bash("rm -rf build", "denied", "The user doesn't want to proceed with this tool use."),
        ],
        [(0, 1, 1)],
        frozenset({"denied-retry"}),
    ),
    Labelled(
        "edit-undo-thrash",
        "one setting flipped back and forth between two values",
        [
            edit("/w/app/config.py", "retries = 3", "retries = 5"),
            edit("/w/app/config.py", "retries = 5", "retries = 3"),
            edit("/w/app/config.py", "retries = 3", "retries = 5"),
            edit("/w/app/config.py", "retries = 5", "retries = 3"),
        ],
        [(0, 3, 3)],
        frozenset({"edit-thrash"}),
    ),
    Labelled(
        "a-b-cycle-with-the-same-outcomes",
        "reading the same file and running the same failing check in turn, nothing new each round",
        [
            step
            for _ in range(4)
            for step in (
                read("/w/app/users.py"),
                bash("python -c 'import app'", "ok", "ImportWarning: app.users is deprecated"),
            )
        ],
        [(0, 7, 7)],
        frozenset({"cycle"}),
    ),
    Labelled(
        "idle-repeat",
        "`git status` asked four times with the same answer and nothing done in between",
        [bash("git status", "ok", "nothing to commit, working tree clean")] * 4,
        [(0, 3, 3)],
        frozenset({"idle-repeat"}),
    ),
    Labelled(
        "idle-repeat-between-reads",
        "the same listing asked again and again between commands that only read",
        [
            step
            for n in range(4)
            for step in (
                bash("ls src", "ok", "a.ts\nb.ts"),
                bash(f"grep -n todo{n} src/a.ts", "ok", f"{n}: // todo"),
            )
        ],
        [(0, 6, 6)],
        frozenset({"idle-repeat"}),
    ),
    Labelled(
        "precondition-on-one-file",
        "three different guesses at text to replace in the same file, none read first: the same "
        "target keeps failing the same way",
        [
            edit("/w/app/users.py", f"def create{n}(", "def create(", "error", NOT_FOUND.format(n))
            for n in range(3)
        ],
        [(0, 2, 2)],
        frozenset({"same-error"}),
    ),
    Labelled(
        "stop-hook-blocks-every-stop",
        "a Stop hook with a wrong script path refuses every stop with the same message",
        [("stop", "[uv run .claude/hooks/run_tests.py]: error: Failed to spawn: No such file")] * 4,
        [(0, 3, 3)],
        frozenset({"stop-block"}),
    ),
    Labelled(
        "unchanged-polling",
        "a background build polled with the same output again and again; polling is waiting, "
        "so its nudge comes at the 6th unchanged check (see the README), not the 4th",
        [("call", "BashOutput", {"bash_id": "b1"}, "ok", "building… 40%")] * 7,
        [(0, 6, 5)],
        frozenset({"poll"}),
    ),
]

HEALTHY = [
    Labelled(
        "test-fix-with-changing-errors",
        "each run after an edit fails differently (fewer tests, then another error) until green",
        [
            bash("pytest -q", "error", "3 failed, 9 passed\nFAILED tests/test_a.py::test_one"),
            edit("/w/app/a.py", "x = 1", "x = 2"),
            bash("pytest -q", "error", "2 failed, 10 passed\nFAILED tests/test_a.py::test_two"),
            edit("/w/app/a.py", "y = 1", "y = 2"),
            bash("pytest -q", "error", "1 failed, 11 passed\nFAILED tests/test_b.py::test_three"),
            edit("/w/app/b.py", "z = 1", "z = 2"),
            bash("pytest -q", "error", "E   SyntaxError: invalid syntax (b.py, line 4)"),
            edit("/w/app/b.py", "z = 2)", "z = 2"),
            bash("pytest -q", "ok", "12 passed"),
        ],
    ),
    Labelled(
        "build-errors-shrinking-and-growing",
        "a TypeScript build: 3 errors, then 1, then 2 others, then 1 other, then green: every "
        "run shows errors not seen before",
        [
            bash(
                "npm run build",
                "error",
                _tsc(
                    [
                        "src/a.ts(3,1): error TS2322: x",
                        "src/b.ts(4,2): error TS2339: y",
                        "src/c.ts(9,9): error TS7006: z",
                    ]
                ),
            ),
            edit("/w/src/a.ts", "a", "b"),
            bash(
                "npm run build",
                "error",
                _tsc(["src/d.ts(1,1): error TS2304: Cannot find name 'q'"]),
            ),
            edit("/w/src/d.ts", "c", "d"),
            bash(
                "npm run build",
                "error",
                _tsc(["src/e.ts(2,2): error TS2345: w", "src/e.ts(8,1): error TS2345: v"]),
            ),
            edit("/w/src/e.ts", "e", "f"),
            bash(
                "npm run build", "error", _tsc(["src/f.ts(5,5): error TS2554: Expected 1 argument"])
            ),
            edit("/w/src/f.ts", "g", "h"),
            bash("npm run build", "ok", "> tsc"),
        ],
    ),
    Labelled(
        "polling-with-growing-output",
        "a background job polled while its log grows",
        [
            ("call", "BashOutput", {"bash_id": "b1"}, "ok", f"step {n}\n" * (n + 1))
            for n in range(15)
        ],
    ),
    Labelled(
        "batch-edits-of-different-files",
        "a rename across five files: each first Edit hits 'not read yet', a Read fixes it",
        [
            step
            for n in range(5)
            for step in (
                edit(f"/w/src/m{n}.py", "old_name", "new_name", "error", NOT_READ),
                read(f"/w/src/m{n}.py"),
                edit(f"/w/src/m{n}.py", "old_name", "new_name"),
            )
        ],
    ),
    Labelled(
        "edits-of-one-file-each-fixed-after-a-read",
        "several edits of one file: now and then the text to replace has moved, a Read shows it, "
        "and the next edit goes through, so each miss is a new lesson",
        [
            step
            for n in range(4)
            for step in (
                edit("/w/app/users.py", f"old {n}", f"new {n}", "error", NOT_FOUND.format(n)),
                read("/w/app/users.py", offset=n * 50, limit=50),
                edit("/w/app/users.py", f"old  {n}", f"new {n}"),
            )
        ],
    ),
    Labelled(
        "paging-a-file-with-offsets",
        "a long log read page by page",
        [read("/w/logs/big.log", offset=n * 200, limit=200) for n in range(10)],
    ),
    Labelled(
        "linter-reporting-a-new-file-each-run",
        "the linter shows at most 3 issues, so each run after a fix names a new file under the "
        "same summary line, until 0 issues",
        [
            step
            for n in range(8)
            for step in (
                bash(
                    "golangci-lint run --enable-only usestdlibvars",
                    "error",
                    _lint(f"pkg/f{n}.go", n),
                ),
                edit(f"/w/pkg/f{n}.go", '"GET"', "http.MethodGet"),
            )
        ]
        + [bash("golangci-lint run --enable-only usestdlibvars", "ok", "0 issues.")],
    ),
    Labelled(
        "two-unrelated-timeouts",
        "a server started with a deliberate bound and a slow download both time out: different "
        "commands, no named token, only two",
        [
            bash("timeout 5 npm run dev", "error", TIMEOUT),
            read("/w/package.json"),
            bash("curl -sS https://example.org/big.tar.gz -o /w/big.tar.gz", "error", TIMEOUT),
        ],
    ),
    Labelled(
        "rerun-after-a-shell-edit",
        "the same passing tests rerun after each change made through the shell (a heredoc, "
        "sed -i), which the edit tools never see",
        [
            bash("npm test", "ok", "Tests: 12 passed, 12 total"),
            bash("cat >> src/routes.ts << 'EOF'\nexport const a = 1\nEOF"),
            bash("npm test", "ok", "Tests: 12 passed, 12 total"),
            bash("sed -i 's/a = 1/a = 2/' src/routes.ts"),
            bash("npm test", "ok", "Tests: 12 passed, 12 total"),
            bash("echo 'export const b = 3' > src/extra.ts"),
            bash("npm test", "ok", "Tests: 12 passed, 12 total"),
        ],
    ),
    Labelled(
        "rerun-after-a-real-edit",
        "the same passing command rerun after each edit that changed a file",
        [
            step
            for n in range(5)
            for step in (
                bash("pytest -q", "ok", "12 passed"),
                edit("/w/app.py", f"v{n}", f"v{n + 1}"),
            )
        ],
    ),
]


def _run(labelled: Labelled) -> list[judge.Said]:
    core = LoopBreakerCore()
    said = []
    for index, step in enumerate(labelled.steps):
        if step[0] == "stop":
            decisions = core.turn_complete("main", "t1", True, step[1], 1000 + index)
        else:
            _, tool, tool_input, outcome, text = step
            observation = Observation(
                f"c{index}", "main", tool, tool_input, outcome, text, 1000 + index
            )
            decisions = core.observe(observation)
        for decision in decisions:
            kind = {"nudge": "nudge", "escalate": "alert"}.get(decision.kind)
            if kind is not None:
                said.append(
                    judge.Said(labelled.name, index, kind, decision.detector, decision.text)
                )
    return said


def _labels(labelled: Labelled) -> Mapping[str, list[judge.Episode]]:
    episodes = [
        judge.Episode("", "loop", lo, hi, by, labelled.reason) for lo, hi, by in labelled.loops
    ]
    return {labelled.name: episodes}


@pytest.mark.parametrize("labelled", LOOPS, ids=lambda labelled: labelled.name)
def test_a_labelled_loop_is_nudged_in_time_and_nothing_else(labelled: Labelled) -> None:
    said = _run(labelled)
    score = judge.score(_labels(labelled), said, [labelled.name])
    assert score.line() == "caught=1/1 false_nudges=0 files=1", (labelled.reason, said)
    assert {one.detector for one in said} == labelled.detectors


@pytest.mark.parametrize("labelled", HEALTHY, ids=lambda labelled: labelled.name)
def test_healthy_work_gets_no_nudge(labelled: Labelled) -> None:
    said = _run(labelled)
    assert said == [], labelled.reason


# -- the same sessions as Claude Code transcripts, replayed through the host ------------------


def _transcript(labelled: Labelled, folder: Path) -> Path:
    """`labelled` as a Claude Code transcript: a prompt, then each call's tool_use and
    tool_result, and each blocked Stop as the harness records its hook's feedback."""
    session = f"5e55{abs(hash(labelled.name)) % 10**8:08d}-0000-4000-8000-000000000000"
    records: list[dict[str, Any]] = []
    parent: str | None = None

    def add(kind: str, content: Any, **extra: Any) -> None:
        nonlocal parent
        uuid = f"00000000-0000-4000-8000-{len(records):012d}"
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/w",
                "sessionId": session,
                "version": "2.1.41",
                "type": kind,
                "message": {"role": kind, "content": content},
                "uuid": uuid,
                "timestamp": f"2026-01-01T10:{len(records) // 60:02d}:{len(records) % 60:02d}.000Z",
                **extra,
            }
        )
        parent = uuid

    add("user", "please fix it")
    for index, step in enumerate(labelled.steps):
        if step[0] == "stop":
            add("assistant", [{"type": "text", "text": "Done."}])
            add("user", f"Stop hook feedback:\n{step[1]}", isMeta=True)
            continue
        _, tool, tool_input, outcome, text = step
        call_id = f"toolu_{index:04d}"
        add("assistant", [{"type": "tool_use", "id": call_id, "name": tool, "input": tool_input}])
        result = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        if outcome != "ok":
            result["is_error"] = True
        add("user", [result])
    add("assistant", [{"type": "text", "text": "Finished."}])
    path = folder / f"{labelled.name}.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def _in_calls(labelled: Labelled) -> Mapping[str, list[judge.Episode]]:
    """The labels in tool-call indexes (a blocked Stop sits at the last call before it)."""
    calls_before = []
    count = 0
    for step in labelled.steps:
        count += step[0] == "call"
        calls_before.append(count - 1)
    return {
        f"{labelled.name}.jsonl": [
            judge.Episode("", "loop", calls_before[lo], calls_before[hi], calls_before[by])
            for lo, hi, by in labelled.loops
        ]
    }


@pytest.mark.parametrize("labelled", LOOPS + HEALTHY, ids=lambda labelled: labelled.name)
def test_each_labelled_session_scores_the_same_replayed_as_a_transcript(
    labelled: Labelled, tmp_path: Path
) -> None:
    path = _transcript(labelled, tmp_path)
    said = judge.said_in([path])
    score = judge.score(_in_calls(labelled), said, [path.name])
    loops = len(labelled.loops)
    assert score.line() == f"caught={loops}/{loops} false_nudges=0 files=1", (labelled.reason, said)
    assert {one.detector for one in said} == labelled.detectors
