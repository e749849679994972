"""Fit the correction detector's weights on labelled files and report honest figures.

    python scripts/train_detector.py A.jsonl [B.jsonl …]            # nested cross-validated report
    python scripts/train_detector.py A.jsonl B.jsonl --compare      # + the alternatives that lost
    python scripts/train_detector.py A.jsonl B.jsonl --write        # also ship the weights

Each file holds JSON Lines with ``text``, ``label`` (correction | preference | none),
``durable``, ``prev_agent`` and ``source.repo``. The model is a logistic regression (numpy,
no other dependency) over the cue groups of ``lore.extract.detect`` with sign constraints,
optionally the generic shapes of the words and the exchange, and optionally hashed word
n-grams with their own, stronger L2 penalty.

Every figure is cross-validated by repository: each repository's messages are scored by a
model that never saw that repository. The choice of inputs, the penalty and the threshold are
made INSIDE each outer fold, on an inner cross-validation by repository of the training part
only (nested). With several files it also trains on each file alone and scores the others
(the closest proxy for authors nobody has seen). It also reports the hooks' pre-filter
(recall per repository, the share of negatives it passes), a precision/recall table of the
nested predictions with the positive rate per probability band (where the second opinion
should look), and the durable flag: the hand-written rule against a model learned on the
positives, nested the same way. Only weights are written; no message is.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # small matrices: threads only cost
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from lore.capture.signals import benign, might_teach, strip_wrappers  # noqa: E402
from lore.extract import detect as D  # noqa: E402
from lore.extract.features import (  # noqa: E402
    BUCKETS,
    MESSAGE_CUES,
    clean,
    cues,
    generic,
    hashed,
)

ITERATIONS = 300
OUTER_FOLDS = 10
INNER_FOLDS = 4
# Candidate configurations: (generic shapes?, L2 on the n-gram buckets or None for no n-grams)
GRID: tuple[tuple[bool, float | None], ...] = (
    (False, None), (True, None), (False, 3.0), (False, 10.0), (True, 3.0), (True, 10.0))
L2_DENSE = 1.0
HASH_SCALE = 3.0
THRESHOLDS = tuple(round(t, 3) for t in np.arange(0.15, 0.851, 0.025))
CURVE = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
UNDECIDED = (0.25, 0.75)  # a probability band with a positive rate in here is a coin toss
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
    cue_dicts: list[dict[str, float]]
    texts: list[str]


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
    weighed, durable_rule, cue_dicts, texts = [], [], [], []
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
        durable_rule.append(D.durable(c))
        cue_dicts.append(c)
        texts.append(text)
    return Data(rows, {k: np.array(v) for k, v in dense.items()}, grams,
                np.array([r["label"] != "none" for r in rows]),
                np.array([r["label"] != "none" and bool(r.get("durable")) for r in rows]),
                np.array(durable_rule), np.array(weighed),
                np.array([((r.get("source") or {}).get("repo") or r.get("id", "?")).lower()
                          for r in rows]), np.array(files), cue_dicts, texts)


Config = tuple  # (generic shapes?, L2 of the n-gram buckets or None[, L2 of per-cue weights])
CUE_NAMES = tuple(sorted(MESSAGE_CUES))


def design(data: Data, config: Config, allowed: set[str] | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs, per-column L2 and per-column sign constraint for one configuration. With
    ``allowed``, message cues outside it are dropped before the groups are formed."""
    gen, l2_hash, *rest = config
    l2_cue = rest[0] if rest else None
    if allowed is None:
        x = data.dense[gen]
    else:
        x = np.array([D.vector({k: v for k, v in c.items() if k in allowed or k not in MESSAGE_CUES})
                      for c in data.cue_dicts])
    names = D.feature_names(gen)
    sign = np.array([1 if n in D.POSITIVE else -1 if n in D.NEGATIVE else 0 for n in names])
    lam = np.full(x.shape[1], L2_DENSE)
    if l2_cue is not None:  # each cue's own weight, shrunk harder than its group's
        x = np.hstack([x, np.array([[c.get(k, 0.0) for k in CUE_NAMES] for c in data.cue_dicts])])
        lam = np.concatenate([lam, np.full(len(CUE_NAMES), l2_cue)])
        sign = np.concatenate([sign, np.zeros(len(CUE_NAMES), dtype=int)])
    if l2_hash is not None:
        x = np.hstack([x, data.grams])
        lam = np.concatenate([lam, np.full(BUCKETS, l2_hash)])
        sign = np.concatenate([sign, np.zeros(BUCKETS, dtype=int)])
    return x, lam, sign


