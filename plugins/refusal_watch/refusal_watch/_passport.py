"""Reads and checks the passport that proves the harness already carries the refusal rule."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ._rule import RULE_SHA256

_PLATFORM = re.compile(r"[a-z0-9_]+")
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]*")

PASSPORT_ABSENT = "passport-absent"
PASSPORT_AMBIGUOUS = "passport-ambiguous"
PASSPORT_STALE = "passport-stale"
PASSPORT_UNREADABLE = "passport-unreadable"
PASSPORT_INVALID = "passport-invalid"
PASSPORT_NO_VERSION = "passport-no-version"


@dataclass(frozen=True, slots=True)
class PassportVerdict:
    """Whether the harness provably carries the rule; else the named reason (None: no passport)."""

    carries_rule: bool
    diagnostic: str | None = None
    detail: str = ""


def _fallback(diagnostic: str | None, detail: str = "") -> PassportVerdict:
    return PassportVerdict(carries_rule=False, diagnostic=diagnostic, detail=detail)


def _candidates(passports_dir: Path, version: str) -> list[tuple[Path, str]]:
    prefix = f"{version}-"
    found: list[tuple[Path, str]] = []
    for path in passports_dir.iterdir():
        name = path.name
        if not (name.startswith(prefix) and name.endswith(".json")):
            continue
        platform = name[len(prefix) : -len(".json")]
        if _PLATFORM.fullmatch(platform):
            found.append((path, platform))
    return sorted(found)


def check_passport(
    passports_dir: Path, harness_dir: Path, harness_version: str | None
) -> PassportVerdict:
    """Find `<version>-<platform>.json`; check it against its name, the rule and the harness file.

    No directory or no match is a plain fallback; anything else that fails is a named diagnostic
    and a fallback too: only a fully consistent passport proves delivery.
    """
    if not harness_version or not _VERSION.fullmatch(harness_version):
        return _fallback(PASSPORT_NO_VERSION if harness_version else None)
    try:
        matches = _candidates(passports_dir, harness_version)
    except FileNotFoundError:
        return _fallback(None)
    except OSError as error:
        return _fallback(PASSPORT_UNREADABLE, type(error).__name__)
    if not matches:
        return _fallback(None)
    if len(matches) > 1:
        return _fallback(PASSPORT_AMBIGUOUS, f"{len(matches)} passports match")
    path, platform = matches[0]
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        return _fallback(PASSPORT_UNREADABLE, type(error).__name__)
    except ValueError:
        return _fallback(PASSPORT_INVALID, "not JSON")
    return _check_document(document, harness_version, platform, harness_dir)


def _check_document(
    document: object, version: str, platform: str, harness_dir: Path
) -> PassportVerdict:
    if not isinstance(document, dict):
        return _fallback(PASSPORT_INVALID, "not an object")
    if document.get("version") != version or document.get("platform") != platform:
        return _fallback(PASSPORT_INVALID, "version or platform differ from the file name")
    if document.get("rule_applied") is not True:
        return _fallback(PASSPORT_INVALID, "rule_applied is not true")
    if document.get("rule_sha256") != RULE_SHA256:
        return _fallback(PASSPORT_INVALID, "rule_sha256 differs from this rule")
    harness = document.get("harness")
    if not isinstance(harness, dict):
        return _fallback(PASSPORT_INVALID, "harness size/mtime missing")
    size, mtime_ns = harness.get("size"), harness.get("mtime_ns")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (size, mtime_ns)):
        return _fallback(PASSPORT_INVALID, "harness size/mtime missing")
    try:
        stat = (harness_dir / version).stat()
    except FileNotFoundError:
        return _fallback(PASSPORT_STALE, "harness file missing")
    except OSError as error:
        return _fallback(PASSPORT_UNREADABLE, type(error).__name__)
    if stat.st_size != size or stat.st_mtime_ns != mtime_ns:
        return _fallback(PASSPORT_STALE, "harness file changed since the passport")
    return PassportVerdict(carries_rule=True)


def describe_verdict(verdict: PassportVerdict) -> str | None:
    """The debug line of a named diagnostic (None when there is nothing to say)."""
    if verdict.diagnostic is None:
        return None
    detail = f": {verdict.detail}" if verdict.detail else ""
    return (
        f"refusal-watch [{verdict.diagnostic}]{detail}; "
        "the rule block is added as a fallback when the switch is on."
    )
