"""Judged on real sessions: every labelled loop nudged, no nudge or alert anywhere else.

Two labelled sets are replayed through the host by `loop_breaker.judge`:

* `../shared/corpus/real-labelled/` with its own `LABELS.json` (five real sessions whose loop
  episodes, or healthiness, were labelled by reading them; see its SOURCES.md);
* `../shared/corpus/transcripts/`, labelled here in `labels/transcripts.json`: each file's note
  and each episode's note is the reason for its label, from reading the session.

`unclear` episodes tolerate a nudge without needing one; a `loop` episode needs a nudge at or
before its `nudge_by` index (its 4th repetition; the end of the episode when not given).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loop_breaker import judge

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"
REAL_LABELLED = CORPUS / "real-labelled" / "LABELS.json"
TRANSCRIPTS = CORPUS / "transcripts"
TRANSCRIPT_LABELS = HERE / "labels" / "transcripts.json"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"the shared corpus is missing: expected {path} beside the repository")
    return path


def _explain(score: judge.Score) -> str:
    lines = []
    for name, scored in sorted(score.files.items()):
        for said in scored.false:
            lines.append(f"{name}: {said.kind} outside every episode @{said.index}: {said.text}")
        for episode in scored.missed:
            lines.append(f"{name}: loop {episode.lo}..{episode.hi} not nudged: {episode.note}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def real_labelled() -> judge.Score:
    return judge.judge(_need(REAL_LABELLED))


@pytest.fixture(scope="module")
def transcripts() -> judge.Score:
    return judge.judge(TRANSCRIPT_LABELS, _need(TRANSCRIPTS))


def test_no_nudge_or_alert_outside_a_labelled_episode_of_the_real_labelled_set(
    real_labelled: judge.Score,
) -> None:
    assert real_labelled.false_nudges == [], _explain(real_labelled)


def test_every_labelled_loop_of_the_real_labelled_set_is_nudged(real_labelled: judge.Score) -> None:
    assert real_labelled.caught == real_labelled.loops, _explain(real_labelled)


def test_every_real_labelled_session_is_judged(real_labelled: judge.Score) -> None:
    assert len(real_labelled.files) == 5


def test_no_nudge_or_alert_outside_a_labelled_episode_of_the_transcripts(
    transcripts: judge.Score,
) -> None:
    assert transcripts.false_nudges == [], _explain(transcripts)


def test_every_labelled_loop_of_the_transcripts_is_nudged(transcripts: judge.Score) -> None:
    # The broken Stop hook of 21 is the one loop there: it must be caught, nudge and alert.
    assert transcripts.loops == 1
    assert transcripts.caught == transcripts.loops, _explain(transcripts)
    said = transcripts.files["21_agentic-framework_94692e6b_prompt-hook-denials.jsonl"].said
    assert {(one.kind, one.detector) for one in said} == {
        ("nudge", "stop-block"),
        ("alert", "stop-block"),
    }


def test_every_shared_transcript_has_a_reviewed_label() -> None:
    labels = judge.read_labels(TRANSCRIPT_LABELS)
    assert sorted(labels) == sorted(path.name for path in _need(TRANSCRIPTS).glob("*.jsonl"))


def test_the_judge_counts_a_nudge_outside_an_episode_and_a_missed_loop() -> None:
    # The judge itself can fail: a nudge beside an episode is false, a loop without one missed.
    episode = judge.Episode("repeat-failure", "loop", 10, 14, 13)
    late = judge.Said("f.jsonl", 14, "nudge", "repeat-failure", "late")
    outside = judge.Said("f.jsonl", 15, "nudge", "repeat-failure", "outside")
    score = judge.score({"f.jsonl": [episode]}, [late, outside], ["f.jsonl"])
    assert score.line() == "caught=0/1 false_nudges=1 files=1"
    on_time = judge.Said("f.jsonl", 12, "nudge", "repeat-failure", "on time")
    tolerated = judge.Episode("same-error", "unclear", 20, 30, 30)
    alert = judge.Said("f.jsonl", 25, "alert", "same-error", "tolerated")
    stray = judge.Said("g.jsonl", 1, "alert", "cycle", "an unlabelled file")
    score = judge.score({"f.jsonl": [episode, tolerated]}, [on_time, alert, stray], ["f.jsonl"])
    assert score.line() == "caught=1/1 false_nudges=1 files=2"


def test_the_judge_command_prints_the_score_and_fails_strictly_on_a_miss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert judge.main([str(_need(REAL_LABELLED)), "--strict"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "caught=0/0 false_nudges=0 files=5"
    # A loop nobody could see (the first two calls of a healthy session) is a miss.
    labels = tmp_path / "LABELS.json"
    labels.write_text(
        '{"r15_attio_bbf59cab_v1.0.69.jsonl": {"episodes": '
        '[{"kind": "cycle", "expect": "loop", "lo": 0, "hi": 1}]}}'
    )
    corpus = str(REAL_LABELLED.parent)
    assert judge.main([str(labels), "--corpus", corpus]) == 0
    assert judge.main([str(labels), "--corpus", corpus, "--strict"]) == 1
    out = capsys.readouterr().out
    assert "r15_attio_bbf59cab_v1.0.69.jsonl: MISSED cycle 0..1" in out
    assert out.splitlines()[-1] == "caught=0/1 false_nudges=0 files=5"
