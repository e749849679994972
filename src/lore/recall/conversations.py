"""Search of past conversations: BM25 over chunks and their context, cosine over chunk
vectors, a bonus from the best candidate of the chunk's session, a bonus for the speaker a
query names, a prior for the chunk's length, a penalty for a chunk that ends by asking, and
memory decay.
docs/conversations.md has the formula."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from lore.embed import prefetch
from lore.errors import InvalidInput, NotFound
from lore.ids import parse_time
from lore.recall.snippet import snippet
from lore.recall.vectors import ChunkIndex, MemoryIndex
from lore.store import ConversationStore
from lore.tuning import Bench, constant

_CLOSING = " \t\n)\"'"


def asks(tail: str) -> bool:
    """Whether a chunk's text (its last characters) ends with a question mark, past closing
    quotes, brackets and white space."""
    return tail.rstrip(_CLOSING).endswith("?")


@dataclass(frozen=True, slots=True)
class ConversationHit:
    chunk_id: int
    session_id: str
    project: str | None
    date: str | None
    speakers: str
    snippet: str
    score: float
    parts: dict[str, Any]

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        out = {"chunk_id": self.chunk_id, "session_id": self.session_id, "project": self.project,
               "date": self.date, "speakers": self.speakers, "snippet": self.snippet,
               "score": round(self.score, 6)}
        if explain:
            out["explain"] = self.parts
        return out


# Chosen on the LoCoMo development half, each family on a grid (bench/locomo/explore.py), the
# session term and the priors on the turn leave-one-conversation-out (bench/locomo/loco.py);
# the keyword bound at scale.
_LOCOMO = Bench("bench/locomo/explore.py",
                "docs/benchmarks.md#Conversation memory: retrieval quality on LoCoMo")
_LOCO = Bench("bench/locomo/loco.py", "docs/benchmarks.md#Session evidence, chosen "
              "leave-one-conversation-out (`bench/locomo/loco.py`)")
_PRIORS = Bench("bench/locomo/loco.py", "docs/benchmarks.md#Priors on the turn: its length and "
                "whether it asks (`bench/locomo/loco.py`)")
_RERANK = Bench("bench/locomo/rerank.py", "docs/benchmarks.md#Re-ranking by a language model "
                 "(opt-in, `bench/locomo/rerank.py`)")
_SCALE = Bench("bench/scale_bench.py",
               "docs/benchmarks.md#Search through the product (`bench/scale_bench.py`)")


@dataclass(frozen=True)
class ConversationTuning:
    """Conversation search's constants (lore.tuning); a measurement varies them by their former
    config keys, ``conversations.session_weight`` and so on."""

    candidates: int = constant(100, ge=1, le=10000, by=_LOCOMO)  # each list's depth before fusion
    keyword_weight: float = constant(1.0, ge=0, by=_LOCOMO)  # × BM25 / best BM25 of the query
    vector_weight: float = constant(2.0, ge=0, by=_LOCOMO)  # × cosine (all-MiniLM-L6-v2 range)
    text_weight: float = constant(1.0, ge=0, by=_LOCOMO)  # BM25 column weights
    date_weight: float = constant(1.0, ge=0, by=_LOCOMO)
    context_weight: float = constant(0.3, ge=0, by=_LOCOMO)
    # neighbouring turns kept (and embedded) on each side of a chunk, when transcripts are read
    context_turns: int = constant(2, ge=0, le=10, by=_LOCOMO)
    named_speaker_bonus: float = constant(0.1, ge=0, by=_LOCOMO)
    # + session_weight × the best relevance among the candidates of the chunk's session: the
    # turns of the session that answers best come forward together (0: off)
    session_weight: float = constant(0.5, ge=0, by=_LOCO)
    keyword_max_postings: int = constant(2000, ge=100, by=_SCALE)
    # + length_weight × ln(1 + the chunk's words, at most length_cap_words): a turn of a few
    # words ("Thanks!", "Wow, cool") rarely holds what a question asks, and past the cap a
    # longer chunk (a pasted log) gains no more. Hybrid search only (0: off).
    length_weight: float = constant(0.3, ge=0, by=_PRIORS)
    length_cap_words: int = constant(80, ge=1, by=_PRIORS)
    # − question_penalty for a chunk whose text ends with a question mark: "How was the trip?"
    # shares the question's words without holding the answer. Hybrid search only (0: off).
    question_penalty: float = constant(0.5, ge=0, by=_PRIORS)
    decay_weight: float = constant(0.3, ge=0, le=1, by=_LOCOMO)
    decay_scale_days: float = constant(90.0, gt=0, by=_LOCOMO)
    # With re-ranking on (conversations.rerank), the model reads this many of the best
    # candidates: the search's recall@40 on LoCoMo is 93.8 (@30 92.7, @60 95.4), at about
    # 60 input tokens a LoCoMo turn.
    rerank_candidates: int = constant(40, ge=2, le=100, by=_RERANK)


CONVERSATIONS = ConversationTuning()


def length_prior(words: int, tuning: ConversationTuning = CONVERSATIONS) -> float:
    """What a chunk of ``words`` words adds to its hybrid score."""
    return tuning.length_weight * math.log1p(min(max(words, 0), tuning.length_cap_words))


def search(store: ConversationStore, tuning: ConversationTuning, query: str,
           embed_query: Callable[[str], Any] | None, memory: MemoryIndex,
           index: ChunkIndex | None = None, *,
           project: str | None, limit: int, min_score: float, decay: bool, mode: str,
           at: datetime) -> list[ConversationHit]:
    """Chunks ranked by normalised BM25 + weighted cosine, the speaker bonus and decay.
    ``embed_query`` is None when nothing was embedded yet (keyword ranking only)."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1 (got {limit})")
    depth = max(tuning.candidates, limit)
    speakers = store.scope_speakers(project)
    terms, named = query_terms(query, speakers)
    if embed_query is not None and mode == "hybrid" and query.strip():
        embed_query = prefetch(embed_query, strip_names(query, speakers))
    keyword: list[tuple[int, float]] = []
    if mode in ("hybrid", "keyword"):
        weights = (tuning.text_weight, 0.0, tuning.date_weight, tuning.context_weight)
        keyword = store.keyword_search(terms, weights, depth, project, tuning.keyword_max_postings)
    vector: list[tuple[int, float]] = []
    if mode in ("hybrid", "vector") and embed_query is not None and query.strip():
        qvec = np.asarray(embed_query(strip_names(query, speakers)), dtype=np.float32)
        # A server's database answers itself (pgvector); a file has its index beside it.
        found = store.nearest(qvec.tobytes(), depth, project)
        if found is None and index is not None:
            found = index.search(store, qvec, depth, project)
        if found is None:  # no index (a small database) or not usable: exact, in memory
            memory.sync(store)
            allowed = store.chunk_ids(project) if project else None
            found = memory.search(qvec, depth, allowed)
        vector = found
    return fuse(store, tuning, query, keyword, vector, named, limit, min_score, decay, mode, at)


