"""Lesson vectors: float32 blobs (the truth) and the sqlite-vec int8 index beside them."""

from __future__ import annotations

from collections.abc import Sequence

from lore.store.sqlite.db import atomic, chunks
from lore.store.sqlite.reference import ReferenceTables


class VectorTables(ReferenceTables):
    """``lesson_vectors`` and ``lesson_vec_i8``; every write bumps a version in ``meta``."""

    # ---- vectors ----------------------------------------------------------------------
    # Float32 blobs in lesson_vectors are the truth; lesson_vec_i8 is a sqlite-vec index of
    # the same vectors quantised to int8 (a quarter of the size) for KNN inside SQLite.
    def has_vector_index(self) -> bool:
        return bool(
            self.conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'lesson_vec_i8'").fetchone()
        )

    def create_vector_index(self, dimensions: int) -> None:
        self.conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS lesson_vec_i8 USING "
            f"vec0(embedding int8[{int(dimensions)}] distance_metric=cosine)"
        )

    def drop_vectors(self) -> None:
        with atomic(self.conn):
            self.conn.execute("DROP TABLE IF EXISTS lesson_vec_i8")
            self.conn.execute("DELETE FROM lesson_vectors")
            self._bump_vectors(reset=True)

    def vector_versions(self) -> tuple[int, int]:
        """(last write, last write that removed vectors): tells caches what to reload."""
        rows = dict(self.conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('vectors_version', 'vectors_reset')"
        ).fetchall())
        return int(rows.get("vectors_version", 0)), int(rows.get("vectors_reset", 0))

    def _bump_vectors(self, reset: bool = False) -> int:
        version = self.vector_versions()[0] + 1
        self.set_meta("vectors_version", str(version))
        if reset:
            self.set_meta("vectors_reset", str(version))
        return version

    def lessons_needing_vectors(self) -> list[tuple[int, str, str, str]]:
        """(seq, title, content, content_hash) of lessons without an up-to-date vector."""
        return [
            (r[0], r[1], r[2], r[3])
            for r in self.conn.execute(
                "SELECT l.seq, l.title, l.content, l.content_hash FROM lessons l "
                "LEFT JOIN lesson_vectors v ON v.seq = l.seq "
                "WHERE v.seq IS NULL OR v.content_hash <> l.content_hash ORDER BY l.seq"
            )
        ]

    def put_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Store (seq, content_hash, float32 bytes) and their index entries."""
        with atomic(self.conn):
            version = self._bump_vectors()
            self.conn.executemany(
                "INSERT INTO lesson_vectors (seq, content_hash, version, embedding) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(seq) DO UPDATE SET "
                "content_hash = excluded.content_hash, version = excluded.version, "
                "embedding = excluded.embedding",
                [(seq, h, version, blob) for seq, h, blob in rows],
            )
            self.conn.executemany(
                "DELETE FROM lesson_vec_i8 WHERE rowid = ?", [(r[0],) for r in rows]
            )
            self.conn.executemany(
                "INSERT INTO lesson_vec_i8 (rowid, embedding) VALUES (?, vec_quantize_int8(?, 'unit'))",
                [(r[0], r[2]) for r in rows],
            )

    def delete_vector(self, seq: int) -> None:
        if self.has_vector_index():
            self.conn.execute("DELETE FROM lesson_vec_i8 WHERE rowid = ?", (seq,))
        self._bump_vectors(reset=True)

    def knn(self, query: bytes, k: int) -> list[int]:
        """Nearest neighbours by the int8 index, nearest first (re-score them exactly)."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT rowid FROM lesson_vec_i8 WHERE embedding MATCH "
                "vec_quantize_int8(?, 'unit') AND k = ?",
                (query, k),
            )
        ]

    def vectors_since(self, version: int) -> list[tuple[int, bytes]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT seq, embedding FROM lesson_vectors WHERE version > ? ORDER BY seq", (version,)
            )
        ]

    def vector_count(self) -> int:
        # Counted through the version index: the table itself is mostly blob pages.
        return int(self.conn.execute(
            "SELECT count(*) FROM lesson_vectors INDEXED BY idx_lesson_vectors_version"
        ).fetchone()[0])


    def vectors_for(self, seqs: Sequence[int]) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        for chunk in chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            out += [
                (r[0], r[1])
                for r in self.conn.execute(
                    f"SELECT seq, embedding FROM lesson_vectors WHERE seq IN ({marks})", chunk
                )
            ]
        return out
