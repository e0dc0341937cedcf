"""The PII filter replaces personal data and credentials and leaves identifiers alone."""

from __future__ import annotations

import random
import string
import uuid

import pytest
from observer._pii import _RULE_FREE, _RULES, scrub, scrub_value

# (text, secret part that must disappear, placeholder that must appear)
POSITIVE: list[tuple[str, str, str]] = [
    ("mail me at jane.doe@example.com please", "jane.doe@example.com", "[EMAIL]"),
    ("cc: first.last+tag@sub.example.co.uk", "first.last+tag@sub.example.co.uk", "[EMAIL]"),
    ("Contact: JOHN_SMITH@Company.ORG.", "JOHN_SMITH@Company.ORG", "[EMAIL]"),
    ("owner=ops-team@corp-mail.io;", "ops-team@corp-mail.io", "[EMAIL]"),
    ("<a.b@c.dev>", "a.b@c.dev", "[EMAIL]"),
    ("call +1 415 555 0132 tomorrow", "+1 415 555 0132", "[PHONE]"),
    ("call +14155550132", "+14155550132", "[PHONE]"),
    ("phone: +7 (912) 345-67-89", "+7 (912) 345-67-89", "[PHONE]"),
    ("UK office +44 20 7946 0958", "+44 20 7946 0958", "[PHONE]"),
    ("tel +49-30-901820", "+49-30-901820", "[PHONE]"),
    ("ring (415) 555-0132 now", "(415) 555-0132", "[PHONE]"),
    ("ring 415-555-0132 now", "415-555-0132", "[PHONE]"),
    ("ring 415.555.0132 now", "415.555.0132", "[PHONE]"),
    ("позвони 8 (912) 345-67-89", "8 (912) 345-67-89", "[PHONE]"),
    ("номер 8-912-345-67-89", "8-912-345-67-89", "[PHONE]"),
    ("key AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE", "[AWS_KEY]"),
    ("temp ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A", "[AWS_KEY]"),
    ("ABIA0123456789ABCDEF", "ABIA0123456789ABCDEF", "[AWS_KEY]"),
    ("(ACCA0123456789ABCDEF)", "ACCA0123456789ABCDEF", "[AWS_KEY]"),
    ("AGPA0123456789ABCDEF", "AGPA0123456789ABCDEF", "[AWS_KEY]"),
    ("AIDA0123456789ABCDEF", "AIDA0123456789ABCDEF", "[AWS_KEY]"),
    ("role AROA0123456789ABCDEF", "AROA0123456789ABCDEF", "[AWS_KEY]"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "[SECRET]",
    ),
    (
        "token ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "[GITHUB_TOKEN]",
    ),
    (
        "gho_abcdefghijklmnopqrstuvwxyz0123456789AB",
        "gho_abcdefghijklmnopqrstuvwxyz0123456789AB",
        "[GITHUB_TOKEN]",
    ),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
        "[GITHUB_TOKEN]",
    ),
    ("glpat-xxxxXXXX1234yyyyZZZZ", "glpat-xxxxXXXX1234yyyyZZZZ", "[GITLAB_TOKEN]"),
    (
        "ANTHROPIC sk-ant-api03-AbCdEf0123456789_ghIJklMNopQRstuv-wxYZ",
        "sk-ant-api03-AbCdEf0123456789_ghIJklMNopQRstuv-wxYZ",
        "[API_KEY]",
    ),
    ("openai sk-proj-4fJk9LmNoPqRsTuVwXyZ0123", "sk-proj-4fJk9LmNoPqRsTuVwXyZ0123", "[API_KEY]"),
    ("sk-1234567890abcdefghijklmnopqrstuv", "sk-1234567890abcdefghijklmnopqrstuv", "[API_KEY]"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[API_KEY]"),
    (
        "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
        "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
        "[API_KEY]",
    ),
    (
        "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKl",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKl",
        "[SLACK_TOKEN]",
    ),
    ("xoxp-1111-2222-3333-abcdef", "xoxp-1111-2222-3333-abcdef", "[SLACK_TOKEN]"),
    (
        "POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "[SLACK_WEBHOOK]",
    ),
    (
        "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "[JWT]",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA",
        "[PRIVATE_KEY]",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
        "[PRIVATE_KEY]",
    ),
    (
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC (cut)",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        "[PRIVATE_KEY]",
    ),
    ("Authorization: Bearer abc.def-ghi_jkl~mno", "abc.def-ghi_jkl~mno", "[TOKEN]"),
    ("curl -H 'authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA==", "[TOKEN]"),
    ("use bearer 0123456789abcdefABCDEF", "0123456789abcdefABCDEF", "[TOKEN]"),
    (
        "git clone https://alice:s3cr3tpass@github.com/org/repo.git",
        "alice:s3cr3tpass",
        "[URL_CREDENTIALS]",
    ),
    ("postgres://admin:hunter22@db.internal:5432/app", "admin:hunter22", "[URL_CREDENTIALS]"),
    ("redis://default:Zx9pQ@cache:6379/0", "default:Zx9pQ", "[URL_CREDENTIALS]"),
    ("API_KEY=abcd1234efgh5678", "abcd1234efgh5678", "[SECRET]"),
    ('{"password": "correct horse"}', "correct", "[SECRET]"),
    ("export GITHUB_TOKEN=not-a-real-one-xyz", "not-a-real-one-xyz", "[SECRET]"),
    ("client_secret: 9f8e7d6c5b4a", "9f8e7d6c5b4a", "[SECRET]"),
    ("db_password='p@ssw0rd!'", "p@ssw0rd!", "[SECRET]"),
    ("apikey:QWERTYUIOPASDF", "QWERTYUIOPASDF", "[SECRET]"),
]

