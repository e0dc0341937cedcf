"""Replace personal data and credentials in strings with typed placeholders before writing."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]
    hints: tuple[str, ...] = ()
    """Lower-case substrings, one of which every match contains; else the rule is skipped."""
    hinted: Callable[[str], object] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # One scan of the lowered text instead of one `in` per hint.
        hint_pattern = re.compile("|".join(re.escape(hint) for hint in self.hints))
        object.__setattr__(self, "hinted", hint_pattern.search)


def _placeholder(kind: str) -> Callable[[re.Match[str]], str]:
    return lambda _match: f"[{kind}]"


def _keep_prefix(kind: str) -> Callable[[re.Match[str]], str]:
    return lambda match: f"{match.group('prefix')}[{kind}]"


def _phone_or_keep(match: re.Match[str]) -> str:
    # The digit count separates phone numbers from short codes and long identifiers.
    digits = sum(char.isdigit() for char in match.group(0))
    return "[PHONE]" if 8 <= digits <= 15 else match.group(0)


def _secret_value_or_keep(match: re.Match[str]) -> str:
    value = match.group("value")
    # A bare number next to a "token"-like key is a count or a limit, not a credential.
    if value.isdigit():
        return match.group(0)
    return f"{match.group('prefix')}[SECRET]"


# Order matters: whole blocks and structured credentials go before the generic shapes that would
# otherwise claim a part of them (an email inside URL credentials, a JWT behind "Bearer").
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "PRIVATE_KEY",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
        _placeholder("PRIVATE_KEY"),
        hints=("private key",),
    ),
    _Rule(
        "URL_CREDENTIALS",
        re.compile(r"(?P<prefix>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^\s/?#@:]+:[^\s/?#@]+@"),
        lambda match: f"{match.group('prefix')}[URL_CREDENTIALS]@",
        hints=("://",),
    ),
    _Rule(
        "SLACK_WEBHOOK",
        re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
        _placeholder("SLACK_WEBHOOK"),
        hints=("hooks.slack.com",),
    ),
    _Rule(
        "AUTH_HEADER",
        re.compile(
            r"(?P<prefix>\b(?:[Aa]uthorization|[Pp]roxy-[Aa]uthorization)\s*[:=]\s*[\"']?"
            r"(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest)?\s*)"
            r"(?!(?:[Bb]earer|[Bb]asic|[Tt]oken|[Dd]igest)\b)[A-Za-z0-9._~+/=:-]{6,}"
        ),
        _keep_prefix("TOKEN"),
        hints=("authorization",),
    ),
    _Rule(
        "BEARER",
        re.compile(r"(?P<prefix>\b[Bb]earer\s+)[A-Za-z0-9._~+/-]{8,}=*"),
        _keep_prefix("TOKEN"),
        hints=("bearer",),
    ),
    _Rule(
        "JWT",
        re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
        _placeholder("JWT"),
        hints=("eyj",),
    ),
    _Rule(
        "AWS_KEY",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        _placeholder("AWS_KEY"),
        hints=("akia", "asia", "abia", "acca", "agpa", "aida", "aroa"),
    ),
    _Rule(
        "GITHUB_TOKEN",
        re.compile(
            r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"
        ),
        _placeholder("GITHUB_TOKEN"),
        hints=("gh", "github_pat_"),
    ),
    _Rule(
        "GITLAB_TOKEN",
        re.compile(r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}"),
        _placeholder("GITLAB_TOKEN"),
        hints=("glpat-",),
    ),
    _Rule(
        "SLACK_TOKEN",
        re.compile(r"(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9-]{10,}"),
        _placeholder("SLACK_TOKEN"),
        hints=("xox",),
    ),
    _Rule(
        "API_KEY",
        # Anthropic (sk-ant-…), OpenAI (sk-…, sk-proj-…), Stripe (sk_live_…), Google (AIza…).
        re.compile(
            r"(?<![A-Za-z0-9_-])(?:sk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"
            r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
            r"|AIza[0-9A-Za-z_-]{35})"
        ),
        _placeholder("API_KEY"),
        hints=("sk-", "k_live_", "k_test_", "aiza"),
    ),
    _Rule(
        "SECRET_ASSIGNMENT",
        re.compile(
            r"(?P<prefix>(?<![A-Za-z0-9])[\"']?[A-Za-z0-9_.-]*"
            r"(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|passwd|pwd|access[_-]?key|credential)"
            r"[A-Za-z0-9_.-]*[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\s\"',;]{6,})",
            re.IGNORECASE,
        ),
        _secret_value_or_keep,
        hints=("key", "secret", "token", "passw", "pwd", "credential"),
    ),
    _Rule(
        "EMAIL",
        re.compile(
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"
        ),
        _placeholder("EMAIL"),
        hints=("@",),
    ),
    _Rule(
        "PHONE",
        re.compile(
            r"(?<![\w.+/-])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){1,5}(?:[ .-]?\d{2,4})(?![\w.-]*\d)"
        ),
        _phone_or_keep,
    ),
    _Rule(
        "PHONE",
        # National forms need a separator or parentheses, so a bare run of digits (an id, a
        # millisecond timestamp) is never taken for a number.
        re.compile(
            r"(?<![\w.+/:-])(?:\(\d{2,4}\)[ .-]?\d{3}[ .-]\d{2,4}(?:[ .-]\d{2})?"
            r"|\d{3}[ .-]\d{3}[ .-]\d{4}"
            r"|[78][ -]?\(\d{3}\)[ -]?\d{3}[ -]?\d{2}[ -]?\d{2}"
            r"|[78][ -]\d{3}[ -]\d{3}[ -]\d{2}[ -]\d{2})(?![\w.:-]*\d)"
        ),
        _phone_or_keep,
    ),
)

PLACEHOLDER_KINDS: frozenset[str] = frozenset(rule.kind for rule in _RULES) | {"TOKEN", "SECRET"}
"""Every kind of placeholder the filter writes, as `[KIND]`."""


# Every hint of every rule in one pattern: text that has none of them (most ids, timestamps and
# names) needs only the rules without hints, found by one scan instead of one per rule.
_any_hint = re.compile("|".join(re.escape(hint) for rule in _RULES for hint in rule.hints)).search
_UNHINTED_RULES: tuple[_Rule, ...] = tuple(rule for rule in _RULES if not rule.hints)


# The shapes on every line, a lower-case UUID (episode and session ids; a turn id is the
# session's followed by `:` and its number) and a millisecond UTC timestamp, are left alone by
# every rule: their letters spell no hint, so only the phone rules could apply, and those need a
# `+` or `(`, or a separator in the fourth place of a number with nothing word-like before it
# (after the `:` come digits alone). Such a string skips the rules (tests run the rules on many
# of each shape and find them unchanged).
_RULE_FREE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?::[0-9]{1,9})?"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
).fullmatch


def scrub(text: str) -> str:
    """`text` with emails, phone numbers, keys and tokens replaced by `[KIND]` placeholders."""
    if _RULE_FREE(text):
        return text
    return _scrub_by_rules(text)


def _scrub_by_rules(text: str) -> str:
    lowered = text.lower()
    if not _any_hint(lowered):
        for rule in _UNHINTED_RULES:
            text = rule.pattern.sub(rule.replace, text)
        return text
    for rule in _RULES:
        if rule.hints and not rule.hinted(lowered):
            continue
        text = rule.pattern.sub(rule.replace, text)
    return text


# Records repeat the same field names and many short values (ids, kinds, buckets): each is
# scrubbed once per process. Long text is scrubbed every time and never kept.
_scrub_key = lru_cache(maxsize=1024)(scrub)
_scrub_short = lru_cache(maxsize=4096)(scrub)
_SHORT = 128


_PLAIN_SCALARS = frozenset({int, float, bool, type(None)})


def scrub_value(value: Any) -> Any:
    """A JSON-like value with every string in it (keys included) passed through `scrub`."""
    kind = type(value)
    # Exact types first: the ABC check below is slow, and records are mostly plain values.
    if kind in _PLAIN_SCALARS:
        return value
    if kind is dict:
        return _scrub_dict(value)
    if kind is str:
        return _scrub_short(value) if len(value) <= _SHORT else scrub(value)
    if isinstance(value, str):
        return _scrub_short(value) if len(value) <= _SHORT else scrub(value)
    if isinstance(value, Mapping):
        return {_scrub_key(str(key)): scrub_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_value(item) for item in value]
    return value


def _scrub_dict(value: dict[Any, Any]) -> dict[str, Any]:
    # A record's dicts hold mostly scalars and short strings: those are handled here, without a
    # call of `scrub_value` per field.
    scrubbed: dict[str, Any] = {}
    for key, item in value.items():
        kind = type(item)
        if kind is str:
            item = _scrub_short(item) if len(item) <= _SHORT else scrub(item)
        elif kind not in _PLAIN_SCALARS:
            item = scrub_value(item)
        scrubbed[_scrub_key(key if type(key) is str else str(key))] = item
    return scrubbed


_PLAIN_LEAVES = frozenset({int, bool, type(None)})

# Fields of a log line that the observer fills itself, each line afresh: the episode's UUID
# (`id`) and the line's timestamp (`ts`). Of the shape it writes them in they are clean
# without a look in the cache (`scrub` returns `_RULE_FREE` text as it is, and tests hold every
# rule to that), so a new value per line does not push the values that repeat out of it.
_SHAPED_FIELDS = frozenset({"id", "ts"})


def unchanged_plain(value: dict[Any, Any]) -> bool:
    """Whether `scrub_value(value)` equals `value` and `value` holds only exact dicts with string
    keys, lists, tuples, strings, ints, bools and None (what orjson writes as `json` does).

    Answered from the caches `scrub_value` fills (`_scrub_key`, `_scrub_short`), so a string is
    scrubbed once while it is recent, whichever of the two asks first.
    """
    scrub_key, scrub_short = _scrub_key, _scrub_short
    for key, item in value.items():
        if type(key) is not str or scrub_key(key) != key:
            return False
        kind = type(item)
        if kind is str:
            if key in _SHAPED_FIELDS and _RULE_FREE(item):
                continue
            if (scrub_short(item) if len(item) <= _SHORT else scrub(item)) != item:
                return False
        elif kind is dict:
            if not _unchanged_nested(item):
                return False
        elif kind not in _PLAIN_LEAVES and not _unchanged_items((item,)):
            return False
    return True


def _unchanged_nested(value: dict[Any, Any]) -> bool:
    scrub_key = _scrub_key
    for key in value:
        if type(key) is not str or scrub_key(key) != key:
            return False
    return _unchanged_items(value.values())


def _unchanged_items(items: Iterable[Any]) -> bool:
    scrub_short = _scrub_short
    for item in items:
        kind = type(item)
        if kind is str:
            if (scrub_short(item) if len(item) <= _SHORT else scrub(item)) != item:
                return False
        elif kind in _PLAIN_LEAVES:
            continue
        elif kind is dict:
            if not _unchanged_nested(item):
                return False
        elif kind is list or kind is tuple:
            if not _unchanged_items(item):
                return False
        else:
            return False
    return True


def clean_strings(values: Iterable[Any]) -> bool:
    """Whether every value is an exact `str` that `scrub` leaves as it is, or None; answered
    from the same cache as `unchanged_plain`."""
    scrub_short = _scrub_short
    for value in values:
        if value is None:
            continue
        if type(value) is not str:
            return False
        if (scrub_short(value) if len(value) <= _SHORT else scrub(value)) != value:
            return False
    return True