def spread_cues(data: Data, part: np.ndarray, repositories: int) -> set[str] | None:
    """The message cues that fire on the positives of more than ``repositories`` repositories
    of ``part`` (None: no pruning)."""
    if not repositories:
        return None
    seen: dict[str, set[str]] = {}
    for i in np.flatnonzero(part & data.y):
        for k in data.cue_dicts[i]:
            seen.setdefault(k, set()).add(str(data.groups[i]))
    return {k for k in MESSAGE_CUES if len(seen.get(k, ())) > repositories}


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


def train(data: Data, part: np.ndarray, configs: tuple[Config, ...] | None = None,
          prune: int = 0) -> tuple[Config, tuple[float, float], np.ndarray, float, set[str] | None]:
    """Choose the configuration and thresholds (best F1; precision target) by inner CV on
    ``part``, then fit on all of it. With ``prune``, cues that fire on the positives of at
    most that many repositories (counted on the training part only) are left out."""
    y = data.y.astype(float)
    best: tuple[float, Config, tuple[float, float]] | None = None
    for config in configs or GRID:
        prob = np.zeros(len(y))
        for inner in group_folds(data.groups[part], INNER_FOLDS, 1):
            held = np.zeros(len(y), dtype=bool)
            held[np.flatnonzero(part)[inner]] = True
            x, lam, sign = design(data, config, spread_cues(data, part & ~held, prune))
            w, b = fit(x[part & ~held], y[part & ~held], lam, sign)
            prob[held] = 1 / (1 + np.exp(-(x[held] @ w + b)))
        prob = np.where(data.weighed, prob, 0.0)
        f1 = max(prf(data.y[part], prob[part] >= t)[2] for t in THRESHOLDS)
        th = (pick_threshold(data.y[part], prob[part], None),
              pick_threshold(data.y[part], prob[part], PRECISION_TARGET))
        if best is None or f1 > best[0] + 1e-9:
            best = (f1, config, th)
    assert best is not None
    allowed = spread_cues(data, part, prune)
    x, lam, sign = design(data, best[1], allowed)
    w, b = fit(x[part], y[part], lam, sign)
    return best[1], best[2], w, b, allowed


def score(data: Data, config: Config, w: np.ndarray, b: float, rows: np.ndarray,
          allowed: set[str] | None = None) -> np.ndarray:
    x, _, _ = design(data, config, allowed)
    return np.where(data.weighed[rows], 1 / (1 + np.exp(-(x[rows] @ w + b))), 0.0)


@dataclass
class Nested:
    prob: np.ndarray                 # every message scored by a model that never saw its repository
    best_f1: np.ndarray              # predictions at the threshold for best inner F1
    precise: np.ndarray              # … at the lowest threshold reaching the inner precision target
    chosen: tuple[list[str], list[str]]


