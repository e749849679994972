"""LoCoMo evidence recall: index each conversation as conversation memory, one turn per
unit, ask every question, and count how many of its evidence turns come back in the top k.

The data (CC BY-NC 4.0) is read from the path given; nothing of it ships with Lore.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from lore.api import Lore
from lore.config import Settings
from lore.embed import Embedder
from lore.errors import InvalidInput

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EVIDENCE = re.compile(r"D(\d+)\s*:\s*(\d+)")
MODES = ("hybrid", "keyword", "vector")


def load(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{path} is not a LoCoMo JSON file ({exc})") from None
    if not isinstance(data, list) or not all(
        isinstance(s, dict) and "conversation" in s and "qa" in s for s in data
    ):
        raise InvalidInput(f"{path} is not in the LoCoMo format (a list of samples with "
                           "'conversation' and 'qa')")
    return data


def session_date(text: str | None) -> str | None:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00Z'."""
    if not text:
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    return None


def index(lore: Lore, sample: dict[str, Any]) -> tuple[set[str], str | None]:
    """Store one conversation, a session per LoCoMo session, a chunk per turn."""
    sid = str(sample.get("sample_id", "conv"))
    conv = sample["conversation"]
    turn_ids: set[str] = set()
    last = None
    n = 1
    while f"session_{n}" in conv:
        date = session_date(conv.get(f"session_{n}_date_time"))
        last = date or last
        turns = []
        for t in conv[f"session_{n}"]:
            dia = str(t.get("dia_id", ""))
            text = str(t.get("text", ""))
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            turns.append((f"{sid}:{dia}", str(t.get("speaker", "")), text, date))
            turn_ids.add(dia)
        lore.conversations.add_turns(f"{sid}-s{n}", "locomo", sid, turns, per_turn=True)
        n += 1
    return turn_ids, last


def evaluate(path: Path, settings: Settings, embedder: Embedder | None = None,
             progress: Callable[[int, int], None] | None = None,
             as_of_last: bool = False) -> dict[str, Any]:
    """Run the questions; ages for memory decay count from now, as in the product, or, with
    ``as_of_last``, from each conversation's last session (as if asked right after it)."""
    samples = load(path)
    with tempfile.TemporaryDirectory(prefix="lore-locomo-") as tmp:
        s = Settings(config=settings.config.model_copy(deep=True), home=Path(tmp),
                     config_path=Path(tmp) / "config.yaml", tuning=settings.tuning)
        s.config.database = str(Path(tmp) / "lore.db")
        with Lore.open(s, embedder=embedder) as lore:
            return _run(lore, samples, progress, as_of_last)


def _run(lore: Lore, samples: list[dict[str, Any]],
         progress: Callable[[int, int], None] | None, as_of_last: bool) -> dict[str, Any]:
    recalls: dict[str, dict[str, dict[int, list[float]]]] = {
        m: {"all": defaultdict(list), **{c: defaultdict(list) for c in CATEGORIES.values()}}
        for m in MODES
    }
    dropped = questions = 0
    total = sum(len(s["qa"]) for s in samples)
    done = 0
    for sample in samples:
        turn_ids, last = index(lore, sample)
        lore.conversations.embed_pending()
        sid = str(sample.get("sample_id", "conv"))
        at = datetime.fromisoformat(last.replace("Z", "+00:00")) if last else None
        for qa in sample["qa"]:
            done += 1
            evidence = {f"D{a}:{b}" for ev in qa.get("evidence", []) for a, b in
                        EVIDENCE.findall(str(ev))}
            kept = evidence & turn_ids
            dropped += len(evidence) - len(kept)
            if not kept:
                continue
            questions += 1
            category = CATEGORIES.get(int(qa.get("category", 0)), "other")
            for mode in MODES:
                hits = lore.conversations.search(str(qa["question"]), project=sid, limit=10,
                                                 mode=mode, now_=at if as_of_last else None)
                dias = _dia_ids(lore, [h.chunk_id for h in hits], sid)
                for k in (5, 10):
                    found = len(kept & set(dias[:k])) / len(kept)
                    recalls[mode]["all"][k].append(found)
                    recalls[mode].setdefault(category, defaultdict(list))[k].append(found)
                    recalls[mode].setdefault(f"conversation:{sid}", defaultdict(list))[k].append(
                        found)
            if progress:
                progress(done, total)
    return _report(recalls, questions, dropped, lore)


def _dia_ids(lore: Lore, chunk_ids: list[int], sid: str) -> list[str]:
    uuids = lore.conversations.first_uuids(chunk_ids)
    prefix = f"{sid}:"
    return [uuids[c][len(prefix):] for c in chunk_ids if c in uuids]


def _pct(values: list[float]) -> float:
    return round(100 * sum(values) / len(values), 1) if values else 0.0


def _report(recalls: dict[str, Any], questions: int, dropped: int, lore: Lore) -> dict[str, Any]:
    def block(mode: str) -> dict[str, Any]:
        r = recalls[mode]
        return {
            "recall@5": _pct(r["all"][5]), "recall@10": _pct(r["all"][10]),
            "categories": {c: {"recall@5": _pct(r[c][5]), "recall@10": _pct(r[c][10]),
                               "questions": len(r[c][5])}
                           for c in CATEGORIES.values() if r[c][5]},
            "conversations": {key.removeprefix("conversation:"): {
                "recall@5": _pct(v[5]), "recall@10": _pct(v[10]), "questions": len(v[5])}
                for key, v in r.items() if key.startswith("conversation:")},
        }

    default = block("hybrid")
    return {
        "recall@5": default["recall@5"],
        "recall@10": default["recall@10"],
        "categories": default["categories"],
        "conversations": default["conversations"],
        "baselines": {"keyword": block("keyword"), "vector": block("vector")},
        "questions": questions,
        "dropped_evidence": dropped,
        "config": {**asdict(lore.conversations.tuning),  # the constants measured
                   "decay": lore.config.conversations.decay},
        "model": lore.configured_model(),
    }
