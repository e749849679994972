"""What waits for a person's review, read without the learning pipeline.

Listing the review queue needs the store only: no model, no detector, no numpy. The lessons
are read in batches (:meth:`~lore.store.protocol.LessonStore.get_many`), so a thousand
waiting rules cost a few queries, not a few per rule. :class:`lore.core.learner.Learner`
records the decisions (``review``); these functions say what a decision is and what waits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lore.models import Lesson
from lore.store import Store

LIVE = ("candidate", "proposed", "active")
_ORDER = {"proposed": 0, "active": 1, "candidate": 2}


def proposable(meta: dict[str, Any]) -> bool:
    """May a learned rule leave the candidates? (A rule stored before the gate existed may.)"""
    return (not meta.get("gate") or len(set(meta.get("sessions") or [])) >= 2
            or bool(meta.get("confirmed")) or bool(meta.get("forced")))


def decided(meta: dict[str, Any]) -> bool:
    """A person decided this rule's status: reviewed, added by hand or set by hand."""
    return bool(meta.get("reviewed") or meta.get("by_hand"))


def why_candidate(lesson: Lesson) -> str:
    meta = lesson.metadata.get("learning") or {}
    if lesson.status == "candidate" and meta.get("gate") and not proposable(meta):
        return str(meta["gate"])
    return ""


def review_item(lesson: Lesson, meta: dict[str, Any], conflicts: Sequence[str]) -> dict[str, Any]:
    """One rule waiting for review, with its evidence verbatim."""
    return {"id": lesson.id, "title": lesson.title, "rule": lesson.content, "status": lesson.status,
            "score": lesson.score, "occurrences": int(meta.get("occurrences", 1)),
            "sessions": len(set(meta.get("sessions") or [])),
            "scope": "global" if lesson.project is None else lesson.project,
            "file_types": list(lesson.file_types), "conflicts": list(conflicts),
            "why_candidate": why_candidate(lesson), "recorrections": meta.get("recorrections", 0),
            "evidence": [{"said": e.quote, "agent_turn": e.context, "session": e.session_id,
                          "date": e.observed_at, "project": lesson.project, "source": e.source}
                         for e in lesson.evidence]}


def waits(lesson: Lesson) -> bool:
    """Nobody decided on this learned rule yet (deferred ones wait again once seen again).
    An active one waits only while in conflict, which :func:`waiting` checks."""
    meta = lesson.metadata.get("learning")
    if meta is None or decided(meta) or lesson.status not in LIVE:
        return False
    occurrences = int(meta.get("occurrences", 1))
    return not (meta.get("deferred_at") and occurrences <= int(meta.get("deferred_seen", 0)))


def waiting(store: Store, project: str | None = None, *, all_projects: bool = True,
            limit: int = 100) -> list[dict[str, Any]]:
    """What waits for a person: candidates, proposed rules and rules in conflict that
    nobody reviewed (deferred ones return when seen again), with their evidence; rules in
    conflict first, then proposed, active and candidate ones, by score."""
    ids = store.corrections.preferences(project, all_projects=all_projects, file_type=None,
                                        statuses=LIVE, limit=max(limit * 5, 500))
    chosen: list[tuple[Lesson, dict[str, Any], list[str]]] = []
    step = min(max(limit + limit // 4, 20), 500)  # most ids wait: read about as many as asked
    for start in range(0, len(ids), step):
        batch = [x for x in store.get_many(ids[start : start + step]) if waits(x)]
        named = {c for x in batch for c in x.metadata["learning"].get("conflicts", [])}
        live = {x.id for x in store.get_many(sorted(named)) if x.status in LIVE}
        for lesson in batch:
            meta = lesson.metadata["learning"]
            conflicts = [c for c in meta.get("conflicts", []) if c in live]
            if lesson.status == "active" and not conflicts:
                continue
            chosen.append((lesson, meta, conflicts))
            if len(chosen) >= limit:
                break
        if len(chosen) >= limit:
            break
    out = [review_item(lesson, meta, conflicts) for lesson, meta, conflicts in chosen]
    return sorted(out, key=lambda r: (not r["conflicts"], _ORDER.get(r["status"], 3),
                                      -(r["score"] or 0)))


def decisions(store: Store) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every learned rule a person decided on (or deferred) and that waits no more: its
    review item and the decision (action, at, reason, via), oldest decision first."""
    ids = store.corrections.learned_rule_ids()
    shown = store.visible_ids(ids)  # another user's personal rules are theirs to decide
    ids = [i for i in ids if i in shown]
    out = []
    for start in range(0, len(ids), 500):
        for lesson in store.get_many(ids[start : start + 500]):
            meta = lesson.metadata.get("learning") or {}
            review = meta.get("review")
            if not isinstance(review, dict) or (review.get("action") == "defer"
                                                and waits(lesson)):
                continue
            out.append((review_item(lesson, meta, []), review))
    return sorted(out, key=lambda pair: str(pair[1].get("at") or ""))
