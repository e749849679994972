"""Correction detection scored on labelled messages (JSON Lines: text, label, durable, prev_agent).

Positive = ``correction`` or ``preference``; the detector scored is the one the hooks use
(`lore.capture.hooks.looks_like_correction`). The data stays where it is: the file path is
an argument, nothing of it ships with Lore.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lore.capture.signals import looks_like_correction
from lore.errors import InvalidInput

LABELS = ("correction", "preference", "none")


def load(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {path}") from None
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


def evaluate(path: Path, detector: Callable[[str], bool] = looks_like_correction) -> dict[str, Any]:
    rows = load(path)
    predicted = [bool(detector(r["text"])) for r in rows]
    truth = [r["label"] != "none" for r in rows]
    durable = [r["label"] != "none" and bool(r.get("durable")) for r in rows]
    confusion = Counter((r["label"], "positive" if p else "none") for r, p in zip(rows, predicted,
                                                                                  strict=True))
    errors = [{"id": r.get("id"), "label": r["label"], "predicted": p, "text": r["text"][:300]}
              for r, p, t in zip(rows, predicted, truth, strict=True) if p != t]
    return {
        **scores(truth, predicted),
        "durable": scores(durable, predicted),
        "messages": len(rows),
        "labels": dict(Counter(r["label"] for r in rows)),
        "confusion": {f"{label} -> {pred}": n for (label, pred), n in sorted(confusion.items())},
        "detector": "the hooks' quick check (lore.capture.signals)",
        "errors": errors,
    }
