"""Hybrid ranking: vector KNN + FTS5 BM25, fused by reciprocal rank fusion, plus bonuses.

score = (rrf / best_possible_rrf) + confidence bonus + usage bonus + recency bonus,
multiplied by the anti-context factor when anti-contexts demote instead of exclude.

* rrf = w_vec / (k + vector rank) + w_kw / (k + keyword rank). Dividing by the best
  possible value puts relevance on 0..1, so the bonuses (0.05 each by default) nudge the
  order without swamping it.
* confidence bonus = confidence_bonus × ordinal / highest ordinal.
* usage bonus = usage_bonus × min(usage_count / usage_saturation, 1).
* recency bonus (off by default: ``search.recency.enabled``) = recency_weight ×
  exp(−age / recency_scale_days).

The weights are tuning constants (:class:`SearchTuning`), not settings.
* a lesson an active lesson supersedes (an edge ``supersedes`` to it) is multiplied by
  ``SUPERSEDED_FACTOR`` and, when its successor is among the results, ranked right below it:
  the graph's word on which one holds now outranks the wording's similarity to the query.
  ``include_superseded=False`` leaves such lessons out instead.

Filters are applied before ranking, inside both candidate queries. The vector stage
is in :mod:`lore.recall.vectors`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

import numpy as np

from lore.ids import parse_time
from lore.models import Filters, ScoreParts, SearchResult
from lore.recall import vectors
from lore.recall.snippet import snippet
from lore.store import LessonStore, fts_terms
from lore.tuning import Bench, constant

if TYPE_CHECKING:
    from lore.config_models import SearchConfig

Mode = Literal["hybrid", "keyword", "vector"]
SUPERSEDED_FACTOR = 0.5

# The lesson-search figures of docs/benchmarks.md: latency and the vector stage's recall@10
# at these values (bench/search_bench.py), the index bounds at 100,000 lessons and more
# (bench/scale_bench.py).
_QUALITY = Bench("bench/search_bench.py", "docs/benchmarks.md#Results (2026-11-23)")
_SCALE = Bench("bench/scale_bench.py", "docs/benchmarks.md#What the numbers decided")


@dataclass(frozen=True)
class SearchTuning:
    """Lesson search's constants (lore.tuning); a measurement varies them by their former config
    keys, ``search.rrf_k`` and so on."""

    vector_weight: float = constant(0.7, ge=0, by=_QUALITY)  # RRF weight of the vector list
    fts_weight: float = constant(0.3, ge=0, by=_QUALITY)  # RRF weight of the keyword list
    rrf_k: int = constant(60, ge=1, by=_QUALITY)
    candidates: int = constant(100, ge=1, le=10000, by=_QUALITY)  # each list's depth before fusion
    min_similarity: float = constant(0.2, ge=-1, le=1, by=_QUALITY)  # vector hits below: dropped
    confidence_bonus: float = constant(0.05, ge=0, le=1, by=_QUALITY)
    usage_bonus: float = constant(0.05, ge=0, le=1, by=_QUALITY)
    usage_saturation: int = constant(100, ge=1, by=_QUALITY)  # uses at which the bonus is full
    title_weight: float = constant(3.0, ge=0, by=_QUALITY)  # BM25 column weights
    tags_weight: float = constant(2.0, ge=0, by=_QUALITY)
    content_weight: float = constant(1.0, ge=0, by=_QUALITY)
    anti_context_factor: float = constant(0.5, ge=0, le=1, by=_QUALITY)  # when demoting
    recency_weight: float = constant(0.1, ge=0, le=1, by=_QUALITY)
    recency_scale_days: float = constant(90.0, gt=0, by=_QUALITY)
    # auto: in memory for a warm process or up to memory_below lessons, else the store's index
    vector_index: Literal["auto", "memory", "sqlite-vec"] = constant("auto", by=_SCALE)
    memory_below: int = constant(20000, ge=0, by=_SCALE)
    exact_below: int = constant(1000, ge=0, by=_SCALE)  # a filtered set this small: scored exactly
    keyword_max_postings: int = constant(2500, ge=100, by=_SCALE)  # the most frequent words go first


SEARCH = SearchTuning()


def search(
    store: LessonStore,
    query: str,
    filters: Filters,
    limit: int,
    cfg: SearchConfig,
    embed_query: Callable[[str], np.ndarray] | None,
    memory: vectors.MemoryIndex,
    mode: Mode = "hybrid",
    include_superseded: bool = True,
    tuning: SearchTuning = SEARCH,
) -> list[SearchResult]:
    t = tuning
    exclude = cfg.anti_context == "exclude"
    depth = max(t.candidates, limit)

    # A filter on status alone keeps nearly everything: cheaper to apply after ranking.
    narrow = filters != Filters(statuses=filters.statuses)
    keyword: list[tuple[int, float]] = []
    if mode in ("hybrid", "keyword"):
        terms = fts_terms(query)
        if terms:
            weights = (t.title_weight, t.tags_weight, t.content_weight)
            keyword = store.keyword_search(terms, weights, depth, filters, t.keyword_max_postings,
                                           narrow, anti_contexts_exclude=exclude)

    vector: list[tuple[int, float]] = []
    if mode in ("hybrid", "vector") and embed_query is not None and query.strip():
        qvec = embed_query(query)
        vector = vectors.candidates(
            store, memory, qvec, depth, filters, exclude, mode=t.vector_index,
            memory_below=t.memory_below, exact_below=t.exact_below, narrow=narrow,
        )
        vector = [(s, sim) for s, sim in vector if sim >= t.min_similarity]

    return fuse(store, query, keyword, vector, filters, limit, cfg, mode, include_superseded, t)


def below_successors(scored: list[tuple[float, int, ScoreParts]],
                     successors: dict[int, set[int]]) -> list[tuple[float, int, ScoreParts]]:
    """Best score first (ties: the older lesson first), then every superseded lesson moved
    right below the last of its successors in the list when it stood above it."""
    order = sorted(scored, key=lambda t: (-t[0], t[1]))
    for _ in range(len(order)):  # a chain A > B > C settles in at most len passes
        moved = False
        place = {seq: i for i, (_, seq, _) in enumerate(order)}
        for i, item in enumerate(order):
            after = [place[n] for n in successors.get(item[1], ()) if n in place]
            if after and max(after) > i:
                order.insert(max(after), order.pop(i))
                moved = True
                break
        if not moved:
            break
    return order


def fuse(
    store: LessonStore,
    query: str,
    keyword: list[tuple[int, float]],
    vector: list[tuple[int, float]],
    filters: Filters,
    limit: int,
    cfg: SearchConfig,
    mode: Mode,
    include_superseded: bool = True,
    tuning: SearchTuning = SEARCH,
) -> list[SearchResult]:
    t = tuning
    wv = t.vector_weight if mode != "keyword" else 0.0
    wk = t.fts_weight if mode != "vector" else 0.0
    if mode == "vector":
        wv = wv or 1.0
    if mode == "keyword":
        wk = wk or 1.0
    best = (wv + wk) / (t.rrf_k + 1) or 1.0
    vrank = {seq: (i + 1, sim) for i, (seq, sim) in enumerate(vector)}
    krank = {seq: (i + 1, s) for i, (seq, s) in enumerate(keyword)}
    seqs = list(dict.fromkeys([s for s, _ in vector] + [s for s, _ in keyword]))
    if not seqs:
        return []
    rows = store.brief(seqs)
    max_ordinal = store.max_confidence_ordinal()
    demoted = (
        store.anti_context_hits(seqs, filters.contexts)
        if cfg.anti_context == "demote" and filters.contexts
        else set()
    )
    successors = store.successors(seqs)
    if not include_superseded:
        seqs = [s for s in seqs if s not in successors]
    now = datetime.now(UTC)
    scored: list[tuple[float, int, ScoreParts]] = []
    for seq in seqs:
        row = rows.get(seq)
        if row is None:  # deleted between the candidate query and now
            continue
        vr, sim = vrank.get(seq, (None, None))
        kr, bm = krank.get(seq, (None, None))
        rrf = (wv / (t.rrf_k + vr) if vr else 0.0) + (wk / (t.rrf_k + kr) if kr else 0.0)
        relevance = rrf / best
        conf = t.confidence_bonus * row["ordinal"] / max_ordinal
        usage = t.usage_bonus * min(row["usage_count"] / t.usage_saturation, 1.0)
        recency = 0.0
        if cfg.recency.enabled:
            age_days = (now - parse_time(row["updated_at"])).total_seconds() / 86400
            recency = t.recency_weight * math.exp(-max(age_days, 0.0) / t.recency_scale_days)
        factor = t.anti_context_factor if seq in demoted else 1.0
        if seq in successors:
            factor *= SUPERSEDED_FACTOR
        total = (relevance + conf + usage + recency) * factor
        parts = ScoreParts(vr, sim, kr, bm, rrf, relevance, conf, usage, recency, factor, total)
        scored.append((total, seq, parts))
    scored = below_successors(scored, successors)
    best_rows = scored[:limit]
    contents = store.contents([seq for _, seq, _ in best_rows])  # only for the snippets shown
    return [
        SearchResult(
            id=rows[seq]["id"], title=rows[seq]["title"], snippet=snippet(contents[seq], query),
            score=total, kind=rows[seq]["kind"], confidence=rows[seq]["confidence"], parts=parts,
        )
        for total, seq, parts in best_rows
    ]