NEGATIVE: list[str] = [
    "commit 9b0f63e fixed it",
    "sha 3f786850e387550fdab836ed7e6dc881de23001b",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "session 94692e6b-0ceb-4981-bb88-c31d81e9e21e resumed",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "upgrade to version 1.2.3",
    "pydantic 2.14.4 and pydantic-core 2.50.5",
    "Windows 10.0.19045.1234 build",
    "release v2.0.0-rc.1+build.5",
    "date 2024-05-19 and 2026-11-30T00:47:12Z",
    "timestamp 1716123456789 ms",
    "listening on 127.0.0.1:8080",
    "server at 192.168.100.200",
    "python3.11 -m pytest -q",
    "max_tokens=100000 and token_count: 4096",
    "@pytest.mark.anyio decorates the test",
    "npm install @types/node",
    "color #ff00aa and issue #1234",
    "task-management-system-refactoring is the risk-based plan",
    "cost 1,234,567.89 dollars",
    "line 415 of file.py, column 12",
    "the password field is required",
    "see docs/observer/notes/2024-05-19-retro.md",
    "port range 8000-8999 and 3000-3100",
    "base64 aGVsbG8gd29ybGQ= is hello world",
    "tokens used: 1,234; tokenizer ready",
]


@pytest.mark.parametrize(("text", "secret", "placeholder"), POSITIVE)
def test_scrub_replaces_sensitive_parts(text: str, secret: str, placeholder: str) -> None:
    cleaned = scrub(text)
    assert secret not in cleaned
    assert placeholder in cleaned


@pytest.mark.parametrize("text", NEGATIVE)
def test_scrub_leaves_identifiers_alone(text: str) -> None:
    assert scrub(text) == text


def test_there_are_enough_cases() -> None:
    assert len(POSITIVE) >= 40
    assert len(NEGATIVE) >= 20


def test_scrub_keeps_the_surrounding_text() -> None:
    assert scrub("write to jane@example.com today") == "write to [EMAIL] today"
    assert scrub("x API_KEY=abcd1234efgh y") == "x API_KEY=[SECRET] y"


