"""A person's decisions on what waits: approve, edit, reject or defer a learned rule or a
proposed lesson, and a status a person set by hand. A decision sticks: rescoring and
reinforcement never change it (the learner reads it with :func:`lore.review.queue.decided`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from lore.errors import InvalidInput
from lore.ids import now
from lore.redact import redact, redact_clipped

if TYPE_CHECKING:
    from lore.models import Lesson
    from lore.store import Store
    from lore.store.rows import CheckEvent, LoadedSession

ACTIONS = ("approve", "edit", "reject", "defer")


class Lessons(Protocol):
    """The core's lesson writer (:class:`lore.core.lessons.Lessons`), as a decision uses it:
    the review room sits below the core and imports none of it."""

    def get(self, lesson_id: str) -> Lesson: ...

    def update(self, lesson_id: str, **changes: Any) -> Lesson: ...


class Checks(Protocol):
    """The checks on rules (:class:`lore.core.checks.Checks`), as the review uses them."""

    def get(self, check_id: str) -> dict[str, Any]: ...

    def is_check(self, any_id: str) -> bool: ...

    def waiting(self, project: str | None = None, examples: int = 3) -> list[dict[str, Any]]: ...

    def review(self, check_id: str, action: str, *, mode: str | None = None
               ) -> dict[str, Any]: ...

    def checks(self, lesson_id: str | None = None, statuses: Sequence[str] | None = None
               ) -> list[dict[str, Any]]: ...

    def matches(self, lesson_id: str | None = None) -> list[CheckEvent]: ...

    def loads(self) -> list[LoadedSession]: ...


def _reason(text: str | None) -> str | None:
    """A reason as stored: on one line, redacted, at most 500 characters."""
    if not text or not text.strip():
        return None
    text = " ".join(text.split())
    return redact(text) if len(text) <= 500 else redact_clipped(text, 498, "").rstrip() + " …"


def decide(store: Store, lessons: Lessons, lesson_id: str, action: str, *,
           reason: str | None = None, title: str | None = None, content: str | None = None,
           status: str | None = None, via: str | None = None, file: str | None = None) -> Lesson:
    """approve: active. edit: new title/content, then active (or ``status``). reject:
    rejected, with the reason; the same correction later stays rejected. defer: not now; it
    waits again once the rule is seen once more. ``via`` (cli, terminal, folder, mcp …) and
    ``file`` (a review file) say where it was decided."""
    if action not in ACTIONS:
        raise InvalidInput(f"unknown review action '{action}'; use one of {', '.join(ACTIONS)}")
    lesson = lessons.get(lesson_id)
    reason = _reason(reason)
    # A lesson the analysis of the work proposed keeps its decision with its analysis.
    key = "analysis" if "learning" not in lesson.metadata and isinstance(
        lesson.metadata.get("analysis"), dict) else "learning"
    meta = dict(lesson.metadata.get(key) or {})
    meta["review"] = {"action": action, "at": now(),
                      **{k: v for k, v in (("reason", reason), ("via", via), ("file", file)) if v}}
    changes: dict[str, Any] = {}
    if action == "defer":
        meta["deferred_at"] = now()
        meta["deferred_seen"] = int(meta.get("occurrences", 1))
    else:
        meta["reviewed"] = True
        meta.pop("deferred_at", None)
    if action == "approve":
        changes["status"] = status or "active"
    elif action == "edit":
        if title is None and content is None:
            raise InvalidInput("nothing to edit: give a new title or content")
        if title is not None:
            changes["title"] = title
        if content is not None:
            changes["content"] = content
        changes["status"] = status or "active"
    elif action == "reject":
        changes["status"] = "rejected"
        if reason:
            meta["rejected_reason"] = reason
    if changes.get("status"):
        store.check_reference("status", changes["status"])
    with store.atomic():
        return lessons.update(lesson.id, metadata={**lesson.metadata, key: meta}, **changes)


def decided_by_hand(lessons: Lessons, lesson_id: str) -> None:
    """A person set this learned rule's status (``lore learn update --status``): it sticks."""
    lesson = lessons.get(lesson_id)
    meta = lesson.metadata.get("learning")
    if meta is None or meta.get("reviewed"):
        return
    meta = {**meta, "reviewed": True, "review": {"action": "status", "at": now()}}
    lessons.update(lesson.id, metadata={**lesson.metadata, "learning": meta})