def fuse(store: ConversationStore, tuning: ConversationTuning, query: str,
         keyword: list[tuple[int, float]], vector: list[tuple[int, float]], named: str | None,
         limit: int, min_score: float, decay: bool, mode: str,
         at: datetime) -> list[ConversationHit]:
    # FTS5's bm25 is negative, better is lower: divide by the best to get 0..1.
    best_bm25 = min((s for _, s in keyword), default=-1.0) or -1.0
    kscore = {cid: s / best_bm25 for cid, s in keyword}
    krank = {cid: i + 1 for i, (cid, _) in enumerate(keyword)}
    vscore = dict(vector)
    vrank = {cid: i + 1 for i, (cid, _) in enumerate(vector)}
    kw = tuning.keyword_weight if mode != "vector" else 0.0
    vw = tuning.vector_weight if mode != "keyword" else 0.0
    ids = list(dict.fromkeys([c for c, _ in keyword] + [c for c, _ in vector]))
    meta = store.chunk_meta(ids)  # what scoring needs; the text only for the results shown
    relevances = {cid: kw * kscore.get(cid, 0.0) + vw * vscore.get(cid, 0.0)
                  for cid in ids if cid in meta}
    session_best = best_per_session(relevances, {cid: meta[cid][2] for cid in relevances})
    scored = []
    for cid, relevance in relevances.items():
        ended_at, speakers, session_id, words, tail = meta[cid]
        session_bonus = tuning.session_weight * session_best[session_id]
        speaker_bonus = (tuning.named_speaker_bonus
                         if named and mode == "hybrid" and named in speakers.split()
                         else 0.0)
        length_bonus = length_prior(words, tuning) if mode == "hybrid" else 0.0
        question_penalty = tuning.question_penalty if mode == "hybrid" and asks(tail) else 0.0
        bonus = 0.0
        if decay and ended_at:
            age = max((at - parse_time(ended_at)).total_seconds() / 86400, 0.0)
            bonus = tuning.decay_weight * math.exp(-age / tuning.decay_scale_days)
        total = relevance + session_bonus + speaker_bonus + length_bonus - question_penalty + bonus
        if total < min_score:
            continue
        parts: dict[str, Any] = {"keyword_rank": krank.get(cid), "bm25_normalised": kscore.get(cid),
                 "vector_rank": vrank.get(cid), "similarity": vscore.get(cid),
                 "relevance": round(relevance, 6), "session_bonus": round(session_bonus, 6),
                 "speaker_bonus": speaker_bonus, "length_bonus": round(length_bonus, 6),
                 "question_penalty": question_penalty,
                 "decay_bonus": round(bonus, 6)}
        scored.append((total, cid, parts))
    scored.sort(key=lambda t: (-t[0], t[1]))
    scored = scored[:limit]
    rows = store.chunk_rows([cid for _, cid, _ in scored])
    scored = [t for t in scored if t[1] in rows]  # a chunk removed meanwhile
    if mode == "hybrid":
        # A chunk still waiting in the embedding backlog is ranked by its keywords alone.
        unscored = [cid for _, cid, _ in scored if cid not in vscore]
        embedded = {cid for cid, _ in store.vectors_for(unscored)} if unscored else set()
        for _, cid, parts in scored:
            if cid not in vscore and cid not in embedded:
                parts["vector"] = "not embedded yet: ranked by keywords only"
    return [
        ConversationHit(cid, rows[cid]["session_id"], rows[cid]["project"],
                        rows[cid]["ended_at"], rows[cid]["speakers"],
                        snippet(rows[cid]["text"], query, 240), total, parts)
        for total, cid, parts in scored
    ]