def nested(data: Data, configs: tuple[Config, ...] | None = None, prune: int = 0) -> Nested:
    """Nested cross-validation by repository: configuration and thresholds chosen inside."""
    out = Nested(np.zeros(len(data.y)), np.zeros(len(data.y), dtype=bool),
                 np.zeros(len(data.y), dtype=bool), ([], []))
    for test in group_folds(data.groups, OUTER_FOLDS, 7):
        config, ths, w, b, allowed = train(data, ~test, configs, prune)
        out.prob[test] = score(data, config, w, b, test, allowed)
        out.best_f1[test] = out.prob[test] >= ths[0]
        out.precise[test] = out.prob[test] >= ths[1]
        for k in (0, 1):
            out.chosen[k].append(f"{config_name(config)} @ {ths[k]:.2f}")
    return out


def line(name: str, truth: np.ndarray, pred: np.ndarray, data: Data, rows: np.ndarray) -> str:
    p, r, f = prf(truth, pred)
    dp, dr, df = prf(data.durable_truth[rows], pred & data.durable_rule[rows])
    return (f"| {name} | {p:.2f} | {r:.2f} | {f:.2f} | {dp:.2f} | {dr:.2f} | {df:.2f} |")


def config_name(config: Config) -> str:
    gen, l2, *rest = config
    return ("groups" + (" + generic and exchange shapes" if gen else "")
            + (f" + per-cue weights (L2 {rest[0]:g})" if rest and rest[0] else "")
            + (f" + n-grams (L2 {l2:g})" if l2 else ""))


