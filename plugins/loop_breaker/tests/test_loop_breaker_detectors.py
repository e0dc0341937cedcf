"""Scenario tests per detector: each fires on its loop and stays quiet on the near miss."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from loop_breaker.core import CoreConfig, LoopBreakerCore, Observation, Thresholds
from loop_breaker.core.codec import dump, load
from loop_breaker.core.detectors import DETECTORS, detect
from loop_breaker.core.fingerprint import Fingerprint
from loop_breaker.core.normalize import digest
from loop_breaker.core.types import DETECTOR_IDS, CallRecord

Factory = Callable[..., Any]

TEST_FAIL = "FAIL tests/test_users.py::test_create\nAssertionError: expected 201, got 500"


def test_env_blocker_nudges_at_two_and_escalates_at_four(session: Factory) -> None:
    s = session()
    s.bash("pnpm install", "error", "bash: pnpm: command not found")
    assert s.kinds() == []
    s.bash("pnpm test", "error", "bash: pnpm: command not found")
    assert s.kinds() == ["env-blocker"]
    assert "command-not-found" in s.decisions[-1].text and "pnpm" in s.decisions[-1].text
    s.bash("pnpm run build", "error", "bash: pnpm: command not found")
    s.bash("pnpm -v", "error", "bash: pnpm: command not found")
    assert s.kinds("escalate") == ["env-blocker"]


def test_env_blocker_near_miss_outside_the_span(session: Factory) -> None:
    s = session()
    s.bash("pnpm install", "error", "bash: pnpm: command not found")
    for index in range(10):
        s.call("Read", {"file_path": f"/src/f{index}.py"}, text=f"file {index}")
    s.bash("pnpm test", "error", "bash: pnpm: command not found")
    assert s.kinds() == []


def test_env_blocker_needs_the_same_token(session: Factory) -> None:
    s = session()
    s.bash("pnpm install", "error", "bash: pnpm: command not found")
    s.bash("yarn install", "error", "bash: yarn: command not found")
    assert "env-blocker" not in s.kinds()


def test_denied_retry_nudges_on_the_retry_and_escalates_at_three(session: Factory) -> None:
    s = session()
    refusal = "The user doesn't want to proceed with this tool use. The tool use was rejected."
    s.bash("rm -rf build", "denied", refusal)
    assert s.kinds() == []
    s.bash("rm -rf build", "denied", refusal)
    assert s.kinds() == ["denied-retry"]
    s.bash("rm  -rf   build", "denied", refusal)
    assert s.kinds("escalate") == ["denied-retry"]


def test_denied_retry_near_miss_a_different_call_after_a_denial(session: Factory) -> None:
    s = session()
    s.bash("rm -rf build", "denied", "Permission to use Bash has been denied.")
    s.bash("rm -rf dist", "denied", "Permission to use Bash has been denied.")
    assert s.kinds() == []


def test_repeat_failure_counts_the_same_action_until_it_works(session: Factory) -> None:
    s = session()
    for _ in range(2):
        s.bash("pytest -q", "error", TEST_FAIL)
    assert s.kinds() == []
    s.bash("pytest -q", "error", TEST_FAIL)
    assert s.kinds() == ["repeat-failure"]
    assert "pytest -q" in s.decisions[-1].text


def test_repeat_failure_near_miss_a_success_breaks_the_streak(session: Factory) -> None:
    s = session()
    s.bash("pytest -q", "error", TEST_FAIL)
    s.bash("pytest -q", "error", TEST_FAIL)
    s.bash("pytest -q", "ok", "3 passed")
    s.bash("pytest -q", "error", TEST_FAIL)
    s.bash("pytest -q", "error", TEST_FAIL)
    assert s.kinds() == []


def test_same_error_across_different_actions(session: Factory) -> None:
    s = session()
    error = "ImportError while loading conftest: circular import in app/models.py:12"
    s.bash("pytest -q tests/a.py", "error", error)
    s.bash("pytest -q tests/b.py", "error", error.replace(":12", ":48"))
    assert s.kinds() == []
    s.bash("python -m pytest", "error", error.replace(":12", ":7"))
    assert s.kinds() == ["same-error"]


def test_same_error_near_miss_the_error_changes(session: Factory) -> None:
    s = session()
    s.bash("pytest -q tests/a.py", "error", "NameError: name 'x' is not defined")
    s.bash("pytest -q tests/b.py", "error", "TypeError: unsupported operand")
    s.bash("python -m pytest", "error", "KeyError: 'id'")
    assert s.kinds() == []


def test_edit_thrash_an_edit_undoing_the_previous_one(session: Factory) -> None:
    s = session()
    s.edit("/src/app.py", "retries = 3", "retries = 5")
    s.edit("/src/app.py", "retries = 5", "retries = 3")
    assert s.kinds() == []
    s.edit("/src/app.py", "retries = 3", "retries = 5")
    assert s.kinds() == ["edit-thrash"]
    s.edit("/src/app.py", "retries = 5", "retries = 3")
    s.edit("/src/app.py", "retries = 3", "retries = 5")
    assert s.kinds("escalate") == ["edit-thrash"]


def test_edit_thrash_writes_returning_to_an_earlier_content(session: Factory) -> None:
    s = session()
    s.write("/src/conf.toml", "a = 1")
    s.write("/src/conf.toml", "a = 2")
    s.write("/src/conf.toml", "a = 1")
    s.write("/src/conf.toml", "a = 2")
    assert s.kinds() == ["edit-thrash"]


def test_edit_thrash_near_miss_batch_edits_of_different_files(session: Factory) -> None:
    s = session()
    for index in range(12):
        s.edit(f"/src/mod_{index}.py", "import os", "import os, sys")
    assert s.kinds() == []
    assert s.kinds("escalate") == []


def test_edit_thrash_near_miss_progressive_edits_of_one_file(session: Factory) -> None:
    s = session()
    for step in range(6):
        s.edit("/src/app.py", f"version = {step}", f"version = {step + 1}")
    assert s.kinds() == []


def test_cycle_of_period_two(session: Factory) -> None:
    s = session()
    for _ in range(2):
        s.call("Read", {"file_path": "/src/a.py"}, text="A")
        s.call("Grep", {"pattern": "def main"}, text="none")
    assert s.kinds() == []
    s.call("Read", {"file_path": "/src/a.py"}, text="A")
    s.call("Grep", {"pattern": "def main"}, text="none")
    assert s.kinds() == ["cycle"]


def test_cycle_of_period_three_escalates_at_five_rounds(session: Factory) -> None:
    s = session()
    for _ in range(5):
        s.call("Read", {"file_path": "/src/a.py"}, text="A")
        s.call("Glob", {"pattern": "*.py"}, text="a.py")
        s.bash("make check", text="nothing to be done")
    assert s.kinds() == ["cycle"]
    assert s.kinds("escalate") == ["cycle"]


def test_cycle_near_miss_the_pattern_breaks(session: Factory) -> None:
    s = session()
    for index in range(3):
        s.call("Read", {"file_path": "/src/a.py"}, text="A")
        s.call("Grep", {"pattern": "def main"}, text=f"hit {index}")
    assert "cycle" not in s.kinds()


def test_idle_repeat_same_call_same_output_nothing_changed(session: Factory) -> None:
    s = session()
    for _ in range(3):
        s.bash("git status", text="nothing to commit")
    assert s.kinds() == ["idle-repeat"]


def test_idle_repeat_identical_successful_writes(session: Factory) -> None:
    s = session()
    for _ in range(3):
        s.write("/src/out.txt", "same content")
    assert s.kinds() == ["idle-repeat"]


def test_false_positive_a_rerun_after_an_edit_that_changed_the_file(session: Factory) -> None:
    s = session()
    for step in range(4):
        s.bash("pytest -q", text="12 passed")
        s.edit("/src/app.py", f"step = {step}", f"step = {step + 1}")
    assert s.kinds() == []


def test_false_positive_pagination(session: Factory) -> None:
    s = session()
    for page in range(8):
        s.call(
            "Read",
            {"file_path": "/logs/big.log", "offset": page * 200, "limit": 200},
            text=f"page {page}",
        )
    s.call("WebFetch", {"url": "https://api.example/items?page=1"}, text="items 1")
    s.call("WebFetch", {"url": "https://api.example/items?page=2"}, text="items 2")
    assert s.kinds() == []


def test_false_positive_polling_with_new_output(session: Factory) -> None:
    s = session()
    for index in range(20):
        s.call("BashOutput", {"bash_id": "b1"}, text=f"building {index * 5}%")
    assert s.kinds() == []


def test_poll_unchanged_output_nudges_at_four_and_escalates_at_twelve(session: Factory) -> None:
    s = session()
    for _ in range(3):
        s.call("BashOutput", {"bash_id": "b1"}, text="still running")
    assert s.kinds() == []
    s.call("BashOutput", {"bash_id": "b1"}, text="still running")
    assert s.kinds() == ["poll"]
    for _ in range(8):
        s.call("BashOutput", {"bash_id": "b1"}, text="still running")
    assert s.kinds("escalate") == ["poll"]


def test_a_polls_answer_that_changes_only_its_timestamp_is_unchanged(session: Factory) -> None:
    s = session()
    for minute in range(4):
        s.call(
            "BashOutput",
            {"bash_id": "b2"},
            text=f"<status>running</status>\n\n<timestamp>2025-08-24T21:0{minute}:12.402Z</timestamp>",
        )
    assert s.kinds() == ["poll"]


def test_a_longer_wait_before_the_same_check_is_the_same_poll(session: Factory) -> None:
    s = session()
    for wait in (10, 15, 20, 30):
        s.bash(f"sleep {wait} && curl -s localhost:8080/healthz", "ok", '{"status":"starting"}')
    assert s.kinds() == ["poll"]


def test_near_miss_a_poll_whose_answer_moves_on_under_the_same_timestamps(
    session: Factory,
) -> None:
    s = session()
    for step in range(6):
        s.bash(
            "sleep 30 && gh run view --json status,jobs",
            "ok",
            f'{{"status":"in_progress","step":{step},"at":"2026-01-01T10:00:00Z"}}',
        )
    assert s.kinds() == []


def test_stop_block_alerts_at_three_identical_blocks(session: Factory) -> None:
    s = session()
    feedback = "[uv run .claude/hooks/run_tests.py]: error: Failed to spawn: No such file"
    assert s.core.turn_complete("main", "t1", True, feedback, 1) == []
    assert s.core.turn_complete("main", "t1", True, feedback, 2) == []
    decisions = s.core.turn_complete("main", "t1", True, feedback, 3)
    assert [(d.kind, d.detector) for d in decisions] == [
        ("nudge", "stop-block"),
        ("escalate", "stop-block"),
    ]


def test_stop_block_near_miss_different_feedback_or_a_released_stop(session: Factory) -> None:
    s = session()
    s.core.turn_complete("main", "t1", True, "tests failed: 3", 1)
    s.core.turn_complete("main", "t1", True, "lint failed: 2 warnings", 2)
    s.core.turn_complete("main", "t1", False, "", 3)
    assert s.core.turn_complete("main", "t2", True, "tests failed: 3", 4) == []


def test_stop_block_counts_per_feedback_when_two_loops_alternate(session: Factory) -> None:
    s = session()
    first, second = "tests failed: 3", "lint failed: 2 warnings"
    for at in range(1, 3):
        assert s.core.turn_complete("main", "t1", True, first, at) == []
        assert s.core.turn_complete("sub", "t9", True, second, at) == []
    main = s.core.turn_complete("main", "t1", True, first, 3)
    sub = s.core.turn_complete("sub", "t9", True, second, 3)
    assert [d.kind for d in main] == [d.kind for d in sub] == ["nudge", "escalate"]
    assert main[0].signature != sub[0].signature


def test_stop_block_names_one_signature_whether_the_streak_was_stored_or_not() -> None:
    feedback = "Stop hook: tests failed: 3"
    warm = LoopBreakerCore()
    for at in range(1, 4):
        warm.turn_complete("sub", "t1", True, feedback, at)
    cold = LoopBreakerCore()
    cold.turn_complete("sub", "t1", True, feedback, 1)
    for at in range(2, 4):
        # A host that lives for one hook call: the streak comes back from the stored state.
        cold = load(dump(cold), CoreConfig())
        cold.turn_complete("sub", "t1", True, feedback, at)
    assert dump(cold) == dump(warm)
    assert [state.signature for state in cold.policy.signatures.values()] == [
        f"stop-block:{digest('sub' + warm.stop_streaks['sub'].feedback_fp)}"
    ]


def test_precedence_env_blocker_speaks_before_repeat_failure(session: Factory) -> None:
    s = session()
    for _ in range(3):
        s.bash("curl https://api.example", "error", "curl: (6) Could not resolve host: api")
    assert s.kinds()[0] == "env-blocker"
    assert "repeat-failure" not in s.kinds()


def test_thresholds_are_options(session: Factory) -> None:
    thresholds: dict[str, Thresholds] = {detector: Thresholds(9, 9) for detector in DETECTOR_IDS}
    thresholds["idle-repeat"] = Thresholds(2, 3)
    s = session(CoreConfig(thresholds=thresholds))
    s.bash("git status", text="clean")
    s.bash("git status", text="clean")
    assert s.kinds() == ["idle-repeat"]
    s.bash("git status", text="clean")
    assert s.kinds("escalate") == ["idle-repeat"]


def test_subagent_loops_have_their_own_windows(session: Factory) -> None:
    s = session()
    s.bash("pytest -q", "error", TEST_FAIL, loop="main")
    s.bash("pytest -q", "error", TEST_FAIL, loop="agent-1")
    s.bash("pytest -q", "error", TEST_FAIL, loop="main")
    s.bash("pytest -q", "error", TEST_FAIL, loop="agent-2")
    assert s.kinds() == []
    s.bash("pytest -q", "error", TEST_FAIL, loop="main")
    assert [(d.detector, d.loop_id) for d in s.decisions] == [("repeat-failure", "main")]


def _random_record(rng: Any, seq: int) -> CallRecord:
    outcome = rng.choice(["ok", "ok", "error", "denied"])
    action = rng.choice(["a", "b", "c"])
    fingerprint = rng.choice(["f1", "f2"])
    return CallRecord(
        call_id=f"c{seq}",
        seq=seq,
        tool=rng.choice(["Bash", "Edit", "BashOutput"]),
        action_key=action,
        label=action,
        outcome=outcome,
        fingerprint=Fingerprint(fingerprint, f"{action}:{fingerprint}"),
        error_sig=fingerprint if outcome != "ok" else "",
        error_class=rng.choice(["", "network"]) if outcome == "error" else "",
        error_token=rng.choice(["", "npm"]),
        snippet="",
        file=rng.choice(["", "/w/a.py"]),
        changed=rng.random() < 0.3,
        reverted=rng.random() < 0.3,
        is_poll=rng.random() < 0.2,
        epoch=rng.randint(0, 2),
        at_ms=seq,
    )


@pytest.mark.parametrize("seed", range(300))
def test_detect_speaks_as_the_first_detector_in_precedence_that_fires(seed: int) -> None:
    rng = random.Random(seed)
    records = [_random_record(rng, seq) for seq in range(rng.randint(1, 14))]
    config = CoreConfig(thresholds={name: Thresholds(2, 3) for name in DETECTOR_IDS})
    first = next(
        (found for d in DETECTORS if (found := d(records, "main", config)) is not None), None
    )
    assert detect(records, "main", config) == first


# -- progress-aware counting (issue 18) --


def test_repeat_failure_ignores_a_fix_and_rerun_cycle_with_a_new_error_each_time(
    session: Factory,
) -> None:
    s = session()
    for step in range(6):
        s.bash("go build ./...", "error", f"cmd/a.go:{step}:2: undefined: name{step}")
        s.edit("/w/cmd/a.go", f"name{step}", f"name{step + 1}")
    assert s.kinds() == []


def test_repeat_failure_counts_an_error_that_comes_back(session: Factory) -> None:
    s = session()
    first, second = "cmd/a.go:3:2: undefined: Foo", 'cmd/a.go:4:2: "fmt" imported and not used'
    for error in (first, second, first):
        s.bash("go build ./...", "error", error)
    assert s.kinds() == []
    s.bash("go build ./...", "error", second)
    assert s.kinds() == ["repeat-failure"]


def test_repeat_failure_waits_while_the_last_run_shows_a_new_error(session: Factory) -> None:
    s = session()
    for error in ("E1: a", "E1: a", "E2: b"):
        s.bash("make", "error", error)
    assert s.kinds() == []


def test_env_blocker_needs_the_same_command_when_no_token_is_named(session: Factory) -> None:
    s = session()
    s.bash("curl -sS https://api.example/a", "error", "curl: (6) Could not resolve host: api")
    s.bash(
        "npm view left-pad", "error", "npm ERR! network request failed, reason: connection refused"
    )
    assert "env-blocker" not in s.kinds()


def test_env_blocker_two_unrelated_timeouts_are_not_one_problem(session: Factory) -> None:
    s = session()
    s.bash("timeout 5 npm run dev", "error", "Command timed out after 5s")
    s.bash("curl -sS https://example.org/big", "error", "Command timed out after 2m 0.0s")
    assert s.kinds() == []


def test_env_blocker_timeouts_of_one_command_need_three(session: Factory) -> None:
    s = session()
    for _ in range(2):
        s.bash("npm run e2e", "error", "Command timed out after 2m 0.0s")
    assert s.kinds() == []
    s.bash("npm run e2e", "error", "Command timed out after 2m 0.0s")
    assert s.kinds() == ["env-blocker"]


def test_same_error_batch_edits_of_different_files_failing_a_precondition(
    session: Factory,
) -> None:
    s = session()
    not_read = "<tool_use_error>File has not been read yet. Read it first before writing to it."
    for index in range(5):
        s.call(
            "Edit",
            {"file_path": f"/w/m{index}.py", "old_string": "a", "new_string": "b"},
            "error",
            not_read,
        )
    assert s.kinds() == []


def test_same_error_one_file_failing_a_precondition_again_and_again(session: Factory) -> None:
    s = session()
    missing = "<tool_use_error>String to replace not found in file.\nString: {}"
    for index in range(3):
        s.call(
            "Edit",
            {"file_path": "/w/m.py", "old_string": f"v{index}", "new_string": "w"},
            "error",
            missing.format(index),
        )
    assert s.kinds() == ["same-error"]
    assert "Read the file again" in s.decisions[-1].text
    assert "not reaching the cause" not in s.decisions[-1].text


def test_same_error_reads_of_different_missing_files_are_exploration(session: Factory) -> None:
    # The harness does not name the file ("File does not exist."): each path is its own error.
    s = session()
    for name in ("README.md", "docs/README.md", "src/app/page.tsx", "src/app/layout.tsx"):
        s.call("Read", {"file_path": f"/w/{name}"}, "error", "<tool_use_error>File does not exist.")
    assert s.kinds() == []


def test_same_error_needs_more_than_a_bare_exit_code(session: Factory) -> None:
    s = session()
    for command in (
        "printf 'gps\\n' | timeout 5 nc dev 23",
        "timeout 5 nc -q1 dev 23",
        "nc dev 23",
    ):
        s.bash(command, "error", "Exit code 124")
    assert s.kinds() == []
    for _ in range(3):
        s.bash("make bump", "error", "Exit code 2")
    assert s.kinds() == ["repeat-failure"]


def test_a_precondition_nudge_names_the_call_not_the_harness_text(session: Factory) -> None:
    s = session()
    not_read = "File has not been read yet. Read it first before writing to it."
    for version in range(3):
        s.call(
            "Write",
            {"file_path": "/w/server/security_test.go", "content": f"v{version}"},
            "error",
            not_read,
        )
    assert s.kinds() == ["same-error"]
    assert "`Write server/security_test.go`" in s.decisions[-1].text


def test_env_blocker_variations_of_a_command_against_one_unreachable_host(
    session: Factory,
) -> None:
    s = session()
    s.bash(
        "curl -sS https://api.example.com/v1/a",
        "error",
        "curl: (6) Could not resolve host: api.example.com",
    )
    s.bash(
        "curl -sS https://api.example.com/v1/b",
        "error",
        "curl: (6) Could not resolve host: api.example.com",
    )
    assert s.kinds() == ["env-blocker"]


def test_same_error_guessed_addresses_that_answer_404_are_exploration(session: Factory) -> None:
    s = session()
    for path in ("gis/nfhl", "gis/nfhl/MapServer", "gis/nfhl/layers", "gis", "gis/rest"):
        s.call(
            "WebFetch",
            {"url": f"https://hazards.example.gov/{path}", "prompt": "list the layers"},
            "error",
            "Request failed with status code 404",
        )
    assert s.kinds() == []


def _asked_each(records: list[CallRecord], config: CoreConfig) -> Any:
    """What the detectors say when every one that can fire on the last call is asked."""
    from loop_breaker.core.detectors import _BY_OUTCOME

    for detector in _BY_OUTCOME[records[-1].outcome]:
        found = detector(records, "main", config)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize(
    "thresholds",
    [
        {},
        {"idle-repeat": Thresholds(1, 1)},
        {"poll": Thresholds(1, 2)},
        {"cycle": Thresholds(2, 2)},
    ],
    ids=["defaults", "idle-repeat-at-1", "poll-at-1", "cycle-at-2"],
)
def test_a_call_new_in_its_window_is_decided_as_by_asking_every_detector(
    thresholds: dict[str, Thresholds],
) -> None:
    # `detect` asks nobody about a successful call whose action is new in its window: on
    # windows of few actions, polls, reverted edits and outputs that repeat or not, it must
    # answer as asking each detector does, whatever the thresholds.
    config = CoreConfig(thresholds={**CoreConfig().thresholds, **thresholds})
    rng = random.Random(7)
    checked = skipped = 0
    for _ in range(300):
        core = LoopBreakerCore(config)
        for index in range(rng.randint(1, 40)):
            tool = rng.choice(["Bash", "Read", "Edit", "BashOutput"])
            target = rng.choice(["a", "b", "c", "d", f"n{index}"])
            if tool == "Edit":
                old, new = rng.choice([("x", "y"), ("y", "x")])
                tool_input = {"file_path": target, "old_string": old, "new_string": new}
            else:
                tool_input = {"command": target, "file_path": target, "bash_id": target}
            outcome = rng.choice(["ok", "ok", "ok", "error", "denied"])
            text = rng.choice(["same", "other", "Error: boom"])
            core.observe(Observation(f"c{index}", "main", tool, tool_input, outcome, text, index))
            records = core.windows.loops["main"].records
            if records and records[-1].call_id == f"c{index}":
                assert detect(records, "main", config) == _asked_each(records, config)
                checked += 1
                keys = [record.action_key for record in records]
                skipped += records[-1].outcome == "ok" and keys.count(keys[-1]) == 1
    assert checked > 3000 and skipped > 500
