"""The ``lessons`` part of :class:`lore.api.Lore`: lessons in and out (validated fields in,
:class:`~lore.models.Lesson` out), their links, tags, reference values, JSON Lines export and
import."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from lore import normalize
from lore.core.lessons import require_id
from lore.errors import InvalidInput, NotFound
from lore.models import Edge, Filters, ImportReport, Lesson, RefItem

if TYPE_CHECKING:
    from pathlib import Path

    from lore.api.engine import Engine
    from lore.core.embedding import Progress


class LessonsPart:
    """Add, read, change and delete lessons; link them; their tags and reference values."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, title: str, content: str = "", **fields: Any) -> Lesson:
        """Validate, store, index and embed a new lesson; return it."""
        return self.engine.lessons.add(title, content, **fields)

    def get(self, lesson_id: str) -> Lesson:
        """One lesson; another user's personal lesson is not found, as in every read."""
        return self.engine.get(lesson_id)

    def resolve_id(self, value: str) -> str:
        """The full id a person means: an id in any case, or a unique prefix of 6+ characters
        of a lesson's or a check's id (ambiguous: InvalidInput; unknown: NotFound)."""
        return self.engine.resolve_id(value)

    def shown(self, lesson_id: str) -> str:
        """The full id when its lesson may be shown to this user; else NotFound."""
        return self.engine.shown(lesson_id)

    def update(self, lesson_id: str, **changes: Any) -> Lesson:
        """Change the given fields; lists replace the old list. Re-embeds only changed text.
        A status set here is a person's decision: rescoring never changes it afterwards."""
        lesson = self.engine.lessons.update(self.engine.shown(lesson_id), **changes)
        if changes.get("status") is not None and "learning" in lesson.metadata:
            from lore.review.decide import decided_by_hand

            decided_by_hand(self.engine.lessons, lesson.id)
            lesson = self.get(lesson.id)
        return lesson

    def delete(self, lesson_id: str) -> Lesson:
        """Delete a lesson with its checks (a check without its rule holds nothing)."""
        lesson = self.engine.lessons.delete(self.engine.shown(lesson_id))
        self.engine.checks.remove_of(lesson.id)
        return lesson

    def list(self, filters: Filters | None = None, limit: int = 50,
             offset: int = 0) -> tuple[int, list[dict[str, Any]]]:
        """Lessons matching the filters, newest first: (how many match, one page of briefs with
        id, title, kind, confidence, usage_count and updated_at)."""
        from lore.api.search import resolve_filters

        if limit < 1 or offset < 0:
            raise InvalidInput(f"limit must be at least 1 and offset at least 0 (got {limit}, {offset})")
        store = self.engine.store
        seqs = sorted(store.allowed_seqs(resolve_filters(self.engine, filters or Filters())),
                      reverse=True)
        page = seqs[offset:offset + limit]
        briefs = store.brief(page)
        rows = [briefs[s] for s in page if s in briefs]
        return len(seqs), [{k: r[k] for k in ("id", "title", "kind", "confidence", "usage_count",
                                              "updated_at")} for r in rows]

    def count(self) -> int:
        return self.engine.store.count()

    def edge_count(self) -> int:
        return self.engine.store.edge_count()

    def titles(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(title, kind) of each lesson id that exists."""
        return self.engine.store.titles(ids)

    # ---- links ------------------------------------------------------------------------
    def link(self, from_id: str, to_id: str, relation: str = "related_to") -> Edge:
        return self.engine.lessons.link(require_id(from_id), require_id(to_id), relation)

    def unlink(self, from_id: str, to_id: str, relation: str | None = None) -> int:
        return self.engine.lessons.unlink(require_id(from_id), require_id(to_id), relation)

    def set_visibility(self, lesson_id: str, visibility: str) -> None:
        """Who finds a lesson: personal (its author), project or team (docs/storage.md)."""
        self.engine.store.set_visibility(require_id(lesson_id), visibility)

    # ---- reference values and tags ----------------------------------------------------
    def reference(self, name: str) -> builtins.list[RefItem]:
        """The values of a reference table: confidence, source, kind, status or relation."""
        if name not in ("confidence", "source", "kind", "status", "relation"):
            raise InvalidInput(f"no reference table '{name}'; use confidence, source, kind, "
                               "status or relation")
        return self.engine.store.reference(name)

    def tags(self) -> builtins.list[tuple[str, int]]:
        """Every tag with the number of lessons it marks."""
        return self.engine.store.tag_counts()

    def tag_aliases(self) -> dict[str, str]:
        return self.engine.lessons.tag_aliases()

    def unknown_tags(self, tags: Iterable[str]) -> builtins.list[str]:
        """Tags not in config ``known_tags`` (empty when known_tags is not configured)."""
        known = {normalize.tag(t) for t in self.engine.settings.config.known_tags}
        if not known:
            return []
        return [t for t in normalize.tags(tags, self.tag_aliases()) if t not in known]

    def merge_tags(self, old: str, new: str) -> int:
        old_n, new_n = normalize.tag(old), normalize.tag(new)
        if not old_n or not new_n:
            raise InvalidInput("both tags must be non-empty")
        if old_n == new_n:
            raise InvalidInput(f"'{old}' and '{new}' are the same tag")
        store = self.engine.store
        if not any(t == old_n for t, _ in store.tag_counts()):
            raise NotFound(f"no lesson is tagged '{old_n}'; `lore recall values tags` lists the tags")
        return len(store.merge_tag(old_n, new_n))

    # ---- export and import ------------------------------------------------------------
    def export(self) -> Iterator[dict[str, Any]]:
        """One dict per lesson, with only its outgoing edges (so each edge appears once)."""
        for lesson in self.engine.store.iter_lessons():
            data = lesson.to_dict()
            data["edges"] = [e for e in data["edges"] if e["from"] == lesson.id]
            yield data

    def import_lines(self, lines: Iterable[str], *, skip_invalid: bool = False,
                     progress: Progress | None = None) -> ImportReport:
        """JSON Lines (an export of this or another home) in: lessons added or updated."""
        from lore.core.transfer import import_records

        report = import_records(self.engine.lessons, self.engine.embedding, lines,
                                skip_invalid=skip_invalid, progress=progress)
        if report.added + report.updated:
            self.engine.store.analyze()  # fresh statistics: the planner picks selective indexes
        return report

    def import_claude_memory(self, claude_home: Path, *, dry_run: bool = False) -> Any:
        """Claude Code's auto-memory entries as proposed lessons for review, each once; its
        files are only read."""
        from lore.core.claude_memory import import_memory

        return import_memory(self.engine.store, self.engine.lessons, claude_home, dry_run=dry_run)
