"""Line values built without the library's general helpers equal what those helpers give."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

from observer._records import iso_timestamp, new_episode_id

DAY_MS = 24 * 60 * 60 * 1000


def _reference(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_iso_timestamp_equals_the_datetime_form_within_and_across_days() -> None:
    rng = random.Random(7)
    start = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    values = [start + offset for offset in (-1, 0, 1, 999, 1000, DAY_MS - 1, DAY_MS, DAY_MS + 1)]
    # Runs of one day (the kept date), jumps between days, years and back.
    for _ in range(200):
        base = rng.randrange(0, 2**32 * 1000)
        values += [base + rng.randrange(-DAY_MS, DAY_MS) for _ in range(20)]
    values += [2**32 * 1000 + 123, 2**33 * 1000 + 1, 2**33 * 1000 + 2, start + 5]
    for ms in values:
        assert iso_timestamp(ms) == _reference(ms), ms


def test_new_episode_id_is_a_random_version_4_uuid_in_its_text_form() -> None:
    ids = [new_episode_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text
    # Every other bit varies.
    merged = 0
    for text in ids:
        merged |= uuid.UUID(text).int
    assert merged | (0xF << 76) | (0x3 << 62) == 2**128 - 1
