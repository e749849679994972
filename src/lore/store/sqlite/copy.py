"""The whole database as rows, table by table, for ``lore admin migrate-to``; the keyword and
vector indexes are rebuilt from the rows rather than copied."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from lore.store.protocol import COPY_TABLES, LOG_TABLE
from lore.store.sqlite.db import Tables, atomic

# Rows whose key the target may already hold from its own first migration: the copy wins.
_UPSERT_KEYS = {"meta": "key"}


class CopyTables(Tables):
    """Export and import rows of the tables in ``COPY_TABLES``."""

    def copy_columns(self, table: str) -> list[str]:
        assert table in COPY_TABLES
        return [r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")]

    def rows_in(self, table: str) -> int:
        assert table in COPY_TABLES
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def export_rows(self, table: str, batch: int) -> Iterator[list[tuple[Any, ...]]]:
        cols = ", ".join(self.copy_columns(table))
        cur = self.conn.execute(f"SELECT {cols} FROM {table}")
        while rows := cur.fetchmany(batch):
            yield [tuple(r) for r in rows]

    def import_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """Insert rows (one transaction); rows whose key is already there are skipped."""
        assert table in COPY_TABLES
        cols = ", ".join(columns)
        marks = ", ".join("?" * len(columns))
        key = _UPSERT_KEYS.get(table)
        conflict = "OR IGNORE " if key is None else ""
        upsert = ""
        if key is not None:
            sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
            upsert = f" ON CONFLICT({key}) DO UPDATE SET {sets}"
        with atomic(self.conn):
            before = self.conn.total_changes
            end = self._log_end() if table == "lessons" else 0
            self.conn.executemany(
                f"INSERT {conflict}INTO {table} ({cols}) VALUES ({marks}){upsert}",
                [tuple(r) for r in rows])
            stored = int(self.conn.total_changes - before)
            if table == "lessons":  # not new local changes: the log is copied as it is
                stored -= self.conn.execute(f"DELETE FROM {LOG_TABLE} WHERE seq > ?",
                                            (end,)).rowcount
            return stored

    def _log_end(self) -> int:
        return int(self.conn.execute(
            f"SELECT coalesce(max(seq), 0) FROM {LOG_TABLE}").fetchone()[0])

    def clear(self) -> None:
        """Delete every row a copy carries (the target of ``migrate-to --force``)."""
        with atomic(self.conn):
            self.conn.execute("DELETE FROM lessons_fts")
            self.conn.execute("DELETE FROM chunks_fts")
            if self.conn.execute(
                    "SELECT 1 FROM sqlite_schema WHERE name = 'lesson_vec_i8'").fetchone():
                self.conn.execute("DROP TABLE lesson_vec_i8")
            for table in reversed(COPY_TABLES):
                if table not in ("meta", "confidence_levels", "source_types", "lesson_kinds",
                                 "lesson_statuses", "relation_types"):
                    self.conn.execute(f"DELETE FROM {table}")

    def rebuild_indexes(self) -> None:
        """Keywords of every lesson and chunk, and the int8 vector index, from the rows."""
        from lore.normalize import date_words

        with atomic(self.conn):
            self.conn.execute("DELETE FROM lessons_fts")
            for seq, lid in self.conn.execute("SELECT seq, id FROM lessons").fetchall():
                self.index_keywords(seq, lid)  # type: ignore[attr-defined]
            self.conn.execute("DELETE FROM chunks_fts")
            for r in self.conn.execute("SELECT id, text, speakers, started_at, ctx_before, "
                                       "ctx_after FROM chunks").fetchall():
                context = "\n".join([*json.loads(r[4]), *json.loads(r[5])])
                self.conn.execute(
                    "INSERT INTO chunks_fts (rowid, text, speakers, date, context) "
                    "VALUES (?, ?, ?, ?, ?)", (r[0], r[1], r[2], date_words(r[3]), context))
            first = self.conn.execute("SELECT embedding FROM lesson_vectors LIMIT 1").fetchone()
            if first is None:
                return
            self.conn.execute("DROP TABLE IF EXISTS lesson_vec_i8")
            self.create_vector_index(len(first[0]) // 4)  # type: ignore[attr-defined]
            self.conn.execute(
                "INSERT INTO lesson_vec_i8 (rowid, embedding) "
                "SELECT seq, vec_quantize_int8(embedding, 'unit') FROM lesson_vectors")
