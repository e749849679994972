"""Fit the correction detector's weights on a labelled file and report honest figures.

    python bench/train_detector.py PATH/corrections-dev.jsonl            # report only
    python bench/train_detector.py PATH/corrections-dev.jsonl --write    # also ship the weights

The file holds JSON Lines with ``text``, ``label`` (correction | preference | none),
``durable``, ``prev_agent`` and ``source.repo``. The model is a logistic regression over the
cue groups of ``lore.extract.detect`` with sign constraints and an L2 penalty (numpy, no other
dependency). Figures come from leave-one-repository-out cross-validation: every message is
scored by a model that never saw its author. Only the weights are written; no message is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from lore.extract import detect as D
from lore.extract.features import clean, cues

L2 = 0.3
ITERATIONS = 4000
STEP = 0.5


def fit(x: np.ndarray, y: np.ndarray, sign: np.ndarray) -> tuple[np.ndarray, float]:
    n, d = x.shape
    w, b = np.zeros(d), 0.0
    for _ in range(ITERATIONS):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        g = p - y
        w -= STEP * (x.T @ g / n + L2 * w / n)
        b -= STEP * g.mean()
        w = np.where(sign > 0, np.maximum(w, 0), np.where(sign < 0, np.minimum(w, 0), w))
    return w, b


def prf(truth: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    tp = int((truth & pred).sum())
    fp = int((~truth & pred).sum())
    fn = int((truth & ~pred).sum())
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3),
            "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--write", action="store_true", help="write src/lore/extract/detector.json")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    names = D.feature_names()
    sign = np.array([1 if n in D.POSITIVE else -1 if n in D.NEGATIVE else 0 for n in names])
    found = [cues(clean(r["text"]), r.get("prev_agent")) for r in rows]
    x = np.array([D.vector(c) for c in found])
    y = np.array([r["label"] != "none" for r in rows])
    groups = np.array([(r.get("source") or {}).get("repo") or r.get("id", "?") for r in rows])
    # The detector never weighs what its gates set aside: train and score the same way.
    weighed = np.array([not D.gate(clean(r["text"])) and not D.veto(c)
                        for r, c in zip(rows, found, strict=True)])
    print(f"gates set aside {int((~weighed).sum())} messages, "
          f"{int((~weighed & y).sum())} of them positive")

    held_out = np.zeros(len(rows))
    for g in np.unique(groups):
        test = groups == g
        train = ~test  # all messages: the set-aside ones teach the negative weights
        w, b = fit(x[train], y[train].astype(float), sign)
        held_out[test] = np.where(weighed[test], 1 / (1 + np.exp(-(x[test] @ w + b))), 0.0)
    print(f"{len(rows)} messages from {len(np.unique(groups))} repositories; "
          f"{int(y.sum())} positive")
    print("leave-one-repository-out cross-validation (positive = correction or preference):")
    best = (0.0, 0.5)
    for t in (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6):
        s = prf(y, held_out >= t)
        print(f"  threshold {t:.2f}: P {s['precision']:.3f}  R {s['recall']:.3f}  F1 {s['f1']:.3f}")
        best = max(best, (s["f1"], t))
    w, b = fit(x, y.astype(float), sign)
    threshold = best[1]
    full = np.where(weighed, 1 / (1 + np.exp(-(x @ w + b))), 0.0)
    print(f"chosen threshold {threshold:.2f} (best cross-validated F1 {best[0]:.3f}); "
          f"on the training file itself: {prf(y, full >= threshold)}")
    for n, v in zip(names, w, strict=True):
        print(f"  {n:26s} {v:+.2f}")
    print(f"  {'bias':26s} {b:+.2f}")
    if args.write:
        out = {"features": names, "weights": [round(float(v), 4) for v in w],
               "bias": round(float(b), 4), "threshold": threshold,
               "meta": {"trained_on": len(rows), "repositories": int(len(np.unique(groups))),
                        "cv_f1": best[0], "l2": L2}}
        D.WEIGHTS_FILE.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {D.WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
