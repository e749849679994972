"""Fit the correction detector's weights on labelled files and report honest figures.

    python bench/train_detector.py A.jsonl [B.jsonl …]            # nested cross-validated report
    python bench/train_detector.py A.jsonl B.jsonl --write        # also ship the weights

Each file holds JSON Lines with ``text``, ``label`` (correction | preference | none),
``durable``, ``prev_agent`` and ``source.repo``. The model is a logistic regression (numpy,
no other dependency) over the cue groups of ``lore.extract.detect`` with sign constraints,
optionally the generic shapes of the words and the exchange, and optionally hashed word
n-grams with their own, stronger L2 penalty.

Every figure is cross-validated by repository: each repository's messages are scored by a
model that never saw that repository. The choice of inputs, the penalty and the threshold are
made INSIDE each outer fold, on an inner cross-validation by repository of the training part
only (nested). With several files it also trains on each file alone and scores the others
(the closest proxy for authors nobody has seen). Only weights are written; no message is.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # small matrices: threads only cost
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from lore.extract import detect as D  # noqa: E402
from lore.extract.features import BUCKETS, clean, cues, generic, hashed  # noqa: E402

ITERATIONS = 300
OUTER_FOLDS = 10
INNER_FOLDS = 4
# Candidate configurations: (generic shapes?, L2 on the n-gram buckets or None for no n-grams)
GRID: tuple[tuple[bool, float | None], ...] = (
    (False, None), (True, None), (False, 3.0), (False, 10.0), (True, 3.0), (True, 10.0))
L2_DENSE = 1.0
HASH_SCALE = 3.0
THRESHOLDS = tuple(round(t, 3) for t in np.arange(0.15, 0.851, 0.025))
CURVE = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
PRECISION_TARGET = 0.75  # the shipped threshold: the lowest reaching this precision in CV


@dataclass
class Data:
    rows: list[dict]
    dense: dict[bool, np.ndarray]   # with / without the generic shapes
    grams: np.ndarray
    y: np.ndarray
    durable_truth: np.ndarray
    durable_rule: np.ndarray       # the hand-written durable rule, given the message is positive
    weighed: np.ndarray            # passed wrappers, paste, pre-filter, gates and vetoes
    groups: np.ndarray
    files: np.ndarray


def load(paths: list[Path]) -> Data:
    rows: list[dict] = []
    files: list[str] = []
    for p in paths:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
                files.append(p.name)
    dense: dict[bool, list[list[float]]] = {True: [], False: []}
    grams = np.zeros((len(rows), BUCKETS))
    weighed, durable_rule = [], []
    for i, r in enumerate(rows):
        said, reason = D.words_of(r["text"])
        text = clean(said)
        prev = r.get("prev_agent")
        c = cues(text, prev)
        g = generic(text, prev)
        dense[False].append(D.vector(c))
        dense[True].append(D.vector(c, g))
        idx = hashed(text)
        if idx:
            grams[i, idx] = HASH_SCALE / math.sqrt(len(idx))
        weighed.append(not reason and not D.gate(text) and not D.veto(c))
        durable_rule.append(_durable(c))
    return Data(rows, {k: np.array(v) for k, v in dense.items()}, grams,
                np.array([r["label"] != "none" for r in rows]),
                np.array([r["label"] != "none" and bool(r.get("durable")) for r in rows]),
                np.array(durable_rule), np.array(weighed),
                np.array([((r.get("source") or {}).get("repo") or r.get("id", "?")).lower()
                          for r in rows]), np.array(files))


def _durable(c: dict[str, float]) -> bool:
    rule = any(k in c for k in D.GROUPS["rule"])
    reactive = any(k in c for k in D.GROUPS["reactive"]) or "redirect_after_interrupt" in c
    return (rule and not reactive) or bool(D.DURABLE_CUES & set(c)) or (
        "names_tool" in c and bool({"opens_no", "dont_do", "not_right", "i_said", "no_need"} & set(c)))


def design(data: Data, config: tuple[bool, float | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs, per-column L2 and per-column sign constraint for one configuration."""
    gen, l2_hash = config
    x = data.dense[gen]
    names = D.feature_names(gen)
    sign = np.array([1 if n in D.POSITIVE else -1 if n in D.NEGATIVE else 0 for n in names])
    lam = np.full(x.shape[1], L2_DENSE)
    if l2_hash is not None:
        x = np.hstack([x, data.grams])
        lam = np.concatenate([lam, np.full(BUCKETS, l2_hash)])
        sign = np.concatenate([sign, np.zeros(BUCKETS, dtype=int)])
    return x, lam, sign


