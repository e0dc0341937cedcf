"""Normalisation and fingerprints: what counts as the same action, the same error, a refusal."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest
from loop_breaker.core import MAIN_LOOP, LoopBreakerCore, Observation
from loop_breaker.core.normalize import (
    _SECRET,
    OUTPUT_TAIL_CHARS,
    _has_digit,
    action_key,
    classify_outcome,
    collapse_whitespace,
    error_lines,
    failure_of,
    is_counted,
    is_poll,
    label_of,
    may_change_files,
    output_text,
    redact,
    short_path,
)
from loop_breaker.judge import content_blocks


def test_action_key_ignores_key_order_whitespace_and_cosmetic_fields() -> None:
    first = action_key("Bash", {"command": "npm  test\n", "description": "run the tests"})
    second = action_key("Bash", {"description": "again", "command": "npm test"})
    assert first == second
    assert action_key("Bash", {"command": "npm test -- a"}) != first
    assert action_key("Read", {"command": "npm test"}) != first


def test_action_key_tells_nested_inputs_apart() -> None:
    one = action_key("MultiEdit", {"file_path": "a", "edits": [{"old_string": "x"}]})
    two = action_key("MultiEdit", {"file_path": "a", "edits": [{"old_string": "y"}]})
    assert one != two


def test_error_signature_strips_line_numbers_durations_and_colour() -> None:
    one = failure_of("\x1b[31mError\x1b[0m: boom at src/a.py:12:5 (took 1.52 s)")
    two = failure_of("Error: boom at src/a.py:80:1 (took 0.9 s)")
    assert one.signature == two.signature
    assert failure_of("Error: other at src/a.py:12:5").signature != one.signature


def test_error_signature_keeps_counts_that_show_progress() -> None:
    assert (
        failure_of("Tests: 3 failed, 9 passed").signature
        != failure_of("Tests: 2 failed, 10 passed").signature
    )


@pytest.mark.parametrize(
    ("text", "error_class", "token"),
    [
        ("bash: pnpm: command not found", "command-not-found", "pnpm"),
        ("zsh: command not found: rg", "command-not-found", "rg"),
        ("ModuleNotFoundError: No module named 'yaml'", "missing-module", "yaml"),
        ("open /etc/x: permission denied", "permission", "/etc/x"),
        ("curl: (6) Could not resolve host: example.org", "network", "example.org"),
        ("HTTP 429 Too Many Requests", "rate-limit", ""),
        ("error: 401 Unauthorized", "auth", ""),
        ("write failed: No space left on device", "disk", ""),
        ("Error: Command timed out after 2m 0.0s", "timeout", ""),
        ("AssertionError: 1 != 2", "", ""),
    ],
)
def test_error_classes(text: str, error_class: str, token: str) -> None:
    failure = failure_of(text)
    assert (failure.error_class, failure.token) == (error_class, token)


def test_only_the_tail_is_looked_at() -> None:
    head = "ModuleNotFoundError: No module named 'yaml'\n"
    failure = failure_of(head + "x" * OUTPUT_TAIL_CHARS + "\nError: late")
    assert failure.error_class == ""
    assert "late" in failure.snippet


@pytest.mark.parametrize(
    ("is_error", "denied", "text", "expected"),
    [
        (False, False, "ok", "ok"),
        (True, False, "Exit code 1\nboom", "error"),
        (True, True, "blocked by write-guard", "denied"),
        (True, False, "The user doesn't want to proceed with this tool use.", "denied"),
        (True, False, "Permission to use Bash has been denied.", "denied"),
        (True, False, "PreToolUse:Bash hook error: [x]: Blocked", "denied"),
    ],
)
def test_classify_outcome(is_error: bool, denied: bool, text: str, expected: str) -> None:
    assert classify_outcome(is_error, denied, text) == expected


def test_bookkeeping_tools_and_interrupts_are_not_counted() -> None:
    assert not is_counted("TodoWrite", "")
    assert not is_counted("Bash", "[Request interrupted by user for tool use]")
    assert not is_counted("Read", "<tool_use_error>Sibling tool call errored</tool_use_error>")
    assert is_counted("Bash", "ok")


def test_polls_and_labels() -> None:
    assert is_poll("BashOutput", {"bash_id": "1"})
    assert is_poll("Bash", {"command": "sleep 30 && gh run view 1"})
    assert not is_poll("Bash", {"command": "npm test"})
    assert label_of("Edit", {"file_path": "/home/u/proj/src/app.py"}) == "Edit src/app.py"
    assert len(label_of("Bash", {"command": "x" * 500})) == 60


def test_labels_name_the_command_or_the_last_two_path_parts() -> None:
    rng = random.Random(5)
    for _ in range(5000):
        path = "".join(rng.choice(["a", "bc", "/", "\\", " "]) for _ in range(rng.randint(0, 7)))
        command = "".join(rng.choice(["ls", " ", "\n", "\u3000"]) for _ in range(rng.randint(0, 3)))
        parts = [part for part in path.replace("\\", "/").split("/") if part]
        assert short_path(path) == ("/".join(parts[-2:]) if parts else path)
        tool_input = {"command": command, "url": 7, "pattern": path}
        if command.strip():
            assert label_of("Bash", tool_input) == " ".join(command.split())
        else:
            assert label_of("Bash", tool_input) == (f"Bash {short_path(path)}" if path else "Bash")
    assert label_of("Read", {"file_path": "", "path": "/w/a.py"}) == "Read"


def test_a_one_line_error_is_read_as_the_same_line_in_a_longer_text() -> None:
    rng = random.Random(3)
    pieces = ["Error", " ", "x", "fail", "\t", "ok", "12", "é", "DENIED", "İ", "0x1f", ":3"]
    for _ in range(5000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert "\n" not in line
        # With a newline the text takes the general path, whose answer must not change.
        assert error_lines(line) == error_lines(line + "\n")
        assert _has_digit(line) == (not frozenset("0123456789").isdisjoint(line))
    assert not _has_digit("٣ is an Arabic-Indic three")


def test_output_text_and_redaction() -> None:
    assert output_text({"stdout": "hi"}) == '{"stdout": "hi"}'
    assert output_text(None) == ""
    assert "hunter2" not in redact("password=hunter2 and more")


def test_redaction_masks_what_the_secret_pattern_matches() -> None:
    rng = random.Random(11)
    pieces = ["api", "API", "_", "-", "key", "Token", "secret", "PASSWD", "password", "ſ", "K"]
    pieces += ["authorization", "sk", "ghp", "GHO", "xoxb", "abcdefgh12", ":", "=", " ", "é", "x"]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        assert redact(text) == _SECRET.sub("[redacted]", text)
    # Case folds beyond ASCII are the pattern's, not `lower`'s: `ſ` is an `s`, `K` a `k`.
    assert redact("PAſſWORD=hunter2") == "[redacted]"
    assert redact("ſk-abcdefgh12345") == "[redacted]"
    assert redact("apiKey: 12345678") == "[redacted]"


def test_whitespace_collapses_as_split_and_join_for_every_character() -> None:
    rng = random.Random(7)
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        for text in (f"{char}a{char}", f"a {char}{char}b"):
            assert collapse_whitespace(text) == " ".join(text.split())
    pieces = ["a", " ", "  ", "\t", "\n", "\u00a0", "\u3000", "é", "x y"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert collapse_whitespace(text) == " ".join(text.split())


def test_a_call_record_holds_each_derived_value_in_its_own_field() -> None:
    core = LoopBreakerCore()
    text = "zsh: command not found: rg\nError: token=abc12345 at step 3"
    tool_input = {"command": "rg  foo", "description": "search"}
    core.observe(Observation("c1", MAIN_LOOP, "Bash", tool_input, "error", text, 42))
    failure = failure_of(text)
    record = core.windows.loops[MAIN_LOOP].records[-1]
    key = action_key("Bash", tool_input)
    expected = {
        "call_id": "c1",
        "seq": 1,
        "tool": "Bash",
        "action_key": key,
        "label": "rg foo",
        "outcome": "error",
        "outcome_fp": failure.signature,
        "error_sig": failure.signature,
        "error_class": "command-not-found",
        "error_token": "rg",
        "snippet": redact(failure.snippet),
        "file": "",
        "changed": False,
        "reverted": False,
        "is_poll": False,
        "epoch": 0,
        "at_ms": 42,
        "cycle_key": f"{key}:{failure.signature}",
    }
    assert {name: getattr(record, name) for name in expected} == expected
    assert "[redacted]" in record.snippet
    core.observe(Observation("c2", MAIN_LOOP, "BashOutput", {"bash_id": "b"}, "ok", "x", 43))
    assert core.windows.loops[MAIN_LOOP].records[-1].is_poll


# -- fingerprints that see the difference between failures, snippets that quote the failure --


def test_a_linters_issue_lines_tell_its_runs_apart_under_a_constant_summary() -> None:
    # golangci-lint (r12 of the shared labelled set): no error word on the issue lines, and
    # the same summary every run; the file named is what changed.
    def lint(file: str) -> str:
        return (
            f'{file}:41:12: "GET" can be http.MethodGet (usestdlibvars)\n'
            '\treq, _ := http.NewRequest("GET", u, nil)\n\t                      ^\n'
            "3 issues:\n* usestdlibvars: 3\n"
        )

    first, second = failure_of(lint("cmd/serve.go")), failure_of(lint("internal/api/x.go"))
    assert first.signature != second.signature
    assert first.snippet.startswith("cmd/serve.go:#")
    # The same issue at another line is the same failure: line numbers still do not count.
    assert failure_of(lint("cmd/serve.go").replace(":41:12:", ":44:2:")).signature == (
        first.signature
    )


def test_an_eslint_file_header_line_tells_two_files_apart() -> None:
    report = "/w/src/{}.ts\n  12:5  error  Unexpected any  no-explicit-any\n\n✖ 1 problem\n"
    assert failure_of(report.format("a")).signature != failure_of(report.format("b")).signature


def test_without_error_lines_the_whole_tail_is_the_identity_not_its_last_lines() -> None:
    summary = "\nsummary: 3 items differ\nsee above"
    first = failure_of("alpha.txt differs from beta.txt" + summary)
    second = failure_of("gamma.txt differs from delta.txt" + summary)
    assert first.signature != second.signature


def test_a_pass_line_with_an_error_word_is_never_quoted() -> None:
    # r13: a property test named "error ..." passed; the failure is further down.
    text = (
        "+ error HTML generation is safe: OK, passed 100 tests.\n"
        "! lexer round trip: Falsified after 3 passed tests.\n"
        "--- FAIL: TestProperties (0.02s)\nFAIL\n"
    )
    failure = failure_of(text)
    assert "passed 100" not in failure.snippet
    assert failure.snippet == "--- FAIL: TestProperties (#)"
    assert error_lines("ok  \tgithub.com/x/y\t0.3s\n✓ renders (2 ms)\nPASSED t.py::a") == []


def test_a_blob_of_data_is_never_quoted_or_fingerprinted() -> None:
    blob = "QUJD" * 40 + "ZXJyb3I="  # base64 whose letters spell "fail" and "error" by chance
    text = f"data: {blob}\n{blob}errorFAIL{blob}\nError: upload rejected (413)\n"
    failure = failure_of(text)
    assert failure.snippet == "Error: upload rejected (#)"
    assert failure.signature == failure_of("Error: upload rejected (413)").signature


def test_a_failed_edit_precondition_is_known_by_its_marker() -> None:
    text = "<tool_use_error>Found 2 matches of the string to replace, but replace_all is false."
    assert failure_of(text).precondition == "matches of the string to replace"
    assert failure_of("<tool_use_error>File has not been read yet.").precondition
    assert failure_of("Error: file not found: a.py").precondition == ""


def test_a_precondition_error_is_keyed_by_the_file_it_names() -> None:
    core = LoopBreakerCore()
    not_read = "<tool_use_error>File has not been read yet. Read it first before writing to it."
    for index, path in enumerate(["/w/a.py", "/w/b.py", "/w/a.py"]):
        tool_input = {"file_path": path, "old_string": f"x{index}", "new_string": "y"}
        core.observe(Observation(f"c{index}", MAIN_LOOP, "Edit", tool_input, "error", not_read, 1))
    first, second, third = core.windows.loops[MAIN_LOOP].records
    assert first.error_sig != second.error_sig
    assert first.error_sig == third.error_sig
    assert first.error_class == "precondition"


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("error: Failed to spawn: `pytest`\n  Caused by: No such file or directory", "pytest"),
        ('exec: "golangci-lint": executable file not found in $PATH', "golangci-lint"),
    ],
)
def test_a_missing_command_names_its_token(text: str, token: str) -> None:
    failure = failure_of(text)
    assert (failure.error_class, failure.token) == ("command-not-found", token)


def test_temporary_folders_of_macos_do_not_count() -> None:
    first = failure_of("FAILED /private/var/folders/ab/T/pytest-of-u/pytest-3/t.py::a - boom")
    second = failure_of("FAILED /var/folders/cd/T/pytest-of-u/pytest-9/t.py::a - boom")
    assert first.signature == second.signature


def test_an_exit_code_line_is_not_the_failing_line() -> None:
    failure = failure_of("Exit code 2\nmake: *** No rule to make target 'bump'.  Stop.")
    assert failure.snippet == "make: *** No rule to make target 'bump'. Stop."
    assert not failure.bare
    assert failure_of("Exit code 124").bare
    assert failure.signature != failure_of("Exit code 2\nmake: *** No rule for 'x'.").signature


def test_log_timestamps_do_not_count() -> None:
    log = "npm error A complete log of this run can be found in: /Users/u/.npm/_logs/{}-debug-0.log"
    first = failure_of(log.format("2025-09-17T16_56_06_576Z") + "\nnpm error Missing script: lint")
    second = failure_of(log.format("2025-09-18T10_00_01_001Z") + "\nnpm error Missing script: lint")
    assert first.signature == second.signature
    assert failure_of("[10:04:05.804] Error: no GPS fix").signature == (
        failure_of("[11:05:06.000] Error: no GPS fix").signature
    )


def test_a_tracebacks_frames_tell_where_the_same_exception_came_from() -> None:
    frame = 'Traceback (most recent call last):\n  File "/w/app/{}.py", line {}, in run\n'
    text = frame + "    check()\nValueError: bad value\n"
    first = failure_of(text.format("orders", 12))
    assert first.signature != failure_of(text.format("users", 12)).signature
    assert first.signature == failure_of(text.format("orders", 40)).signature
    assert first.snippet == "ValueError: bad value"


def test_an_assertions_expected_and_received_values_count() -> None:
    report = (
        "● Cycle › velocity\n\n    expect(received).toBe(expected)\n\n"
        "    Expected: 2.5\n    Received: {}\n\nTests: 1 failed, 32 passed, 33 total\n"
    )
    assert failure_of(report.format("2.69")).signature != failure_of(report.format("2.6")).signature


def test_a_bare_location_alone_does_not_hide_what_differs() -> None:
    # shellcheck: the location line has no error word and its message is on the next lines, so
    # the whole tail is read, and two different findings at one place stay different.
    one = (
        "In deploy.sh line 3:\nrm -rf $DIR\n^--^ SC2086 (info): Double quote to prevent globbing.\n"
    )
    two = "In deploy.sh line 9:\ncd $X\n^-^ SC2164 (warning): Use 'cd ... || exit'.\n"
    assert failure_of(one).signature != failure_of(two).signature
    assert error_lines(one) == []


@pytest.mark.parametrize(
    ("text", "error_class", "token"),
    [
        ('cannot find package "github.com/x/y" in any of:', "missing-module", "github.com/x/y"),
        (
            "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /w/a.js",
            "missing-module",
            "zod",
        ),
        ("bash: ./deploy.sh: Permission denied", "permission", "./deploy.sh"),
        ("curl: (6) Could not resolve host: api.example.com", "network", "api.example.com"),
        ("Error: connect ECONNREFUSED 127.0.0.1:5432", "network", "127.0.0.1:5432"),
        (
            "curl: (7) Failed to connect to localhost port 3000 after 0 ms: Connection refused",
            "network",
            "localhost",
        ),
    ],
)
def test_an_environment_error_names_what_it_is_about(
    text: str, error_class: str, token: str
) -> None:
    # A named token lets variations of a command hit "the same environment problem".
    failure = failure_of(text)
    assert (failure.error_class, failure.token) == (error_class, token)


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        ("cat >> README.md << 'EOF'\nmore\nEOF", True),
        ("echo hi > out.txt", True),
        ("sed -i 's/a/b/' src/a.py", True),
        ("git checkout main", True),
        ("npm install", True),
        ("ruff check --fix .", True),
        ("npm test 2>&1", False),
        ("ls -la > /dev/null", False),
        ("git status", False),
        ("pytest -q 2>&1 | tail -5", False),
        ("grep -rn foo src", False),
    ],
)
def test_a_shell_command_that_may_change_files(command: str, changes: bool) -> None:
    assert may_change_files(command) is changes


# The one alternation `may_change_files` was written as first: its three patterns must answer
# the same for every command.
_ONE_PATTERN = re.compile(
    r"(?:^|[^\d&>])>>?\s*(?!&|/dev/null)[\w~./$\"']"
    r"|\b(?:tee|mv|cp|rm|touch|mkdir|patch|chmod|ln|truncate|unzip|tar\s+-?x\w*)\b"
    r"|\bsed\s+(?:-\w*\s+)*-i|\bperl\s+-\w*i"
    r"|\bgit\s+(?:checkout|switch|reset|restore|apply|am|stash|merge|rebase|pull|cherry-pick"
    r"|revert|rm|mv|clean)\b"
    r"|\b(?:npm|pnpm|yarn|bun|pip3?|uv|poetry|cargo|go)\s+(?:install|i|add|remove|uninstall"
    r"|update|upgrade|get|sync|mod\s+tidy)\b"
    r"|--fix\b|--write\b|\bgofmt\s+-\w*w|\bblack\b|\bruff\s+format\b"
)
_PIECES = (
    *" >>&|;-/.\"'~$_\n\t0129ax",
    *("tee", "mv", "cp", "rm", "touch", "mkdir", "patch", "chmod", "ln", "truncate", "unzip"),
    *("tar -x", "tar xzf", "sed -i", "sed -n", "perl -pi", "git checkout", "git clean", "git log"),
    *("npm install", "pnpm add", "yarn remove", "bun i", "pip3 install", "uv sync", "go mod tidy"),
    *("poetry update", "cargo get", "npm test", "--fix", "--write", "gofmt -w", "black"),
    *("ruff format", "ruff check", "/dev/null", "ñ", "é"),
)


def _shared_commands() -> list[str]:
    corpus = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "transcripts"
    if not corpus.is_dir():
        pytest.fail(f"the shared corpus is missing: expected it at {corpus}")
    commands = []
    for path in sorted(corpus.glob("*.jsonl")):
        for _, block in content_blocks(path):
            tool_input = block.get("input") if block.get("type") == "tool_use" else None
            command = tool_input.get("command") if isinstance(tool_input, dict) else None
            if isinstance(command, str):
                commands.append(command)
    return commands


def test_may_change_files_answers_as_the_one_pattern_did() -> None:
    generator = random.Random(20)
    made = ["".join(generator.choices(_PIECES, k=generator.randint(0, 12))) for _ in range(30_000)]
    commands = _shared_commands()
    assert len(commands) > 300
    changing = 0
    for command in commands + made:
        expected = bool(_ONE_PATTERN.search(command))
        assert may_change_files(command) is expected, command
        changing += expected
    # Both answers occur often, so a pattern that always answered one way would fail.
    assert 1_000 < changing < len(commands) + len(made) - 1_000


def test_request_ids_and_uuids_of_one_failure_do_not_make_it_another() -> None:
    # A cloud API names each request anew (terraform's AWS errors: RequestID, HostID).
    def s3(request: str, host: str, status: str = "403, api error AccessDenied") -> str:
        return (
            "│ Error: creating S3 Bucket (assets): operation error S3: CreateBucket, https "
            f"response error StatusCode: {status}, RequestID: {request}, HostID: {host}\n"
        )

    first = failure_of(s3("1A2B3C4D5E6F7788", "aGVsbG8gd29ybGQgaGVsbG8="))
    assert failure_of(s3("99FF00EE11DD22CC", "d29ybGQgaGVsbG8gd29ybGQ=")).signature == (
        first.signature
    )
    other = failure_of(s3("99FF00EE11DD22CC", "x" * 24, "409, api error BucketAlreadyExists"))
    assert other.signature != first.signature
    job = "Error: job {} failed: quota exceeded"
    assert failure_of(job.format("3f1c2b7e-1111-4abc-8def-0123456789ab")).signature == (
        failure_of(job.format("0b9a8c7d-2222-4def-9abc-ba9876543210")).signature
    )
