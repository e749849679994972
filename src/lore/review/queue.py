"""What waits for a person's review, and what a decision is, read without the learning
pipeline.

Listing the review queue needs the store only: no model, no detector, no numpy. The lessons
are read in batches (:meth:`~lore.store.protocol.LessonStore.get_many`), so a thousand
waiting rules cost a few queries, not a few per rule. :mod:`lore.review.decide` records the
decisions; these functions say what a decision is, what waits and what was approved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from lore.apply import nudge
from lore.extract.steer import auto_approved, held
from lore.extract.steer import decided as decided  # what a person decided: one definition
from lore.models import Lesson
from lore.store import Store

LIVE = ("candidate", "proposed", "active")


class Said(TypedDict):
    """One piece of a waiting rule's evidence: the user's words, verbatim."""

    said: str
    agent_turn: str | None
    session: str | None
    date: str | None
    project: str | None
    source: str | None


class Waiting(TypedDict):
    """One learned rule or proposed lesson in the review queue (``lore review --json``)."""

    id: str
    title: str
    rule: str
    status: str
    active_by_repetition: bool
    needs_approval: str  # why only a person's approval lets it reach the agent ('' if not)
    origin: Literal["work", "correction"]  # the analysis of the work, or a correction
    score: float | None
    occurrences: int
    sessions: int
    last_seen: str
    scope: str  # "global" or the project
    file_types: list[str]
    conflicts: list[str]  # ids of the live rules it contradicts
    why_candidate: str
    recorrections: int
    evidence: list[Said]


def proposable(meta: dict[str, Any]) -> bool:
    """May a learned rule leave the candidates? (A rule stored before the gate existed may.)"""
    return (not meta.get("gate") or len(set(meta.get("sessions") or [])) >= 2
            or bool(meta.get("confirmed")) or bool(meta.get("forced")))


def why_candidate(lesson: Lesson) -> str:
    meta = lesson.metadata.get("learning") or {}
    if lesson.status == "candidate" and meta.get("gate") and not proposable(meta):
        return str(meta["gate"])
    return ""


def review_meta(lesson: Lesson) -> tuple[str, dict[str, Any]] | None:
    """Where a lesson keeps what the review needs (``learning``: a learned rule; ``analysis``:
    a lesson the analysis of the work proposed) and that entry; None for other lessons."""
    for key in ("learning", "analysis"):
        meta = lesson.metadata.get(key)
        if isinstance(meta, dict):
            return key, meta
    return None


def _sessions(lesson: Lesson, meta: dict[str, Any]) -> int:
    """Sessions a lesson was seen in: a rule counts them, a lesson from the work has them in
    its evidence (or the one it was analysed in)."""
    seen = set(meta.get("sessions") or [])
    if not seen:
        seen = {e.session_id for e in lesson.evidence if e.session_id}
        if not seen and meta.get("session_id"):
            seen = {meta["session_id"]}
    return max(len(seen), 1)


def active_by_repetition(lesson: Lesson) -> bool:
    """A learned rule its score made active (it recurred) that nobody confirmed or rejected."""
    meta = lesson.metadata.get("learning")
    return auto_approved(lesson.status, meta if isinstance(meta, dict) else None)


def needs_person(lesson: Lesson) -> str:
    """Why this lesson may not reach the agent without a person's decision ('' when it may):
    :func:`lore.extract.steer.held` over its learning record and its words."""
    meta = lesson.metadata.get("learning")
    return held(meta if isinstance(meta, dict) else None, " ".join((
        lesson.title, lesson.content, lesson.preference.preferred if lesson.preference else "")))


def review_item(lesson: Lesson, meta: dict[str, Any], conflicts: Sequence[str]) -> Waiting:
    """One rule or lesson waiting for review, with its evidence verbatim. ``active_by_repetition``:
    its score made it active and nobody confirmed it yet; ``needs_approval``: why it reaches
    the agent only once a person approves it ('' when its score may bring it there)."""
    return {"id": lesson.id, "title": lesson.title, "rule": lesson.content, "status": lesson.status,
            "active_by_repetition": active_by_repetition(lesson),
            "needs_approval": needs_person(lesson) if "learning" in lesson.metadata else "",
            "origin": "work" if "analysis" in lesson.metadata and "learning" not in lesson.metadata
            else "correction",
            "score": lesson.score, "occurrences": int(meta.get("occurrences", 1)),
            "sessions": _sessions(lesson, meta),
            "last_seen": str(meta.get("last_seen") or lesson.updated_at or ""),
            "scope": "global" if lesson.project is None else lesson.project,
            "file_types": list(lesson.file_types), "conflicts": list(conflicts),
            "why_candidate": why_candidate(lesson), "recorrections": meta.get("recorrections", 0),
            "evidence": [{"said": e.quote, "agent_turn": e.context, "session": e.session_id,
                          "date": e.observed_at, "project": lesson.project, "source": e.source}
                         for e in lesson.evidence]}


def waits(lesson: Lesson) -> bool:
    """Nobody decided on this learned rule or proposed lesson yet (deferred ones wait again
    once seen again). An active rule waits: its score made it active, a person confirms or
    rejects it (deferring does not hide it); a lesson from the work waits while it is
    proposed. The status line and the SessionStart nudge decide with the same function
    (:func:`lore.apply.nudge.waits`)."""
    return nudge.waits(lesson.status, lesson.metadata)


def waiting(store: Store, project: str | None = None, *, all_projects: bool = True,
            limit: int = 100) -> list[Waiting]:
    """What waits for a person, in one queue: candidates, proposed rules, rules active by
    repetition and rules in conflict that nobody reviewed, and the lessons the analysis of
    the work proposed (deferred ones return when seen again), with their evidence; ranked by
    how often they recurred (sessions seen), then by how recently."""
    ids = store.corrections.preferences(project, all_projects=all_projects, file_type=None,
                                        statuses=LIVE, limit=max(limit * 5, 500))
    ids = list(dict.fromkeys([*ids, *store.corrections.work_lesson_ids(
        project, all_projects=all_projects, limit=max(limit * 5, 500))]))
    chosen: list[tuple[Lesson, dict[str, Any], list[str]]] = []
    step = min(max(limit + limit // 4, 20), 500)  # most ids wait: read about as many as asked
    for start in range(0, len(ids), step):
        batch = [x for x in store.get_many(ids[start : start + step]) if waits(x)]
        metas = {x.id: review_meta(x)[1] for x in batch}  # type: ignore[index]
        named = {c for x in batch for c in metas[x.id].get("conflicts", [])}
        live = {x.id for x in store.get_many(sorted(named)) if x.status in LIVE}
        for lesson in batch:
            meta = metas[lesson.id]
            conflicts = [c for c in meta.get("conflicts", []) if c in live]
            chosen.append((lesson, meta, conflicts))
            if len(chosen) >= limit:
                break
        if len(chosen) >= limit:
            break
    out = [review_item(lesson, meta, conflicts) for lesson, meta, conflicts in chosen]
    out.sort(key=lambda r: r["last_seen"], reverse=True)  # stable: recency breaks the ties
    return sorted(out, key=lambda r: -r["sessions"])


def decisions(store: Store) -> list[tuple[Waiting, dict[str, Any]]]:
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


def approved(lesson: Lesson) -> bool:
    """Active, and a person's decision: a learned rule only once reviewed (or set active by
    hand) — a rule that scored its way to active is not written where the agent obeys —, any
    other lesson because a person (or an import of theirs) added it."""
    if lesson.status != "active":
        return False
    meta = lesson.metadata.get("learning")
    return not isinstance(meta, dict) or decided(meta)


def holds(lesson: Lesson) -> bool:
    """Active and allowed to steer the agent: approved by a person (:func:`approved`), or
    active by repetition within the bounds — every piece of its evidence typed by the user,
    and it asks the agent to run, fetch or send nothing (:mod:`lore.extract.steer`)."""
    return lesson.status == "active" and not needs_person(lesson)


def approved_at(lesson: Lesson) -> str:
    """When a person approved the rule: ``metadata.approved_at`` when set, else the time
    of the review that approved it, else the lesson's creation."""
    at = lesson.metadata.get("approved_at")
    if isinstance(at, str) and at:
        return at
    review = (lesson.metadata.get("learning") or {}).get("review") or {}
    if review.get("action") in ("approve", "edit", "status") and review.get("at"):
        return str(review["at"])
    return lesson.created_at or ""


def approved_lessons(store: Store) -> list[Lesson]:
    """Every lesson a person approved (any kind) that this user may see."""
    found = [x for x in store.iter_lessons() if approved(x)]
    visible = store.visible_ids(x.id for x in found)
    return [x for x in found if x.id in visible]