def fit(x: np.ndarray, y: np.ndarray, lam: np.ndarray, sign: np.ndarray) -> tuple[np.ndarray, float]:
    """L2-penalised logistic regression, accelerated projected gradient (signs are kept)."""
    n, d = x.shape
    v0 = np.ones(d)
    for _ in range(12):  # power iteration for the step size
        v0 = x.T @ (x @ v0)
        v0 /= np.linalg.norm(v0) or 1.0
    step = 1.0 / (0.25 * (1.1 * float(np.linalg.norm(x @ v0)) ** 2 + n) / n + float(lam.max()) / n)
    w, b = np.zeros(d), 0.0
    vw, vb, t = w.copy(), b, 1.0
    for _ in range(ITERATIONS):
        p = 1 / (1 + np.exp(-(x @ vw + vb)))
        w_new = vw - step * (x.T @ (p - y) / n + lam * vw / n)
        w_new = np.where(sign > 0, np.maximum(w_new, 0), np.where(sign < 0, np.minimum(w_new, 0),
                                                                   w_new))
        b_new = vb - step * float((p - y).mean())
        t_new = (1 + math.sqrt(1 + 4 * t * t)) / 2
        vw = w_new + (t - 1) / t_new * (w_new - w)
        vb = b_new + (t - 1) / t_new * (b_new - b)
        w, b, t = w_new, b_new, t_new
    return w, b


