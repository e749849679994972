"""LoCoMo evidence recall: index each conversation as conversation memory, one turn per
unit, ask every question, and count how many of its evidence turns come back in the top k.

The data (CC BY-NC 4.0) is read from the path given; nothing of it ships with Lore.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.api import Lore
from lore.config import Settings
from lore.embed import Embedder
from lore.errors import ConfigError, InvalidInput
from lore.ids import parse_time

if TYPE_CHECKING:
    from lore.llm.rerank import RerankRequest

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
             as_of_last: bool = False, rerank: bool = False) -> dict[str, Any]:
    """Run the questions; ages for memory decay count from now, as in the product, or, with
    ``as_of_last``, from each conversation's last session (as if asked right after it). With
    ``rerank``, the configured language model also re-orders each default search (one call a
    question), reported beside it."""
    samples = load(path)
    with opened(settings, embedder) as lore:
        if rerank and not settings.llm_provider:
            raise ConfigError("--rerank needs a language model: set llm.provider in config.yaml "
                              "(see docs/llm.md)")
        return _run(lore, samples, progress, as_of_last, rerank)


@contextmanager
def opened(settings: Settings, embedder: Embedder | None) -> Iterator[Lore]:
    """Lore on a temporary database with ``settings``' configuration."""
    with tempfile.TemporaryDirectory(prefix="lore-locomo-") as tmp:
        s = Settings(config=settings.config.model_copy(deep=True), home=Path(tmp),
                     config_path=Path(tmp) / "config.yaml", tuning=settings.tuning)
        s.config.database = str(Path(tmp) / "lore.db")
        with Lore.open(s, embedder=embedder) as lore:
            if settings.llm_provider:  # the model's calls are logged and budgeted in the user's home
                from lore.llm import open_provider

                cfg, home = settings.config.llm, settings.home
                lore.conversations.use_provider(lambda: open_provider(cfg, home))
            yield lore


@dataclass(frozen=True, slots=True)
class Question:
    sid: str
    number: int  # 1-based over the file
    text: str
    evidence: frozenset[str]
    category: str
    at: datetime | None  # the conversation's last session


def each_question(lore: Lore, samples: list[dict[str, Any]], counts: dict[str, int]) -> Iterator[Question]:
    """Each question with evidence, its conversation indexed and embedded first. ``counts``
    gets the evidence ids dropped (they name no turn) and the questions skipped."""
    number = 0
    for sample in samples:
        turn_ids, last = index(lore, sample)
        lore.conversations.embed_pending()
        sid = str(sample.get("sample_id", "conv"))
        at = parse_time(last) if last else None
        for qa in sample["qa"]:
            number += 1
            evidence = {f"D{a}:{b}" for ev in qa.get("evidence", []) for a, b in
                        EVIDENCE.findall(str(ev))}
            kept = evidence & turn_ids
            counts["dropped"] += len(evidence) - len(kept)
            if not kept:
                counts["skipped"] += 1
                continue
            yield Question(sid, number, str(qa["question"]), frozenset(kept),
                           CATEGORIES.get(int(qa.get("category", 0)), "other"), at)


def _empty() -> dict[str, dict[int, list[float]]]:
    return {"all": defaultdict(list), **{c: defaultdict(list) for c in CATEGORIES.values()}}


def _record(recalls: dict[str, dict[int, list[float]]], q: Question, dias: list[str]) -> None:
    for k in (5, 10):
        found = len(q.evidence & set(dias[:k])) / len(q.evidence)
        recalls["all"][k].append(found)
        recalls.setdefault(q.category, defaultdict(list))[k].append(found)
        recalls.setdefault(f"conversation:{q.sid}", defaultdict(list))[k].append(found)


def _run(lore: Lore, samples: list[dict[str, Any]],
         progress: Callable[[int, int], None] | None, as_of_last: bool,
         rerank: bool = False) -> dict[str, Any]:
    recalls = {m: _empty() for m in (*MODES, *(("reranked",) if rerank else ()))}
    counts = {"dropped": 0, "skipped": 0}
    total = sum(len(s["qa"]) for s in samples)
    questions = failed = 0
    for q in each_question(lore, samples, counts):
        questions += 1
        now = q.at if as_of_last else None
        for mode in MODES:
            hits = lore.conversations.search(q.text, project=q.sid, limit=10, mode=mode, now_=now)
            _record(recalls[mode], q, dia_ids(lore, [h.chunk_id for h in hits], q.sid))
        if rerank:
            found = lore.conversations.find(q.text, project=q.sid, limit=10, rerank=True, now_=now)
            failed += found.rerank_error is not None
            _record(recalls["reranked"], q, dia_ids(lore, [h.chunk_id for h in found.hits], q.sid))
        if progress:
            progress(q.number, total)
    out = _report(recalls, questions, counts["dropped"], lore)
    if rerank:
        out["reranked"] = {**_block(recalls["reranked"]), "failed": failed}
    return out


