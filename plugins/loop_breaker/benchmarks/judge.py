"""Scores loop-breaker on labelled sessions: `caught=C/L false_nudges=F files=N` (see
`loop_breaker.judge`). Without arguments it scores the shared labelled set beside the repository
(`../shared/corpus/real-labelled/LABELS.json`).

    python plugins/loop_breaker/benchmarks/judge.py [LABELS.json] [--corpus DIR] [-v] [--strict]
"""

from __future__ import annotations

import sys
from pathlib import Path

from loop_breaker.judge import main

SHARED_LABELS = (
    Path(__file__).resolve().parents[3].parent
    / "shared"
    / "corpus"
    / "real-labelled"
    / "LABELS.json"
)

if __name__ == "__main__":
    sys.exit(main(default_labels=SHARED_LABELS))
