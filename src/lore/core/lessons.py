"""Lesson writes: validated fields to a stored row, embedded before anything is written.

The embedded text is ``"{title}\\n\\n{content}"``; each vector row keeps the
lesson's content hash, so an update that changes neither is not re-embedded.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, cast

from lore import normalize
from lore.core.embedding import Embedding
from lore.embed import document_text
from lore.errors import InvalidInput, NotFound
from lore.ids import is_id, new_id, now
from lore.models import CodeExample, Edge, Evidence, Lesson, TradeOff
from lore.redact import redact_value
from lore.store import PREFERENCE_COLUMNS, PREFERENCE_KEYS, TEXT_FIELDS, LessonRow, Store

if TYPE_CHECKING:
    from collections.abc import Callable

    from lore.config_models import Config
    from lore.validation import LessonFields

DEFAULTS = {"kind": "learning", "status": "active", "confidence": "medium"}


def content_hash(title: str, content: str) -> str:
    return hashlib.sha256(document_text(title, content).encode("utf-8")).hexdigest()


def require_id(value: str) -> str:
    """A lesson id as given, trimmed; a value that cannot be an id is bad input, not missing."""
    value = value.strip()
    if not is_id(value):
        raise InvalidInput(f"'{value}' is not a lesson id (ids look like 01JD8X3Q5M0000000000000000)")
    return value


class Lessons:
    """Add, change, delete and link lessons of one store."""

    def __init__(self, store: Store, embedding: Embedding, config: Config) -> None:
        self.store = store
        self.embedding = embedding
        self.config = config
        # Told the id of a lesson changed or deleted (the checks on a rule follow it).
        self.on_change: Callable[[str], None] | None = None

    def add(self, title: str, content: str = "", **fields: Any) -> Lesson:
        """Validate, store, index and embed a new lesson; return it."""
        from lore.validation import validate_fields  # pydantic's lesson models: writes only

        data = validate_fields({"title": title, "content": content, **fields})
        self.embedding.check_model()
        lesson_id = new_id()
        row = self.row(lesson_id, data, existing=None)
        vector = self.embedding.embed([document_text(row.values["title"], row.values["content"])])[0]
        with self.store.atomic():
            seq = self.store.insert(row)
            self.embedding.store_vectors([(seq, row.values["content_hash"], vector)])
        return self.store.get(lesson_id)

    def get(self, lesson_id: str) -> Lesson:
        return self.store.get(lesson_id)

    def update(self, lesson_id: str, **changes: Any) -> Lesson:
        """Change the given fields; lists replace the old list. Re-embeds only changed text."""
        current = self.store.get(lesson_id)
        from lore.validation import validate_fields

        data = validate_fields(changes)
        row = self.row(lesson_id, data, existing=current)
        changed_text = row.values["content_hash"] != current.content_hash
        vector = None
        if changed_text:
            self.embedding.check_model()
            vector = self.embedding.embed([document_text(row.values["title"],
                                                         row.values["content"])])[0]
        seq = self.store.seq_of(lesson_id)
        with self.store.atomic():
            self.store.replace(seq, row)
            if vector is not None:
                self.embedding.store_vectors([(seq, row.values["content_hash"], vector)])
        if self.on_change is not None:
            self.on_change(lesson_id)
        return self.store.get(lesson_id)

    def delete(self, lesson_id: str) -> Lesson:
        lesson = self.store.get(lesson_id)
        self.store.delete(lesson_id)
        if self.on_change is not None:
            self.on_change(lesson_id)
        return lesson

    def row(self, lesson_id: str, data: LessonFields, existing: Lesson | None,
            times: tuple[str, str] | None = None) -> LessonRow:
        """The row to store for validated fields over an existing lesson (or None: a new one)."""
        base = existing.to_dict() if existing else {}
        # The one door for lesson text (CLI, MCP, import, learning): secrets never reach the
        # lessons, their evidence or the embedding model.
        given = cast("dict[str, Any]", redact_value(data.model_dump(exclude_none=True)))

        def pick(name: str, default: Any = None) -> Any:
            if name in given:
                return given[name]
            return base.get(name, default) if existing else default

        values: dict[str, Any] = {}
        for name in TEXT_FIELDS:
            values[name] = pick(name)
        values["content"] = values["content"] or ""
        if not values["title"]:
            raise InvalidInput("title must not be empty")
        for name in ("kind", "status", "confidence"):
            values[name] = pick(name, DEFAULTS[name])
        if "confidence" not in given and "score" in given and not existing:
            values["confidence"] = self.store.confidence_for_score(given["score"])
        for name in ("kind", "status", "confidence"):
            self.store.check_reference(name, values[name])
        if values["source"] is not None:
            self.store.check_reference("source", values["source"])
        if values["project"] is not None:  # a folder is stored as its project (git top level)
            values["project"] = normalize.project_root(values["project"].strip()) or None
        pref = given.get("preference", base.get("preference") if existing else None) or {}
        for col, key in zip(PREFERENCE_COLUMNS, PREFERENCE_KEYS, strict=True):
            values[col] = pref.get(key) or None
        values["metadata"] = json.dumps(pick("metadata", {}) or {}, sort_keys=True)
        if times is None:
            stamp = now()  # one clock reading: a new lesson's created_at equals its updated_at
            times = (existing.created_at if existing else stamp, stamp)
        created, updated = times
        values["created_at"] = created
        values["updated_at"] = updated
        values["content_hash"] = content_hash(values["title"], values["content"])
        aliases = self.tag_aliases()
        return LessonRow(
            id=lesson_id,
            values=values,
            tags=normalize.tags(pick("tags", ()) or (), aliases),
            contexts=normalize.unique(pick("contexts", ()) or (), normalize.context),
            anti_contexts=normalize.unique(pick("anti_contexts", ()) or (), normalize.context),
            file_types=normalize.unique(pick("file_types", ()) or (), normalize.file_type),
            examples=tuple(CodeExample(**e) for e in pick("examples", ()) or ()),
            trade_offs=tuple(TradeOff(**t) for t in pick("trade_offs", ()) or ()),
            evidence=tuple(Evidence(**e) for e in pick("evidence", ()) or ()),
        )

    def tag_aliases(self) -> dict[str, str]:
        aliases = self.store.tag_aliases()
        for k, v in self.config.tag_aliases.items():
            aliases[normalize.tag(k)] = normalize.tag(v)
        return aliases

    # ---- links --------------------------------------------------------------------------
    def link(self, from_id: str, to_id: str, relation: str = "related_to") -> Edge:
        relation = relation.strip()
        if not relation:
            raise InvalidInput("relation must not be empty")
        if from_id == to_id:
            raise InvalidInput("a lesson cannot be linked to itself")
        for lid in (from_id, to_id):
            self.store.seq_of(lid)
        edge = Edge(from_id, to_id, relation, now())
        self.store.add_edge(edge)
        return edge

    def unlink(self, from_id: str, to_id: str, relation: str | None = None) -> int:
        for lid in (from_id, to_id):
            self.store.seq_of(lid)
        relation = relation.strip() if relation is not None else None
        removed = self.store.remove_edges(from_id, to_id, relation)
        if removed == 0:
            what = f" '{relation}'" if relation else ""
            raise NotFound(f"no{what} link from {from_id} to {to_id}")
        return removed