def write_rerank_prompts(path: Path, settings: Settings, folder: Path,
                         embedder: Embedder | None = None,
                         progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write the re-ranking request of every question's default search, exactly as the
    product sends it, to ``folder/NNNN-<conversation>.md`` (the folder new or empty). Nothing
    in a request says which turns are evidence."""
    from lore.measure.requests import REPLY_RULE, request_folder, write_request

    samples = load(path)
    request_folder(folder)
    written = tokens = 0
    with opened(settings, embedder) as lore:
        total = sum(len(s["qa"]) for s in samples)
        for q in each_question(lore, samples, {"dropped": 0, "skipped": 0}):
            _, rr = _rerank_request(lore, q)
            write_request(folder, _name(q), rr.text())
            written += 1
            tokens += rr.input_tokens
            if progress:
                progress(q.number, total)
    return {"folder": str(folder), "requests": written, "input_tokens": tokens,
            "reply_rule": REPLY_RULE}


def rerank_figures(path: Path, settings: Settings, replies: Path,
                   embedder: Embedder | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   per_question: bool = False) -> dict[str, Any]:
    """The default search against the same search re-ordered by the replies in ``replies``
    (one file per request, named as the request). A missing or unreadable reply keeps the
    search's order for its question and is counted. ``per_question`` adds each question's
    recall both ways (for a paired comparison)."""
    from lore.llm.base import estimate_tokens
    from lore.llm.rerank import order, parse

    if not replies.is_dir():
        raise InvalidInput(f"{replies} is not a folder of replies")
    samples = load(path)
    recalls = {"default": _empty(), "reranked": _empty()}
    missing: list[str] = []
    unreadable: list[str] = []
    tokens_in = tokens_out = questions = 0
    counts = {"dropped": 0, "skipped": 0}
    rows: list[dict[str, Any]] = []
    with opened(settings, embedder) as lore:
        total = sum(len(s["qa"]) for s in samples)
        for q in each_question(lore, samples, counts):
            questions += 1
            hits, rr = _rerank_request(lore, q)
            ids = [h.chunk_id for h in hits]
            _record(recalls["default"], q, dia_ids(lore, ids[:10], q.sid))
            file = replies / _name(q)
            ranked = ids
            if not file.is_file():
                missing.append(file.name)
            else:
                text = file.read_text(encoding="utf-8", errors="replace")
                tokens_in += rr.input_tokens
                tokens_out += estimate_tokens(text)
                try:
                    ranked = order(ids, parse(text, rr))
                except ValueError:
                    unreadable.append(file.name)
            _record(recalls["reranked"], q, dia_ids(lore, ranked[:10], q.sid))
            if per_question:
                rows.append({"question": q.number, "conversation": q.sid, "category": q.category,
                             **{f"{way}@{k}": recalls[way]["all"][k][-1]
                                for way in ("default", "reranked") for k in (5, 10)}})
            if progress:
                progress(q.number, total)
    if questions and len(missing) == questions:
        raise InvalidInput(f"{replies} holds no reply named after a request (e.g. {missing[0]})")
    answered = questions - len(missing)
    return {
        "questions": questions, "dropped_evidence": counts["dropped"],
        "default": _block(recalls["default"]), "reranked": _block(recalls["reranked"]),
        "replies_read": answered, "replies_missing": missing, "replies_unreadable": unreadable,
        "tokens": {"approximation": "4 characters a token",
                   "input_per_request": round(tokens_in / answered) if answered else 0,
                   "output_per_request": round(tokens_out / answered) if answered else 0},
        "rerank_candidates": lore.conversations.tuning.rerank_candidates,
        **({"per_question": rows} if per_question else {}),
    }


def _rerank_request(lore: Lore, q: Question) -> tuple[list[Any], RerankRequest]:
    """The default search's best candidates for ``q`` and the request that re-ranks them to 10."""
    hits = lore.conversations.search(q.text, project=q.sid,
                                     limit=lore.conversations.tuning.rerank_candidates)
    return hits, lore.conversations.rerank_request(q.text, hits, 10)


def _name(q: Question) -> str:
    return f"{q.number:04d}-{re.sub(r'[^A-Za-z0-9_-]', '_', q.sid)}.md"


def dia_ids(lore: Lore, chunk_ids: list[int], sid: str) -> list[str]:
    uuids = lore.conversations.first_uuids(chunk_ids)
    prefix = f"{sid}:"
    return [uuids[c][len(prefix):] for c in chunk_ids if c in uuids]


def _pct(values: list[float]) -> float:
    return round(100 * sum(values) / len(values), 1) if values else 0.0


def _block(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "recall@5": _pct(r["all"][5]), "recall@10": _pct(r["all"][10]),
        "categories": {c: {"recall@5": _pct(r[c][5]), "recall@10": _pct(r[c][10]),
                           "questions": len(r[c][5])}
                       for c in CATEGORIES.values() if r[c][5]},
        "conversations": {key.removeprefix("conversation:"): {
            "recall@5": _pct(v[5]), "recall@10": _pct(v[10]), "questions": len(v[5])}
            for key, v in r.items() if key.startswith("conversation:")},
    }


def _report(recalls: dict[str, Any], questions: int, dropped: int, lore: Lore) -> dict[str, Any]:
    return {
        **_block(recalls["hybrid"]),
        "baselines": {"keyword": _block(recalls["keyword"]), "vector": _block(recalls["vector"])},
        "questions": questions,
        "dropped_evidence": dropped,
        "config": {**asdict(lore.conversations.tuning),  # the constants measured
                   "decay": lore.config.conversations.decay},
        "model": lore.admin.configured_model(),
    }
