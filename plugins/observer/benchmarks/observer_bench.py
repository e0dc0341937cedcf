"""Time the PII filter, the episode write path and the dashboard fold; print them and peak RSS."""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

from observer._dashboard_data import dashboard_payload
from observer._log_file import append_record, read_log
from observer._log_view import fold
from observer._pii import scrub
from observer._records import (
    DecisionProvenance,
    Environment,
    Episode,
    PromptSignal,
    TaskSize,
    iso_timestamp,
)

START_MS = 1_767_225_600_000
SAMPLE = (
    "Please refactor src/app/models.py (commit 3f786850e387) and mail jane@example.com; the key "
    "AKIAIOSFODNN7EXAMPLE leaked, call +1 415 555 0132. Version 2.14.4, id "
    "94692e6b-0ceb-4981-bb88-c31d81e9e21e. "
) * 4


def _episode(index: int) -> dict[str, object]:
    return Episode(
        id=f"ep-{index}",
        ts=iso_timestamp(START_MS + index * 1000),
        session_id=f"s{index % 7}",
        turn_id=f"t{index}",
        node=("builder", "reviewer", "none", "discovery-interview")[index % 4],
        decision_provenance=DecisionProvenance(provenance="autonomous"),
        environment=Environment(session_turn=index + 1),
        task_size=TaskSize(tool_calls=index % 30, edits=index % 5, files_touched=2, bucket="small"),
        prompt_signal=PromptSignal(length_bucket="medium"),
    ).model_dump(mode="json")


def main() -> None:
    rounds = 2_000
    started = time.perf_counter()
    for _ in range(rounds):
        scrub(SAMPLE)
    per_scrub_us = (time.perf_counter() - started) / rounds * 1e6
    print(f"pii scrub of a {len(SAMPLE)}-char prompt: {per_scrub_us:.1f} µs")

    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder)
        writes = 500
        started = time.perf_counter()
        for index in range(writes):
            append_record(data_dir, _episode(index), START_MS)
        per_write_ms = (time.perf_counter() - started) / writes * 1e3
        print(f"episode append (scrub + O_APPEND write + fsync): {per_write_ms:.3f} ms")

        for index in range(writes, 10_000):
            append_record(data_dir, _episode(index), START_MS)
        started = time.perf_counter()
        payload = dashboard_payload(fold(read_log(data_dir).records))
        fold_ms = (time.perf_counter() - started) * 1e3
        episodes = payload["aggregate"]["totals"]["episodes"]
        print(f"read + fold + four views over {episodes} episodes: {fold_ms:.0f} ms")

    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak RSS: {peak_kib / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
