"""The ``review`` part of :class:`lore.api.Lore`: what waits for a person (learned rules,
proposed lessons, checks), their decisions, where a rule came from, and the markdown review
folder."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from lore.models import Lesson

if TYPE_CHECKING:
    from pathlib import Path

    from lore.config import Settings
    from lore.review.decide import Checks, Lessons
    from lore.review.queue import Waiting
    from lore.store import Store


class Core(Protocol):
    """What the review needs of the facade's engine (:class:`lore.api.engine.Engine`)."""

    store: Store
    settings: Settings

    @property
    def lessons(self) -> Lessons: ...

    @property
    def checks(self) -> Checks: ...

    def shown(self, lesson_id: str) -> str: ...


class Review:
    """What waits for a person and what they decide."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def waiting(self, project: str | None = None, *, all_projects: bool = True,
                limit: int = 100) -> list[Waiting]:
        """Learned rules and proposed lessons waiting for a person's review, with their
        evidence; read from the store alone, without loading the learning pipeline (``lore
        review`` lists fast)."""
        from lore.normalize import project_root
        from lore.review.queue import waiting

        return waiting(self.core.store, project_root(project), all_projects=all_projects,
                       limit=limit)

    def waiting_checks(self, project: str | None = None, examples: int = 3
                       ) -> list[dict[str, Any]]:
        """Proposed checks of approved rules, each with what it would have matched."""
        return self.core.checks.waiting(project, examples)

    def decide(self, lesson_id: str, action: str, *, reason: str | None = None,
               title: str | None = None, content: str | None = None,
               status: str | None = None, via: str | None = None,
               file: str | None = None) -> Lesson:
        """A person's decision on a learned rule or proposed lesson (approve, edit, reject,
        defer: :func:`lore.review.decide.decide`); it sticks: rescoring and reinforcement
        never change it."""
        from lore.review.decide import decide

        return decide(self.core.store, self.core.lessons, self.core.shown(lesson_id), action,
                      reason=reason, title=title, content=content, status=status, via=via,
                      file=file)

    def decide_check(self, check_id: str, action: str, *, mode: str | None = None
                     ) -> dict[str, Any]:
        """Approve (optionally in another mode) or reject a proposed check."""
        return self.core.checks.review(check_id, action, mode=mode)

    def approved(self) -> list[Lesson]:
        """Every lesson a person approved (any kind) that this user may see."""
        from lore.review.queue import approved_lessons

        return approved_lessons(self.core.store)

    @staticmethod
    def approved_at(lesson: Lesson) -> str:
        """When a person approved the rule (:func:`lore.review.queue.approved_at`)."""
        from lore.review.queue import approved_at

        return approved_at(lesson)

    def why(self, lesson_id: str) -> dict[str, Any]:
        """Where a rule came from and what it did: the user's words (evidence), the decision
        on it, the session starts that told it, its checks and what they blocked."""
        from lore.review.queue import approved, approved_at

        lesson = self.core.store.get(self.core.shown(lesson_id))
        rule_checks = self.core.checks
        meta = (lesson.metadata.get("learning") or lesson.metadata.get("analysis") or {})
        review = meta.get("review") or {}
        told = []
        for load in rule_checks.loads():
            try:  # told by the context, or held by a file the session read at start
                shown = [*json.loads(load["shown"] or "[]"),
                         *json.loads(load.get("in_files") or "[]")]
            except (TypeError, ValueError):
                continue
            if lesson.id in shown:
                told.append(load["at"])
        events = rule_checks.matches(lesson.id)
        outcomes: dict[str, int] = {}
        for e in events:
            outcomes[e["outcome"]] = outcomes.get(e["outcome"], 0) + 1
        return {"id": lesson.id, "title": lesson.title, "status": lesson.status,
                "scope": lesson.project or "global", "created_at": lesson.created_at,
                "evidence": [{"said": e.quote, "session": e.session_id, "date": e.observed_at,
                              "source": e.source} for e in lesson.evidence],
                "decision": {"action": review.get("action"), "at": review.get("at"),
                             "reason": review.get("reason"), "via": review.get("via")}
                if review else None,
                "approved_at": approved_at(lesson) if approved(lesson) else None,
                "told": {"sessions": len(told), "last": max(told) if told else None},
                "checks": [{"id": c["id"], "status": c["status"], "mode": c["mode"],
                            "words": c["words"]} for c in rule_checks.checks(lesson.id)],
                "matches": outcomes,
                "last_blocked": max((e["at"] for e in events if e["outcome"] == "blocked"),
                                    default=None)}

    # ---- the markdown review folder -------------------------------------------------------
    def export_folder(self, folder: Path | None = None) -> dict[str, Any]:
        """Write the markdown review folder (``review.folder`` unless given): a file per
        waiting rule, the approved rules, the decided ones, an index (docs/learning.md)."""
        from lore.review.folder_sync import ReviewSync

        core = self.core
        return ReviewSync(core.store, core.lessons, core.checks).export(
            folder or core.settings.review_folder, self.approved())

    def import_folder(self, folder: Path | None = None, *, create: bool = False
                      ) -> dict[str, Any]:
        """Apply the decisions ticked or written in the review folder's files."""
        from lore.review.folder_sync import ReviewSync

        core = self.core
        return ReviewSync(core.store, core.lessons, core.checks).import_(
            folder or core.settings.review_folder, create=create)

    def sync_folder(self, folder: Path | None = None) -> dict[str, Any]:
        """Import the folder's decisions (none the first time), then export it afresh."""
        imported = self.import_folder(folder, create=True)
        return {"imported": imported, "exported": self.export_folder(folder)}