def prefilter_report(data: Data) -> None:
    """The hooks' pre-filter: recall per file and per repository, and the work it saves."""
    passed = np.array([might_teach(r["text"]) for r in data.rows])
    print("The hooks' pre-filter (passes whatever is not clearly benign):")
    print("| messages | positives passed | recall | negatives passed | lowest repository recall |")
    print("|---|---|---|---|---|")
    for name in [*sorted(set(data.files)), "all"]:
        rows = data.files == name if name != "all" else np.ones(len(data.y), dtype=bool)
        pos, neg = rows & data.y, rows & ~data.y
        per_repo = [float(passed[pos & (data.groups == g)].mean())
                    for g in np.unique(data.groups[pos])]
        print(f"| {name} | {int(passed[pos].sum())} of {int(pos.sum())} | "
              f"{passed[pos].mean():.3f} | {passed[neg].mean():.2f} | {min(per_repo):.2f} |")
    reasons = Counter(benign(strip_wrappers(r["text"])) or "empty"
                      for r, p in zip(data.rows, passed, strict=True) if not p)
    print("set aside: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common()) + "\n")


def curve_report(data: Data, result: Nested, threshold: float) -> float:
    """Precision/recall of the nested predictions at fixed thresholds, the positive rate per
    probability band, and the second-opinion band that covers the undecided bands around
    ``threshold``. Returns that band."""
    print("\nPrecision/recall of the same nested predictions at fixed thresholds:")
    print("| threshold | flagged | P | R | F1 | durable P | durable R | durable F1 |")
    print("|---|---|---|---|---|---|---|---|")
    for t in CURVE:
        pred = result.prob >= t
        p, r, f = prf(data.y, pred)
        dp, dr, df = prf(data.durable_truth, pred & data.durable_rule)
        print(f"| {t:.2f} | {int(pred.sum())} | {p:.2f} | {r:.2f} | {f:.2f} | {dp:.2f} | {dr:.2f} "
              f"| {df:.2f} |")
    print("\nPositive rate of the weighed messages per probability band (nested):")
    print("| probability | messages | positive | rate |")
    print("|---|---|---|---|")
    edges = np.round(np.arange(0, 1.01, 0.1), 2)
    rates = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        inside = data.weighed & (result.prob >= lo) & ((result.prob < hi) if hi < 1 else True)
        n, k = int(inside.sum()), int((inside & data.y).sum())
        rates.append((lo, hi, k / n if n else 0.0))
        print(f"| {lo:.1f}–{hi:.1f} | {n} | {k} | {k / n if n else 0:.2f} |")
    # The undecided bands: the run of bands around the threshold whose positive rate lies
    # between UNDECIDED[0] and UNDECIDED[1]; the second opinion covers them.
    around = [i for i, (lo, hi, _) in enumerate(rates) if lo <= threshold < hi or hi == threshold]
    lo_i = hi_i = around[0] if around else 5
    while lo_i > 0 and UNDECIDED[0] <= rates[lo_i - 1][2] <= UNDECIDED[1]:
        lo_i -= 1
    while hi_i < len(rates) - 1 and UNDECIDED[0] <= rates[hi_i + 1][2] <= UNDECIDED[1]:
        hi_i += 1
    band = round(max(threshold - rates[lo_i][0], rates[hi_i][1] - threshold), 2)
    inside = data.weighed & (abs(result.prob - threshold) <= band)
    print(f"second-opinion band: ±{band:.2f} around {threshold:.2f} (bands with a positive rate "
          f"{UNDECIDED[0]}–{UNDECIDED[1]}): {int(inside.sum())} of {int(data.weighed.sum())} weighed "
          f"messages ({inside.sum() / data.weighed.sum():.0%}), {int((inside & data.y).sum())} of "
          f"the {int(data.y.sum())} positives")
    return band


def durable_features(c: dict[str, float], text: str) -> list[float]:
    """Inputs of the learned durable flag: rule cues, tool choice, generality (no path, line
    number or "this/that" opening), one-off repair cues, project words, length."""
    low = text.lower()
    return [
        float(any(k in c for k in D.GROUPS["rule"])),
        float(bool({"use_instead", "instead_of", "rather"} & set(c))),
        c.get("names_tool", 0.0),
        float(bool(_PATH.search(low))),
        float(bool(_LINE_NUMBER.search(low))),
        float(bool(re.match(r"\W*(?:this|that|it|these|here|the)\b", low))),
        float(bool({"you_did", "undo", "regression", "missed", "redo", "why_did_you"} & set(c))),
        float(bool(re.search(r"\b(?:project|repo|repository|codebase|our|we)\b", low))),
        float(bool(re.match(r"\W*(?:please\s+)?(?:never|always|don'?t|do\s+not)\b", low))),
        min(math.log1p(len(text.split())) / 5.0, 1.5),
    ]


_PATH = re.compile(r"\b[\w.-]+/[\w./-]+|\b\w+\.(?:py|js|ts|tsx|jsx|md|json|ya?ml|css|html|go|rs|"
                   r"java|sql|sh)\b")
_LINE_NUMBER = re.compile(r":\d+|\bline\s+\d+")


def durable_report(data: Data, result: Nested) -> None:
    """The hand-written durable rule against a logistic model learned on the positives of the
    training repositories (threshold for best inner F1), nested like the detector."""
    x = np.array([durable_features(c, t) for c, t in zip(data.cue_dicts, data.texts, strict=True)])
    truth = data.durable_truth
    learned = np.zeros(len(truth), dtype=bool)
    lam, sign = np.full(x.shape[1], L2_DENSE), np.zeros(x.shape[1], dtype=int)
    for test in group_folds(data.groups, OUTER_FOLDS, 7):
        part = ~test & data.y
        inner_prob = np.zeros(len(truth))
        for inner in group_folds(data.groups[~test], INNER_FOLDS, 1):
            held = np.zeros(len(truth), dtype=bool)
            held[np.flatnonzero(~test)[inner]] = True
            w, b = fit(x[part & ~held], truth[part & ~held].astype(float), lam, sign)
            inner_prob[held] = 1 / (1 + np.exp(-(x[held] @ w + b)))
        th = pick_threshold(truth[part], inner_prob[part], None)
        w, b = fit(x[part], truth[part].astype(float), lam, sign)
        learned[test] = 1 / (1 + np.exp(-(x[test] @ w + b))) >= th
    print("\nDurable (P / R / F1): among the true positives, and end to end with the nested "
          "detections:")
    print("| durable flag | given a true positive | at best-F1 thresholds | at the precision "
          "thresholds |")
    print("|---|---|---|---|")
    for name, flag in (("hand-written rule (shipped)", data.durable_rule),
                       ("learned (logistic, nested)", learned),
                       ("every positive durable", np.ones(len(truth), dtype=bool))):
        cells = [prf(truth[data.y], flag[data.y]), prf(truth, result.best_f1 & flag),
                 prf(truth, result.precise & flag)]
        print(f"| {name} | " + " | ".join(" / ".join(f"{v:.2f}" for v in c) for c in cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("data", type=Path, nargs="+")
    ap.add_argument("--write", action="store_true", help="write src/lore/extract/detector.json")
    ap.add_argument("--inputs", choices=("groups", "all"), default="groups",
                    help="'groups': only the cue groups (the simplest model; default); 'all': also\n"
                         "let the inner cross-validation choose generic shapes and n-grams")
    ap.add_argument("--compare", action="store_true",
                    help="also score the alternatives one by one (generic and exchange shapes,\n"
                         "per-cue weights, n-grams, cues pruned to those of 3+ repositories)")
    args = ap.parse_args()
    grid = GRID if args.inputs == "all" else ((False, None),)
    data = load(args.data)
    everything = np.ones(len(data.y), dtype=bool)
    print(f"{len(data.y)} messages from {len(np.unique(data.groups))} repositories; "
          f"{int(data.y.sum())} positive, {int(data.durable_truth.sum())} durable positive; "
          f"wrappers, pastes, pre-filter, gates and vetoes set aside {int((~data.weighed).sum())}, "
          f"{int((~data.weighed & data.y).sum())} of them positive\n")
    prefilter_report(data)
    header = ("| evaluation | P | R | F1 | durable P | durable R | durable F1 |\n"
              "|---|---|---|---|---|---|---|")

    print("Nested cross-validation by repository (configuration and threshold chosen inside):")
    print(header)
    result = nested(data, grid)
    for k, (label, pred) in enumerate((("threshold for best inner F1", result.best_f1),
                                       (f"threshold for inner precision {PRECISION_TARGET}",
                                        result.precise))):
        print(line(f"all files, {label}", data.y, pred, data, everything))
        print(f"|   per fold: {'; '.join(result.chosen[k])} | | | | | | |")
    if args.compare:
        for configs, prune, name in (
                (((True, None),), 0, "groups + generic and exchange shapes"),
                (((False, None, 10.0),), 0, "groups + per-cue weights (L2 10)"),
                (((False, 10.0),), 0, "groups + n-grams (L2 10)"),
                (((False, None),), 2, "groups, cues of 1–2 repositories pruned per fold")):
            other = nested(data, configs, prune)
            print(line(f"{name}, best inner F1", data.y, other.best_f1, data, everything))
            print(line(f"{name}, inner precision {PRECISION_TARGET}", data.y, other.precise, data,
                       everything))

    # Transfer between files: train on one file (inner CV picks everything), score the others.
    names = sorted(set(data.files))
    if len(names) > 1:
        print("\nTransfer (trained on one file only, scored on the others):")
        print(header)
        for src in names:
            part = data.files == src
            config, (th, _), w, b, _ = train(data, part, grid)
            rows = ~part
            prob = score(data, config, w, b, rows)
            print(line(f"{src} -> others ({config_name(config)} @ {th:.2f})", data.y[rows],
                       prob >= th, data, rows))
            print(line(f"{src} -> others, threshold 0.5", data.y[rows], prob >= 0.5, data, rows))

    # The shipped model: everything chosen by CV on all the data.
    config, (_, th), w, b, _ = train(data, everything, grid)
    curve_report(data, result, th)
    durable_report(data, result)
    print(f"\nshipped: {config_name(config)}, threshold {th:.2f} (lowest reaching cross-validated "
          f"precision {PRECISION_TARGET}, else best F1)")
    gen, l2, *_ = config
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
