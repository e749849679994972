"""Lesson rows and their child tables (tags, contexts, file types, examples, trade-offs,
evidence): write, read, delete. Values are always bound; long ``IN`` lists are chunked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from lore.errors import NotFound
from lore.ids import new_id, now
from lore.models import CodeExample, Evidence, Lesson, Preference, TradeOff
from lore.store.protocol import PREFERENCE_COLUMNS, LessonRow, stamped
from lore.store.sqlite.db import atomic, chunks
from lore.store.sqlite.graph import EdgeTables
from lore.store.sqlite.search import KeywordIndex
from lore.store.sqlite.stats import UsageTables
from lore.store.sqlite.sync import tombstone
from lore.store.sqlite.vectors import VectorTables


class LessonTables(VectorTables, KeywordIndex, EdgeTables, UsageTables):
    """The lesson tables of one connection; the indexes are kept in step in the same transaction."""

    # ---- lessons ----------------------------------------------------------------------
    def seq_of(self, lesson_id: str) -> int:
        row = self.conn.execute("SELECT seq FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
        if row is None:
            raise NotFound(f"no lesson with id {lesson_id}; `lore search` finds ids")
        return int(row[0])

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0] for r in self.conn.execute(f"SELECT id FROM lessons WHERE id IN ({marks})", chunk)
            )
        return found

    def visible_ids(self, ids: Iterable[str]) -> set[str]:
        """The ids among ``ids`` of lessons the store's user may be shown (``Tables.visible``)."""
        visible, who = self.visible()
        found: set[str] = set()
        for part in chunks(list(dict.fromkeys(ids))):
            marks = ",".join("?" * len(part))
            found.update(r[0] for r in self.conn.execute(
                f"SELECT l.id FROM lessons l WHERE l.id IN ({marks})"
                + (f" AND {visible}" if visible else ""), [*part, *who]))
        return found

    def ids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Visible lesson ids starting with ``prefix`` (upper case, as ids are stored): a range
        on the primary key, so any backend's index answers it."""
        visible, who = self.visible()
        return [r[0] for r in self.conn.execute(
            "SELECT l.id FROM lessons l WHERE l.id >= ? AND l.id <= ?"
            + (f" AND {visible}" if visible else "") + " ORDER BY l.id LIMIT ?",
            [prefix, prefix + "Z" * (26 - len(prefix)), *who, limit])]

    def insert(self, row: LessonRow) -> int:
        values = stamped(row.values, *self.who)
        cols = ["id", *values]
        marks = ",".join("?" * len(cols))
        with atomic(self.conn):
            seq = int(self.conn.execute(  # portable: Postgres runs it as it is
                f"INSERT INTO lessons ({','.join(cols)}) VALUES ({marks}) RETURNING seq",
                [row.id, *values.values()]).fetchall()[0][0])
            self._write_children(row)
            self.index_keywords(seq, row.id)
        return seq

    def replace(self, seq: int, row: LessonRow) -> None:
        """Overwrite a lesson's columns and children (update and import both use this)."""
        sets = ", ".join(f"{c} = ?" for c in row.values)
        with atomic(self.conn):
            self.conn.execute(
                f"UPDATE lessons SET {sets} WHERE seq = ?", [*row.values.values(), seq]
            )
            for table in ("lesson_tags", "lesson_contexts", "lesson_file_types", "code_examples",
                          "trade_offs", "evidence"):
                self.conn.execute(f"DELETE FROM {table} WHERE lesson_id = ?", (row.id,))
            self._write_children(row)
            self.index_keywords(seq, row.id)

    def delete(self, lesson_id: str) -> None:
        seq = self.seq_of(lesson_id)
        with atomic(self.conn):
            self.conn.execute("DELETE FROM lessons_fts WHERE rowid = ?", (seq,))
            self.delete_vector(seq)
            self.conn.execute("DELETE FROM lessons WHERE seq = ?", (seq,))
            tombstone(self.conn, lesson_id, now(), self.who[1] or "")

    def _write_children(self, row: LessonRow) -> None:
        lid = row.id
        self.conn.executemany(
            "INSERT INTO lesson_tags (lesson_id, tag) VALUES (?, ?)", [(lid, t) for t in row.tags]
        )
        self.conn.executemany(
            "INSERT INTO lesson_contexts (lesson_id, context, applies) VALUES (?, ?, ?)",
            [(lid, c, 1) for c in row.contexts] + [(lid, c, 0) for c in row.anti_contexts],
        )
        self.conn.executemany(
            "INSERT INTO lesson_file_types (lesson_id, file_type) VALUES (?, ?)",
            [(lid, f) for f in row.file_types],
        )
        self.conn.executemany(
            "INSERT INTO code_examples (id, lesson_id, position, language, code, context) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(new_id(), lid, i, e.language, e.code, e.context) for i, e in enumerate(row.examples)],
        )
        self.conn.executemany(
            "INSERT INTO trade_offs (id, lesson_id, position, type, description) "
            "VALUES (?, ?, ?, ?, ?)",
            [(new_id(), lid, i, t.type, t.description) for i, t in enumerate(row.trade_offs)],
        )
        if not row.evidence:
            return
        self.conn.executemany(
            "INSERT INTO evidence (id, lesson_id, position, quote, session_id, message_id, "
            "observed_at, source, context) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (new_id(), lid, i, e.quote, e.session_id, e.message_id, e.observed_at, e.source,
                 e.context)
                for i, e in enumerate(row.evidence)
            ],
        )

    def get(self, lesson_id: str) -> Lesson:
        row = self.conn.execute("SELECT * FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
        if row is None:
            raise NotFound(f"no lesson with id {lesson_id}; `lore search` finds ids")
        return self._hydrate([row])[0]

    def get_many(self, ids: Sequence[str]) -> list[Lesson]:
        """The lessons with these ids, in the order given; unknown ids are left out. A few
        queries per 500 ids, whatever their number (the review list reads a thousand)."""
        found: dict[str, Lesson] = {}
        for part in chunks(list(dict.fromkeys(ids)), 500):
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(f"SELECT * FROM lessons WHERE id IN ({marks})",
                                     part).fetchall()
            found.update((lesson.id, lesson) for lesson in self._hydrate(rows))
        return [found[i] for i in ids if i in found]

    def _children(self, sql: str, ids: list[str]) -> dict[str, list[Any]]:
        """``sql`` selects lesson_id then the columns, ``WHERE lesson_id IN ({})``."""
        out: dict[str, list[Any]] = {}
        for r in self.conn.execute(sql.format(",".join("?" * len(ids))), ids):
            out.setdefault(r[0], []).append(tuple(r)[1:])
        return out

    def _hydrate(self, rows: Sequence[Any]) -> list[Lesson]:
        if not rows:
            return []
        ids = [r["id"] for r in rows]
        child = self._children
        contexts = child("SELECT lesson_id, context, applies FROM lesson_contexts "
                         "WHERE lesson_id IN ({}) ORDER BY lesson_id, context", ids)
        file_types = child("SELECT lesson_id, file_type FROM lesson_file_types "
                           "WHERE lesson_id IN ({}) ORDER BY lesson_id, file_type", ids)
        tags = child("SELECT lesson_id, tag FROM lesson_tags WHERE lesson_id IN ({}) "
                     "ORDER BY lesson_id, tag", ids)
        examples = child("SELECT lesson_id, code, language, context FROM code_examples "
                         "WHERE lesson_id IN ({}) ORDER BY lesson_id, position", ids)
        trade_offs = child("SELECT lesson_id, type, description FROM trade_offs "
                           "WHERE lesson_id IN ({}) ORDER BY lesson_id, position", ids)
        evidence = child("SELECT lesson_id, quote, session_id, message_id, observed_at, source, "
                         "context FROM evidence WHERE lesson_id IN ({}) "
                         "ORDER BY lesson_id, position", ids)
        edges = self.edges_of_many(ids)
        out = []
        for row in rows:
            lid = row["id"]
            ctx = contexts.get(lid, [])
            pref = Preference(*(row[c] or "" for c in PREFERENCE_COLUMNS))
            out.append(Lesson(
                id=lid,
                title=row["title"],
                content=row["content"],
                kind=row["kind"],
                status=row["status"],
                confidence=row["confidence"],
                score=row["score"],
                source=row["source"],
                source_notes=row["source_notes"],
                project=row["project"],
                summary=row["summary"],
                problem_solved=row["problem_solved"],
                when_to_apply=row["when_to_apply"],
                when_not_to_apply=row["when_not_to_apply"],
                preference=None if pref.is_empty() else pref,
                file_types=tuple(r[0] for r in file_types.get(lid, [])),
                tags=tuple(r[0] for r in tags.get(lid, [])),
                contexts=tuple(c for c, applies in ctx if applies),
                anti_contexts=tuple(c for c, applies in ctx if not applies),
                examples=tuple(CodeExample(code=r[0], language=r[1], context=r[2])
                               for r in examples.get(lid, [])),
                trade_offs=tuple(TradeOff(type=r[0], description=r[1])
                                 for r in trade_offs.get(lid, [])),
                evidence=tuple(Evidence(quote=r[0], session_id=r[1], message_id=r[2],
                                        observed_at=r[3], source=r[4], context=r[5])
                               for r in evidence.get(lid, [])),
                edges=tuple(edges.get(lid, [])),
                metadata=json.loads(row["metadata"] or "{}"),
                usage_count=row["usage_count"],
                last_used=row["last_used"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
                content_hash=row["content_hash"],
            ))
        return out

    def iter_lessons(self, order: str = "seq") -> Iterator[Lesson]:
        rows = self.conn.execute(f"SELECT * FROM lessons ORDER BY {order}").fetchall()
        for part in chunks(rows, 500):
            yield from self._hydrate(part)

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM lessons").fetchone()[0])


    # ---- tags -------------------------------------------------------------------------
    def tag_counts(self) -> list[tuple[str, int]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT tag, count(*) FROM lesson_tags GROUP BY tag ORDER BY count(*) DESC, tag"
            )
        ]

    def tag_aliases(self) -> dict[str, str]:
        return {
            r[0]: r[1]
            for r in self.conn.execute(
                "SELECT from_tag, to_tag FROM tag_relations WHERE relation = 'alias_of'"
            )
        }

    def merge_tag(self, old: str, new: str) -> list[str]:
        """Move every lesson tagged ``old`` to ``new``; return the ids touched (portable SQL:
        Postgres runs the same statements)."""
        with atomic(self.conn):
            ids = [r[0] for r in self.conn.execute(
                "SELECT lesson_id FROM lesson_tags WHERE tag = ?", (old,))]
            self.conn.execute(
                "INSERT INTO lesson_tags (lesson_id, tag) SELECT lesson_id, ? FROM lesson_tags "
                "WHERE tag = ? ON CONFLICT DO NOTHING", (new, old))
            self.conn.execute("DELETE FROM lesson_tags WHERE tag = ?", (old,))
            self.conn.execute(
                "INSERT INTO tag_relations (from_tag, to_tag, relation) VALUES (?, ?, 'alias_of') "
                "ON CONFLICT DO NOTHING", (old, new))
            # Aliases that pointed at the old tag follow it (unless that alias exists already).
            self.conn.execute(
                "UPDATE tag_relations AS r SET to_tag = ? WHERE r.to_tag = ? "
                "AND r.relation = 'alias_of' AND NOT EXISTS (SELECT 1 FROM tag_relations x "
                "WHERE x.from_tag = r.from_tag AND x.to_tag = ? AND x.relation = 'alias_of')",
                (new, old, new))
            for lid in ids:
                self.index_keywords(self.seq_of(lid), lid)
        return ids

