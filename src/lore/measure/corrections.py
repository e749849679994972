"""Correction detection scored on labelled messages (JSON Lines: text, label, durable, prev_agent).

Several files may be given; they are scored together.

Positive = ``correction`` or ``preference``. The full detector (:mod:`lore.extract.detect`, the
worker's) is scored by default; ``prefilter`` scores the hooks' pre-filter instead, which
should over-fire but miss nothing the detector catches. The data stays where it is: the file
path is an argument, nothing of it ships with Lore.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from lore.capture.signals import benign, might_teach, strip_wrappers
from lore.errors import InvalidInput
from lore.extract.detect import Detection, detect, model

LABELS = ("correction", "preference", "none")
DETECTORS = ("full", "prefilter")


def load(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {path}") from None
    except IsADirectoryError:
        raise InvalidInput(f"{path} is a directory, not a JSON Lines file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise InvalidInput(f"line {n} of {path} is not JSON") from None
        if not isinstance(row, dict) or row.get("label") not in LABELS or not isinstance(
                row.get("text"), str):
            raise InvalidInput(f"line {n} of {path} needs 'text' and a 'label' in "
                               f"{', '.join(LABELS)}")
        prev = row.get("prev_agent")
        if prev is not None and not isinstance(prev, str):
            raise InvalidInput(f"line {n} of {path}: 'prev_agent' must be text or null")
        rows.append(row)
    if not rows:
        raise InvalidInput(f"{path} holds no labelled messages")
    return rows


def scores(truth: list[bool], predicted: list[bool]) -> dict[str, float]:
    tp = sum(t and p for t, p in zip(truth, predicted, strict=True))
    fp = sum(p and not t for t, p in zip(truth, predicted, strict=True))
    fn = sum(t and not p for t, p in zip(truth, predicted, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3)}


def prefilter_figures(rows: list[dict[str, Any]], truth: list[bool]) -> dict[str, Any]:
    """What the hooks' pre-filter passes: recall of the positives (overall and per repository,
    when rows name one in ``source.repo``), the share of negatives it passes (what is left for
    the worker) and why the others were set aside."""
    passed = [might_teach(r["text"]) for r in rows]
    negatives = [p for p, t in zip(passed, truth, strict=True) if not t]
    per_repo: dict[str, list[int]] = {}
    for r, p, t in zip(rows, passed, truth, strict=True):
        repo = (r.get("source") or {}).get("repo") if isinstance(r.get("source"), dict) else None
        if t and isinstance(repo, str):
            seen = per_repo.setdefault(repo.lower(), [0, 0])
            seen[0] += 1
            seen[1] += p
    set_aside = Counter(benign(strip_wrappers(r["text"])) or "empty"
                        for r, p in zip(rows, passed, strict=True) if not p)
    out: dict[str, Any] = {
        "recall": round(sum(p for p, t in zip(passed, truth, strict=True) if t) / max(sum(truth), 1), 3),
        "negatives_passed": round(sum(negatives) / len(negatives), 3) if negatives else None,
        "set_aside": dict(set_aside.most_common()),
    }
    if per_repo:
        recalls = sorted(k / n for n, k in per_repo.values())
        out["repositories"] = len(recalls)
        out["lowest_repository_recall"] = round(recalls[0], 3)
        out["repositories_with_a_miss"] = sum(1 for v in recalls if v < 1)
    return out


def evaluate(paths: Path | list[Path], detector: str = "full",
             threshold: float | None = None) -> dict[str, Any]:
    if detector not in DETECTORS:
        raise InvalidInput(f"unknown detector '{detector}' (choose from {', '.join(DETECTORS)})")
    rows = [row for path in ([paths] if isinstance(paths, Path) else paths) for row in load(path)]
    started = time.perf_counter()
    if detector == "full":
        found = [detect(r["text"], r.get("prev_agent"), threshold=threshold) for r in rows]
    else:
        passed = [might_teach(r["text"]) for r in rows]
        found = [Detection("correction" if p else "none", p, None, 0.0, ()) for p in passed]
    took = time.perf_counter() - started
    predicted = [d.positive for d in found]
    truth = [r["label"] != "none" for r in rows]
    durable_truth = [r["label"] != "none" and bool(r.get("durable")) for r in rows]
    durable_pred = [d.positive and d.durable for d in found]
    confusion = Counter((r["label"], d.label) for r, d in zip(rows, found, strict=True))
    errors = [{"id": r.get("id"), "label": r["label"], "predicted": d.label,
               "probability": round(d.probability, 3), "cues": list(d.cues), "reason": d.reason,
               "text": r["text"][:300]}
              for r, d in zip(rows, found, strict=True) if d.positive != (r["label"] != "none")]
    m = model()
    prefilter = prefilter_figures(rows, truth)
    name = (f"the worker's detector ({m.meta.get('configuration', 'cue groups')}, threshold "
            f"{threshold if threshold is not None else m.threshold})" if detector == "full"
            else "the hooks' pre-filter")
    return {
        **scores(truth, predicted),
        "durable": scores(durable_truth, durable_pred),
        "messages": len(rows),
        "labels": dict(Counter(r["label"] for r in rows)),
        "confusion": {f"{label} -> {pred}": n for (label, pred), n in sorted(confusion.items())},
        "detector": name,
        "messages_per_second": round(len(rows) / took) if took > 0 else None,
        "prefilter": prefilter,
        "errors": errors,
    }
