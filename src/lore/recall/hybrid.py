"""Hybrid ranking: vector KNN + FTS5 BM25, fused by reciprocal rank fusion, plus bonuses.

score = (rrf / best_possible_rrf) + confidence bonus + usage bonus + recency bonus,
multiplied by the anti-context factor when anti-contexts demote instead of exclude.

* rrf = w_vec / (k + vector rank) + w_kw / (k + keyword rank). Dividing by the best
  possible value puts relevance on 0..1, so the bonuses (0.05 each by default) nudge the
  order without swamping it.
* confidence bonus = confidence_bonus × ordinal / highest ordinal.
* usage bonus = usage_bonus × min(usage_count / usage_saturation, 1).
* recency bonus (off by default) = weight × exp(−age / scale).
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
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

import numpy as np

from lore.ids import parse_time
from lore.models import Filters, ScoreParts, SearchResult
from lore.recall import vectors
from lore.recall.snippet import snippet
from lore.store import LessonStore, fts_terms

if TYPE_CHECKING:
    from lore.config_models import SearchConfig

Mode = Literal["hybrid", "keyword", "vector"]
SUPERSEDED_FACTOR = 0.5


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
) -> list[SearchResult]:
    where, params = store.filter_sql(filters, anti_contexts_exclude=cfg.anti_context == "exclude")
    depth = max(cfg.candidates, limit)

    # A filter on status alone keeps nearly everything: cheaper to apply after ranking.
    narrow = filters != Filters(statuses=filters.statuses)
    keyword: list[tuple[int, float]] = []
    if mode in ("hybrid", "keyword"):
        terms = fts_terms(query)
        if terms:
            weights = (cfg.title_weight, cfg.tags_weight, cfg.content_weight)
            keyword = store.keyword_search(terms, weights, depth, where, params,
                                           cfg.keyword_max_postings, narrow)

    vector: list[tuple[int, float]] = []
    if mode in ("hybrid", "vector") and embed_query is not None and query.strip():
        qvec = embed_query(query)
        vector = vectors.candidates(
            store, memory, qvec, depth, where, params, mode=cfg.vector_index,
            memory_below=cfg.memory_below, exact_below=cfg.exact_below, narrow=narrow,
        )
        vector = [(s, sim) for s, sim in vector if sim >= cfg.min_similarity]

    return fuse(store, query, keyword, vector, filters, limit, cfg, mode, include_superseded)


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
) -> list[SearchResult]:
    wv = cfg.vector_weight if mode != "keyword" else 0.0
    wk = cfg.fts_weight if mode != "vector" else 0.0
    if mode == "vector":
        wv = wv or 1.0
    if mode == "keyword":
        wk = wk or 1.0
    best = (wv + wk) / (cfg.rrf_k + 1) or 1.0
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
        rrf = (wv / (cfg.rrf_k + vr) if vr else 0.0) + (wk / (cfg.rrf_k + kr) if kr else 0.0)
        relevance = rrf / best
        conf = cfg.confidence_bonus * row["ordinal"] / max_ordinal
        usage = cfg.usage_bonus * min(row["usage_count"] / cfg.usage_saturation, 1.0)
        recency = 0.0
        if cfg.recency.enabled:
            age_days = (now - parse_time(row["updated_at"])).total_seconds() / 86400
            recency = cfg.recency.weight * math.exp(-max(age_days, 0.0) / cfg.recency.scale_days)
        factor = cfg.anti_context_factor if seq in demoted else 1.0
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