def prf(truth: np.ndarray, pred: np.ndarray) -> tuple[float, float, float]:
    tp = int((truth & pred).sum())
    fp = int((~truth & pred).sum())
    fn = int((truth & ~pred).sum())
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def group_folds(groups: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    names = np.unique(groups)
    np.random.RandomState(seed).shuffle(names)
    return [np.isin(groups, names[i::k]) for i in range(min(k, len(names)))]


def pick_threshold(truth: np.ndarray, prob: np.ndarray, precision: float | None) -> float:
    """Best F1, or (with ``precision``) the lowest threshold reaching it (best F1 if none)."""
    scored = [(t, *prf(truth, prob >= t)) for t in THRESHOLDS]
    if precision is not None:
        reach = [t for t, p, r, _ in scored if p >= precision and r > 0]
        if reach:
            return min(reach)
    return max(scored, key=lambda s: (s[3], -s[0]))[0]


def train(data: Data, part: np.ndarray, configs: tuple[tuple[bool, float | None], ...] | None = None
          ) -> tuple[tuple, tuple[float, float], np.ndarray, float]:
    """Choose the configuration and thresholds (best F1; precision target) by inner CV on
    ``part``, then fit on all of it."""
    y = data.y.astype(float)
    best: tuple[float, tuple, tuple[float, float]] | None = None
    for config in configs or GRID:
        x, lam, sign = design(data, config)
        prob = np.zeros(len(y))
        for inner in group_folds(data.groups[part], INNER_FOLDS, 1):
            held = np.zeros(len(y), dtype=bool)
            held[np.flatnonzero(part)[inner]] = True
            w, b = fit(x[part & ~held], y[part & ~held], lam, sign)
            prob[held] = 1 / (1 + np.exp(-(x[held] @ w + b)))
        prob = np.where(data.weighed, prob, 0.0)
        f1 = max(prf(data.y[part], prob[part] >= t)[2] for t in THRESHOLDS)
        th = (pick_threshold(data.y[part], prob[part], None),
              pick_threshold(data.y[part], prob[part], PRECISION_TARGET))
        if best is None or f1 > best[0] + 1e-9:
            best = (f1, config, th)
    assert best is not None
    x, lam, sign = design(data, best[1])
    w, b = fit(x[part], y[part], lam, sign)
    return best[1], best[2], w, b


def score(data: Data, config: tuple, w: np.ndarray, b: float, rows: np.ndarray) -> np.ndarray:
    x, _, _ = design(data, config)
    return np.where(data.weighed[rows], 1 / (1 + np.exp(-(x[rows] @ w + b))), 0.0)


def line(name: str, truth: np.ndarray, pred: np.ndarray, data: Data, rows: np.ndarray) -> str:
    p, r, f = prf(truth, pred)
    dp, dr, df = prf(data.durable_truth[rows], pred & data.durable_rule[rows])
    return (f"| {name} | {p:.2f} | {r:.2f} | {f:.2f} | {dp:.2f} | {dr:.2f} | {df:.2f} |")


def config_name(config: tuple) -> str:
    gen, l2 = config
    return "groups" + (" + generic" if gen else "") + (f" + n-grams (L2 {l2:g})" if l2 else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("data", type=Path, nargs="+")
    ap.add_argument("--write", action="store_true", help="write src/lore/extract/detector.json")
    ap.add_argument("--inputs", choices=("groups", "all"), default="all",
                    help="'groups': only the cue groups (the simplest model); 'all': also let the\n"
                         "inner cross-validation choose generic shapes and n-grams (default)")
    args = ap.parse_args()
    global GRID
    if args.inputs == "groups":
        GRID = ((False, None),)
    data = load(args.data)
    everything = np.ones(len(data.y), dtype=bool)
    print(f"{len(data.y)} messages from {len(np.unique(data.groups))} repositories; "
          f"{int(data.y.sum())} positive, {int(data.durable_truth.sum())} durable positive; "
          f"wrappers, pastes, pre-filter, gates and vetoes set aside {int((~data.weighed).sum())}, "
          f"{int((~data.weighed & data.y).sum())} of them positive\n")
    header = ("| evaluation | P | R | F1 | durable P | durable R | durable F1 |\n"
              "|---|---|---|---|---|---|---|")

    # Nested cross-validation by repository.
    print("Nested cross-validation by repository (configuration and threshold chosen inside):")
    print(header)
    outer = group_folds(data.groups, OUTER_FOLDS, 7)
    fixed = np.zeros(len(data.y))
    preds = [np.zeros(len(data.y), dtype=bool), np.zeros(len(data.y), dtype=bool)]
    chosen: list[list[str]] = [[], []]
    for test in outer:
        config, ths, w, b = train(data, ~test)
        fixed[test] = score(data, config, w, b, test)
        for k in (0, 1):
            preds[k][test] = fixed[test] >= ths[k]
            chosen[k].append(f"{config_name(config)} @ {ths[k]:.2f}")
    for k, label in enumerate(("threshold for best inner F1",
                               f"threshold for inner precision {PRECISION_TARGET}")):
        print(line(f"all files, {label}", data.y, preds[k], data, everything))
        print(f"|   per fold: {'; '.join(chosen[k])} | | | | | | |")
    print("\nPrecision/recall curve of the same nested predictions at fixed thresholds:")
    print(header)
    for t in CURVE:
        print(line(f"threshold {t:.2f}", data.y, fixed >= t, data, everything))

    # Transfer between files: train on one file (inner CV picks everything), score the others.
    names = sorted(set(data.files))
    if len(names) > 1:
        print("\nTransfer (trained on one file only, scored on the others):")
        print(header)
        for src in names:
            part = data.files == src
            config, (th, _), w, b = train(data, part)
            rows = ~part
            prob = score(data, config, w, b, rows)
            print(line(f"{src} -> others ({config_name(config)} @ {th:.2f})", data.y[rows],
                       prob >= th, data, rows))
            print(line(f"{src} -> others, threshold 0.5", data.y[rows], prob >= 0.5, data, rows))

    # The shipped model: everything chosen by CV on all the data.
    config, (_, th), w, b = train(data, everything)
    print(f"\nshipped: {config_name(config)}, threshold {th:.2f} (lowest reaching cross-validated "
          f"precision {PRECISION_TARGET}, else best F1)")
    gen, l2 = config
    names_dense = D.feature_names(gen)
    for n, v in zip(names_dense, w[:len(names_dense)], strict=True):
        print(f"  {n:26s} {v:+.2f}")
    print(f"  {'bias':26s} {b:+.2f}")
    if args.write:
        out: dict = {"features": names_dense, "weights": [round(float(v), 4) for v in w[:len(names_dense)]],
                     "bias": round(float(b), 4), "threshold": th}
        if l2 is not None:
            out["hashed"] = {"buckets": BUCKETS, "scale": HASH_SCALE,
                             "weights": [round(float(v), 3) for v in w[len(names_dense):]]}
        out["meta"] = {"trained_on": len(data.y), "repositories": int(len(np.unique(data.groups))),
                       "configuration": config_name(config)}
        D.WEIGHTS_FILE.write_text(json.dumps(out, indent=1 if l2 is None else None) + "\n")
        D.model.cache_clear()
        print(f"wrote {D.WEIGHTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
