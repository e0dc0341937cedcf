"""Passport selection and validation."""

from __future__ import annotations

import json
from pathlib import Path

from refusal_watch._passport import (
    PASSPORT_AMBIGUOUS,
    PASSPORT_INVALID,
    PASSPORT_STALE,
    check_passport,
)
from refusal_watch._rule import RULE_SHA256

VERSION = "2.1.285"


def setup(tmp_path: Path, **overrides: object) -> tuple[Path, Path]:
    passports, harness = tmp_path / "passports", tmp_path / "versions"
    passports.mkdir()
    harness.mkdir()
    binary = harness / VERSION
    binary.write_bytes(b"harness")
    stat = binary.stat()
    document: dict[str, object] = {
        "version": VERSION,
        "platform": "linux_x64",
        "rule_applied": True,
        "rule_sha256": RULE_SHA256,
        "harness": {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns},
    }
    document.update(overrides)
    (passports / f"{VERSION}-linux_x64.json").write_text(json.dumps(document))
    return passports, harness


def test_consistent_passport_proves_the_rule(tmp_path: Path) -> None:
    passports, harness = setup(tmp_path)
    assert check_passport(passports, harness, VERSION).carries_rule


def test_missing_dir_is_plain_fallback(tmp_path: Path) -> None:
    verdict = check_passport(tmp_path / "nope", tmp_path, VERSION)
    assert not verdict.carries_rule
    assert verdict.diagnostic is None


def test_two_matches_are_ambiguous(tmp_path: Path) -> None:
    passports, harness = setup(tmp_path)
    (passports / f"{VERSION}-darwin_arm64.json").write_text("{}")
    assert check_passport(passports, harness, VERSION).diagnostic == PASSPORT_AMBIGUOUS


def test_fields_must_agree_with_name(tmp_path: Path) -> None:
    passports, harness = setup(tmp_path, platform="darwin_arm64")
    assert check_passport(passports, harness, VERSION).diagnostic == PASSPORT_INVALID


def test_rule_hash_must_match(tmp_path: Path) -> None:
    passports, harness = setup(tmp_path, rule_sha256="0" * 64)
    assert check_passport(passports, harness, VERSION).diagnostic == PASSPORT_INVALID


def test_applied_must_be_true(tmp_path: Path) -> None:
    passports, harness = setup(tmp_path, rule_applied=1)
    assert check_passport(passports, harness, VERSION).diagnostic == PASSPORT_INVALID


def test_changed_harness_file_is_stale(tmp_path: Path) -> None:
    passports, harness = setup(tmp_path)
    (harness / VERSION).write_bytes(b"harness, patched again")
    assert check_passport(passports, harness, VERSION).diagnostic == PASSPORT_STALE
    (harness / VERSION).unlink()
    assert check_passport(passports, harness, VERSION).diagnostic == PASSPORT_STALE


def test_bad_json_and_bad_version_refused(tmp_path: Path) -> None:
    passports, harness = setup(tmp_path)
    (passports / f"{VERSION}-linux_x64.json").write_text("{not json")
    assert check_passport(passports, harness, VERSION).diagnostic == PASSPORT_INVALID
    assert not check_passport(passports, harness, "../etc").carries_rule
    assert not check_passport(passports, harness, None).carries_rule
