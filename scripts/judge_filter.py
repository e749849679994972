"""Choose the detector's filter threshold for the judge: the highest probability threshold at
which the judge still sees nearly every positive message, cross-validated by repository.

    python scripts/judge_filter.py A.jsonl [B.jsonl …]

With a language model configured, the detector no longer decides what is a lesson: it only
decides which messages the judge reads. A message under the filter threshold is never judged,
so the threshold is set for recall, not precision. Every figure is nested and grouped by
repository: in each outer fold the detector is fitted on the other repositories (the
shipped configuration: cue groups) and the threshold is chosen on an inner cross-validation
of that training part only (the highest threshold whose inner recall reaches the target),
then the held-out repositories are scored with both. The report gives, per file and overall,
the recall of the positives and the share of all messages passed to the judge; the shipped
threshold is the one chosen the same way on all the data (printed last).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import train_detector as T  # the module beside this script

TARGET = 0.995  # inner recall aimed at; the outer (held-out) recall must stay at 0.97 or more
GRID = tuple(round(t, 3) for t in np.arange(0.005, 0.301, 0.005))
CONFIG = (False, None)  # the shipped detector's configuration (cue groups)


def highest(truth: np.ndarray, prob: np.ndarray, target: float) -> float:
    """The highest threshold passing at least ``target`` of the positives (the lowest if none)."""
    ok = [t for t in GRID if (prob[truth] >= t).mean() >= target]
    return max(ok) if ok else GRID[0]


def inner_threshold(data: T.Data, part: np.ndarray) -> float:
    prob = np.zeros(len(data.y))
    y = data.y.astype(float)
    for inner in T.group_folds(data.groups[part], T.INNER_FOLDS, 1):
        held = np.zeros(len(y), dtype=bool)
        held[np.flatnonzero(part)[inner]] = True
        x, lam, sign = T.design(data, CONFIG)
        w, b = T.fit(x[part & ~held], y[part & ~held], lam, sign)
        prob[held] = T.score(data, CONFIG, w, b, held)
    return highest(data.y[part], prob[part], TARGET)


def main() -> int:
    paths = [Path(p) for p in sys.argv[1:]]
    if not paths:
        print(__doc__)
        return 2
    data = T.load(paths)
    y = data.y.astype(float)
    passed = np.zeros(len(y), dtype=bool)
    chosen = []
    for test in T.group_folds(data.groups, T.OUTER_FOLDS, 7):
        th = inner_threshold(data, ~test)
        x, lam, sign = T.design(data, CONFIG)
        w, b = T.fit(x[~test], y[~test], lam, sign)
        passed[test] = T.score(data, CONFIG, w, b, test) >= th
        chosen.append(th)
    print(f"{len(y)} messages from {len(np.unique(data.groups))} repositories, {int(data.y.sum())} "
          f"positive; inner recall target {TARGET}; thresholds chosen per fold: "
          + ", ".join(f"{t:.3f}" for t in chosen))
    print("| file | messages | positives | positives passed | recall | messages passed |")
    print("|---|---|---|---|---|---|")
    for name in [*sorted(set(data.files)), "all"]:
        rows = data.files == name if name != "all" else np.ones(len(y), dtype=bool)
        pos = rows & data.y
        print(f"| {name} | {int(rows.sum())} | {int(pos.sum())} | {int(passed[pos].sum())} | "
              f"{passed[pos].mean():.3f} | {passed[rows].mean():.2f} |")
    missed = [data.texts[i][:120] for i in np.flatnonzero(data.y & ~passed)]
    print("missed: " + " || ".join(missed))
    everything = np.ones(len(y), dtype=bool)
    print(f"shipped filter threshold (chosen the same way on all the data): "
          f"{inner_threshold(data, everything):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
