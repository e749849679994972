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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.capture.signals import benign, might_teach, strip_wrappers
from lore.errors import InvalidInput
from lore.extract.detect import FILTER_THRESHOLD, Detection, detect, model
from lore.llm.base import CHARS_PER_TOKEN
from lore.measure.requests import file_stem

if TYPE_CHECKING:
    from lore.llm.judge import Batch

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


# ---- the judge, measured on the product's own requests ----------------------------------

def sessions(rows: list[dict[str, Any]]) -> list[tuple[str, list[int]]]:
    """Rows grouped into sessions (one ``source`` repository and path), in file order."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        src: dict[str, Any] = r["source"] if isinstance(r.get("source"), dict) else {}
        key = (str(src.get("repo") or r.get("id") or i), str(src.get("path") or ""))
        groups.setdefault(key, []).append(i)
    return [(f"{repo} {path}".strip(), idx) for (repo, path), idx in groups.items()]


@dataclass
class JudgeRun:
    rows: list[dict[str, Any]]
    found: list[Detection]
    requests: list[tuple[str, Batch]]   # (file name without extension, batch)
    candidates: int


def judge_requests(paths: list[Path], filter_threshold: float | None = None,
                   max_input_tokens: int | None = None) -> JudgeRun:
    """Every request the product would send for these labelled files: per session, the
    messages the detector passes at the filter threshold, each with the agent turn before it."""
    from lore.config import LLMConfig
    from lore.llm.judge import Candidate, batches

    rows = [row for path in paths for row in load(path)]
    cut = FILTER_THRESHOLD if filter_threshold is None else filter_threshold
    tokens = LLMConfig().max_input_tokens if max_input_tokens is None else max_input_tokens
    found = [detect(r["text"], r.get("prev_agent")) for r in rows]
    requests: list[tuple[str, Batch]] = []
    candidates = 0
    for name, idx in sessions(rows):
        chosen = [Candidate(str(i), strip_wrappers(rows[i]["text"]), rows[i].get("prev_agent"))
                  for i in idx if found[i].probability >= cut]
        candidates += len(chosen)
        parts = batches(chosen, max_input_tokens=tokens) if chosen else []
        for k, batch in enumerate(parts, 1):
            suffix = f"-part{k}" if len(parts) > 1 else ""
            requests.append((f"{len(requests) + 1:03d}-{file_stem(name, 'session')}{suffix}", batch))
    return JudgeRun(rows, found, requests, candidates)


def write_judge_prompts(paths: list[Path], folder: Path,
                        filter_threshold: float | None = None) -> dict[str, Any]:
    """Write each request to ``folder/<name>.md`` (system part, then user part). The folder
    must be new or empty: stale requests would mix with the new ones."""
    from lore.measure.requests import REPLY_RULE, request_folder, write_request

    run = judge_requests(paths, filter_threshold)
    request_folder(folder)
    for name, batch in run.requests:
        write_request(folder, f"{name}.md", batch.text())
    return {"folder": str(folder), "requests": len(run.requests), "messages": len(run.rows),
            "messages_judged": run.candidates,
            "input_tokens": sum(b.input_tokens for _, b in run.requests),
            "reply_rule": REPLY_RULE}


def judge_figures(paths: list[Path], replies: Path, filter_threshold: float | None = None) -> dict[str, Any]:
    """Detector alone against detector + judge, the judge's answers read from ``replies``
    (one file per request, named as the request). A missing or unreadable reply leaves its
    messages unjudged (counted as not lessons) and is reported."""
    from lore.llm.base import estimate_tokens
    from lore.llm.judge import parse

    if not replies.is_dir():
        raise InvalidInput(f"{replies} is not a folder of replies")
    run = judge_requests(paths, filter_threshold)
    judged: dict[int, tuple[bool, bool]] = {}
    missing_files, unreadable, invented, unanswered, invalid = [], [], 0, 0, 0
    tokens_in = tokens_out = read_messages = 0
    verdicts: dict[int, Any] = {}
    why: dict[int, str] = {}
    for name, batch in run.requests:
        file = replies / f"{name}.md"
        if not file.is_file():
            missing_files.append(name)
            continue
        text = file.read_text(encoding="utf-8", errors="replace")
        tokens_in += batch.input_tokens
        tokens_out += estimate_tokens(text)
        read_messages += len(batch.keys)
        try:
            got = parse(text, batch)
        except ValueError:
            unreadable.append(name)
            continue
        invented += len(got.invented)
        for key in got.invented:
            why[int(key)] = "quote not in the message"
        for key in got.missing:
            why[int(key)] = "not answered"
        unanswered += len(got.missing)
        invalid += got.invalid
        for v in got.verdicts:
            judged[int(v.key)] = (v.positive, v.positive and v.durable)
            verdicts[int(v.key)] = v
    if run.requests and len(missing_files) == len(run.requests):
        raise InvalidInput(f"{replies} holds no reply named after a request (e.g. "
                           f"{run.requests[0][0]}.md)")
    rows, found = run.rows, run.found
    truth = [r["label"] != "none" for r in rows]
    durable_truth = [t and bool(r.get("durable")) for t, r in zip(truth, rows, strict=True)]
    pred = [judged.get(i, (False, False))[0] for i in range(len(rows))]
    dpred = [judged.get(i, (False, False))[1] for i in range(len(rows))]
    answered = len(run.requests) - len(missing_files) - len(unreadable)
    cut = FILTER_THRESHOLD if filter_threshold is None else filter_threshold
    return {
        "messages": len(rows),
        "detector": {**scores(truth, [d.positive for d in found]),
                     "durable": scores(durable_truth, [d.positive and d.durable for d in found])},
        "detector_and_judge": {**scores(truth, pred), "durable": scores(durable_truth, dpred)},
        "filter_threshold": cut,
        "messages_judged": run.candidates,
        "positives_reaching_the_judge": round(
            sum(t and d.probability >= cut for t, d in zip(truth, found, strict=True))
            / max(sum(truth), 1), 3),
        "requests": len(run.requests),
        "replies_read": answered,
        "replies_missing": missing_files,
        "replies_unreadable": unreadable,
        "items_with_invented_quotes": invented,
        "messages_unanswered": unanswered,
        "items_invalid": invalid,
        "errors": [{"id": r.get("id"), "label": r["label"], "durable": bool(r.get("durable")),
                    "judged": verdicts[i].label if i in verdicts else why.get(i, (
                        "below the filter" if found[i].probability < cut else "no reply")),
                    "text": r["text"][:300]}
                   for i, r in enumerate(rows) if pred[i] != truth[i]],
        "rules": [{"id": rows[i].get("id"), "text": rows[i]["text"][:300], "rule": v.rule}
                  for i, v in sorted(verdicts.items()) if v.positive and v.durable],
        "tokens": {"approximation": f"{CHARS_PER_TOKEN} characters a token",
                   "input_per_judged_message": round(tokens_in / max(read_messages, 1), 1),
                   "output_per_judged_message": round(tokens_out / max(read_messages, 1), 1),
                   "input_per_session": round(tokens_in / max(answered + len(unreadable), 1)),
                   "input_total": tokens_in, "output_total": tokens_out},
    }