def test_scrub_value_walks_nested_structures_and_keys() -> None:
    value = {
        "a": ["x jane@example.com", 3, None],
        "jane@example.com": {"t": "AKIAIOSFODNN7EXAMPLE"},
    }
    assert scrub_value(value) == {"a": ["x [EMAIL]", 3, None], "[EMAIL]": {"t": "[AWS_KEY]"}}


def test_scrub_is_idempotent() -> None:
    for text, _secret, _placeholder in POSITIVE:
        once = scrub(text)
        assert scrub(once) == once


def _scrub_with_every_rule(text: str) -> str:
    for rule in _RULES:
        text = rule.pattern.sub(rule.replace, text)
    return text


@pytest.mark.parametrize(
    "text", [text for text, _secret, _placeholder in POSITIVE] + NEGATIVE + ["", "t-12"]
)
def test_the_hint_prefilters_skip_only_rules_that_cannot_match(text: str) -> None:
    assert scrub(text) == _scrub_with_every_rule(text)


def _shaped(rng: random.Random, shape: str) -> str:
    # `h` is any lower-case hex digit, `d` any decimal digit; everything else stays.
    return "".join(
        rng.choice("0123456789abcdef")
        if char == "h"
        else rng.choice(string.digits)
        if char == "d"
        else char
        for char in shape
    )


def test_uuids_and_line_timestamps_are_left_alone_by_every_rule() -> None:
    rng = random.Random(20260101)
    uuid_shape = "hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh"
    samples = [str(uuid.uuid4()) for _ in range(500)]
    samples += [_shaped(rng, uuid_shape) for _ in range(2000)]
    samples += [_shaped(rng, uuid_shape.replace("h", "d")) for _ in range(500)]
    samples += ["acca0000-acca-8888-7777-123456789012", "78888888-8888-8888-8888-888888888888"]
    samples += [_shaped(rng, "dddd-dd-ddTdd:dd:dd.dddZ") for _ in range(2000)]
    samples += ["8888-88-88T88:88:88.888Z", "7000-01-01T00:00:00.000Z"]
    for text in samples:
        assert _scrub_with_every_rule(text) == text
        assert scrub(text) == text


def test_turn_ids_of_a_uuid_and_a_number_are_left_alone_by_every_rule() -> None:
    rng = random.Random(20260303)
    samples = [f"{uuid.uuid4()}:{rng.randrange(1, 10**9)}" for _ in range(1000)]
    samples += [
        _shaped(rng, "hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh:" + "d" * rng.randrange(1, 10))
        for _ in range(2000)
    ]
    samples += [_shaped(rng, "dddddddd-dddd-dddd-dddd-dddddddddddd:ddddddddd") for _ in range(500)]
    samples += ["78888888-8888-8888-8888-888888888888:7", "acca0000-acca-8888-7777-123456789012:1"]
    samples += ["94692e6b-0ceb-4981-bb88-c31d81e9e21e:415555013"]
    for text in samples:
        assert _RULE_FREE(text), text
        assert _scrub_with_every_rule(text) == text
        assert scrub(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "94692e6b-0ceb-4981-bb88-c31d81e9e21e:415 555 0132",
        "94692e6b-0ceb-4981-bb88-c31d81e9e21e:+14155550132",
        "94692e6b-0ceb-4981-bb88-c31d81e9e21e:1234567890",
    ],
)
def test_only_a_number_of_nine_digits_at_most_follows_a_skipped_turn_id(text: str) -> None:
    assert not _RULE_FREE(text)
    assert scrub(text) == _scrub_with_every_rule(text)


@pytest.mark.parametrize(
    "text",
    [
        "a3b22378-244c-4a23-b39c-cf4e49b8df3f jane@example.com",
        "A3B22378-244C-4A23-B39C-CF4E49B8DF3F",
        "2026-01-01T00:00:00.000Z +1 415 555 0132",
        "+1 415 555 0132",
    ],
)
def test_only_whole_uuids_and_timestamps_skip_the_rules(text: str) -> None:
    assert scrub(text) == _scrub_with_every_rule(text)
    assert scrub(text + "\n") == _scrub_with_every_rule(text + "\n")