def best_per_session(relevance: dict[int, float], session_of: dict[int, str]) -> dict[str, float]:
    """The best relevance among the candidates of each session (never below 0)."""
    best: dict[str, float] = {}
    for cid, value in relevance.items():
        sid = session_of[cid]
        best[sid] = max(best.get(sid, 0.0), value)
    return best


def turns(store: ConversationStore, chunk_id: int, before: int = 3,
          after: int = 3) -> dict[str, Any]:
    """A chunk's turns with the turns around it, to read a hit in its conversation."""
    rows = store.chunk_rows([chunk_id])
    if chunk_id not in rows:
        raise NotFound(f"no conversation chunk {chunk_id}; `lore recall conversations` finds them")
    row = rows[chunk_id]
    return {"chunk_id": chunk_id, "session_id": row["session_id"], "project": row["project"],
            "session": store.session(row["session_id"]),
            "messages": store.neighbours(chunk_id, before, after)}


# English function words, question framing and contractions: in a conversation they match
# nearly every turn (the LoCoMo ablation: +1.8 recall@5 over the lesson search's shorter list).
STOP = frozenset("""
a an and are as at be by do does for from how i in is it of on or that the this to was what when
where which why with you your we our can should about above after again against all am any because
been before being below between both but could did doing down during each few further had has
have having he her here hers herself him himself his its itself just me more most my myself no nor
not now off once only other ours ourselves out over own same she so some such than their theirs
them themselves then there these they those through too under until up very were while who whom
whose will would yours yourself yourselves s t don isn wasn didn doesn ve ll re d m o y also into
ever
""".split())
_WORDS = re.compile(r"\w+", re.UNICODE)
_TOKENS = re.compile(r"[\w']+|[^\w\s]", re.UNICODE)


def first_names(speakers: Sequence[str]) -> dict[str, str]:
    return {s.split()[0].lower(): s for s in speakers if s.strip()}


def query_terms(query: str, speakers: Sequence[str]) -> tuple[list[str], str | None]:
    """Quoted FTS5 terms without stop words or speaker names, and the one speaker the query
    names (None when it names none or several)."""
    names = first_names(speakers)
    words = [w.lower() for w in _WORDS.findall(query)]
    named = {names[w] for w in words if w in names}
    kept = [w for w in words if w not in STOP and w not in names]
    if not kept:
        kept = [w for w in words if w not in names] or words
    terms = ['"' + w.replace('"', '""') + '"' for w in dict.fromkeys(kept)]
    return terms, (named.pop() if len(named) == 1 else None)


def strip_names(query: str, speakers: Sequence[str]) -> str:
    """The query without the speakers' first names (or their possessives): a name in a
    question pulls the embedding towards the turns where the *other* speaker says it."""
    names = first_names(speakers)
    if not names:
        return query
    return " ".join(t for t in _TOKENS.findall(query) if t.lower().split("'")[0] not in names)


