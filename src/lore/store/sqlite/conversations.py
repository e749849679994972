"""SQL for conversation memory: sessions, messages, chunks (FTS5 + vectors), edits, import state."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from lore.store.protocol import FileState
from lore.store.rows import ChunkRow, ChunkToContextualise, NeighbourTurn, NewEdit, NewMessage, SessionRow
from lore.store.sqlite.db import Tables, atomic, chunks
from lore.store.sqlite.search import prune_terms

# A chunk's words for ranking, counted in SQL: spaces and line breaks + 1 (a line break written
# as itself in the literal, which SQLite and Postgres both read). A text of LONG_BYTES or more
# counts as LONG_WORDS, far past the ranking's cap, without reading it: octet_length takes the
# size from the record header, where the words would read the text and its overflow pages
# (bench/length_cost_bench.py).
LONG_BYTES, LONG_WORDS = 1600, 1000
WORDS = (f"CASE WHEN octet_length(text) >= {LONG_BYTES} THEN {LONG_WORDS} "
         "ELSE length(text) - length(replace(replace(text, ' ', ''), '\n', '')) + 1 END")
# Its last 16 characters (trailing spaces dropped; '' for a long text), for whether it ends by
# asking.
TAIL = (f"CASE WHEN octet_length(text) >= {LONG_BYTES} THEN '' "
        "WHEN length(rtrim(text)) > 16 THEN substr(rtrim(text), length(rtrim(text)) - 15) "
        "ELSE rtrim(text) END")



def as_ints(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row's booleans as 0/1, as the integer columns hold them on every backend."""
    return {k: int(v) if isinstance(v, bool) else v for k, v in row.items()}

class ConversationTables(Tables):
    """Imported transcripts: sessions, messages, chunks and their indexes, the agent's edits."""

    # ---- import state -----------------------------------------------------------------
    def file_state(self, path: str) -> FileState | None:
        r = self.conn.execute(  # "offset" quoted: a keyword of Postgres, which runs this too
            'SELECT path, agent, size, "offset", head_hash, tail_hash FROM ingest_files '
            "WHERE path = ?", (path,)).fetchone()
        return FileState(*r) if r else None

    def save_file_state(self, st: FileState, at: str, messages: int, malformed: int,
                        unknown: int) -> None:
        self.conn.execute(
            'INSERT INTO ingest_files (path, agent, size, "offset", head_hash, tail_hash, '
            "imported_at, messages, malformed, unknown) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET agent = excluded.agent, size = excluded.size, "
            '"offset" = excluded."offset", head_hash = excluded.head_hash, '
            "tail_hash = excluded.tail_hash, imported_at = excluded.imported_at, "
            "messages = ingest_files.messages + excluded.messages, "
            "malformed = ingest_files.malformed + excluded.malformed, "
            "unknown = ingest_files.unknown + excluded.unknown",
            (st.path, st.agent, st.size, st.offset, st.head_hash, st.tail_hash, at, messages,
             malformed, unknown))

    # ---- sessions and messages --------------------------------------------------------
    def upsert_session(self, session_id: str, agent: str, project: str | None, device: str,
                       git_branch: str | None, source_file: str | None, title: str | None) -> None:
        self.conn.execute(
            "INSERT INTO sessions (id, agent, project, device, git_branch, source_file, title) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "project = coalesce(sessions.project, excluded.project), "
            "git_branch = coalesce(excluded.git_branch, sessions.git_branch), "
            "source_file = coalesce(sessions.source_file, excluded.source_file), "
            "title = coalesce(sessions.title, excluded.title)",
            (session_id, agent, project, device, git_branch, source_file, title),
        )

    def refresh_session(self, session_id: str) -> None:
        self.conn.execute(
            "UPDATE sessions SET started_at = (SELECT min(timestamp) FROM messages WHERE session_id = ?), "
            "ended_at = (SELECT max(timestamp) FROM messages WHERE session_id = ?), "
            "message_count = (SELECT count(*) FROM messages WHERE session_id = ?), "
            "speakers = coalesce((SELECT group_concat(sp, ' ') FROM (SELECT DISTINCT speaker AS sp "
            "FROM messages WHERE session_id = ? AND speaker IS NOT NULL AND chunk_id IS NOT NULL)), '') "
            "WHERE id = ?",
            (session_id, session_id, session_id, session_id, session_id),
        )

    def insert_message(self, row: NewMessage) -> int | None:
        """Insert unless a message with this uuid exists; return its seq when inserted."""
        rows = self.conn.execute(
            "INSERT INTO messages (uuid, session_id, parent_uuid, role, speaker, text, "
            "tool_calls, timestamp, is_sidechain, agent_id, is_meta, injected) "
            "VALUES (:uuid, :session_id, :parent_uuid, :role, :speaker, :text, :tool_calls, "
            ":timestamp, :is_sidechain, :agent_id, :is_meta, :injected) "
            "ON CONFLICT (uuid) DO NOTHING RETURNING seq", as_ints(row)).fetchall()
        return int(rows[0][0]) if rows else None

    def insert_edit(self, row: NewEdit) -> None:
        self.conn.execute(
            "INSERT INTO file_edits (session_id, message_uuid, tool, file_path, file_type, "
            "old_text, new_text, timestamp, succeeded) VALUES (:session_id, :message_uuid, :tool, "
            ":file_path, :file_type, :old_text, :new_text, :timestamp, :succeeded) "
            "ON CONFLICT DO NOTHING", as_ints(row))

    # ---- chunks -----------------------------------------------------------------------
    def insert_chunk(self, session_id: str, project: str | None, seqs: Sequence[int],
                     started: str | None, ended: str | None, speakers: str, text: str) -> int:
        """A new chunk; its context, date words and embedding hash follow in set_context()."""
        cur = self.conn.execute(
            "INSERT INTO chunks (session_id, project, first_seq, last_seq, started_at, ended_at, "
            "speakers, text, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '')",
            (session_id, project, min(seqs), max(seqs), started, ended, speakers, text),
        )
        chunk_id = int(cur.lastrowid)
        self.conn.executemany("UPDATE messages SET chunk_id = ? WHERE seq = ?",
                              [(chunk_id, s) for s in seqs])
        return chunk_id

    def set_context(self, chunk_id: int, before: Sequence[str], after: Sequence[str],
                    date_words: str, embed_hash: str) -> None:
        row = self.conn.execute("SELECT text, speakers FROM chunks WHERE id = ?",
                                (chunk_id,)).fetchone()
        self.conn.execute(
            "UPDATE chunks SET ctx_before = ?, ctx_after = ?, content_hash = ? WHERE id = ?",
            (json.dumps(list(before)), json.dumps(list(after)), embed_hash, chunk_id))
        self.conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
        self.conn.execute(
            "INSERT INTO chunks_fts (rowid, text, speakers, date, context) VALUES (?, ?, ?, ?, ?)",
            (chunk_id, row[0], row[1], date_words, "\n".join([*before, *after])))

    def chunks_to_contextualise(self, session_id: str, first_new: int,
                                previous: int) -> list[ChunkToContextualise]:
        """The new chunks of a session (id >= first_new) and the ``previous`` chunks before them,
        whose following context the new turns change."""
        rows = self.conn.execute(
            "SELECT * FROM (SELECT id, first_seq, last_seq, text, started_at FROM chunks "
            "WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?) AS earlier "
            "UNION ALL SELECT id, first_seq, last_seq, text, started_at FROM chunks "
            "WHERE session_id = ? AND id >= ? ORDER BY id",
            (session_id, first_new, previous, session_id, first_new)).fetchall()
        return [cast(ChunkToContextualise, dict(r)) for r in rows]

    def turns_around(self, session_id: str, first_seq: int, last_seq: int,
                     n: int) -> tuple[list[str], list[str]]:
        """Texts of up to ``n`` chunked turns before and after a range, nearest last/first."""
        before = [r[0] for r in self.conn.execute(
            "SELECT text FROM messages WHERE session_id = ? AND seq < ? AND chunk_id IS NOT NULL "
            "ORDER BY seq DESC LIMIT ?", (session_id, first_seq, n))][::-1]
        after = [r[0] for r in self.conn.execute(
            "SELECT text FROM messages WHERE session_id = ? AND seq > ? AND chunk_id IS NOT NULL "
            "ORDER BY seq LIMIT ?", (session_id, last_seq, n))]
        return before, after

    def scope_speakers(self, project: str | None) -> list[str]:
        sql = "SELECT DISTINCT speakers FROM sessions" + (" WHERE project = ?" if project else "")
        names: dict[str, None] = {}
        for (value,) in self.conn.execute(sql, (project,) if project else ()):
            for name in (value or "").split():
                names[name] = None
        return list(names)

    def chunks_needing_vectors(self, limit: int | None = None) -> list[tuple[int, str, str, str, str]]:
        """(id, text, before, after, content_hash) of chunks whose vector is missing or stale,
        oldest first; at most ``limit`` (a batch of the backlog)."""
        return [
            (r[0], r[1], r[2], r[3], r[4])
            for r in self.conn.execute(
                "SELECT c.id, c.text, c.ctx_before, c.ctx_after, c.content_hash FROM chunks c "
                "LEFT JOIN chunk_vectors v ON v.chunk_id = c.id "
                "WHERE v.chunk_id IS NULL OR v.content_hash <> c.content_hash ORDER BY c.id "
                "LIMIT ?", (-1 if limit is None else limit,)
            )
        ]

    def vector_backlog(self) -> int:
        """How many chunks wait for a vector (missing or stale)."""
        return int(self.conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN chunk_vectors v ON v.chunk_id = c.id "
            "WHERE v.chunk_id IS NULL OR v.content_hash <> c.content_hash").fetchone()[0])

    def vector_versions(self) -> tuple[int, int]:
        rows = dict(self.conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('chunk_vectors_version', 'chunk_vectors_reset')"
        ).fetchall())
        return int(rows.get("chunk_vectors_version", 0)), int(rows.get("chunk_vectors_reset", 0))

    def put_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        with atomic(self.conn):
            version = self.vector_versions()[0] + 1
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES ('chunk_vectors_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(version),))
            self.conn.executemany(
                "INSERT INTO chunk_vectors (chunk_id, content_hash, version, embedding) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(chunk_id) DO UPDATE SET "
                "content_hash = excluded.content_hash, version = excluded.version, "
                "embedding = excluded.embedding",
                [(cid, h, version, blob) for cid, h, blob in rows],
            )

    def drop_vectors(self) -> None:
        """Delete every chunk vector (a model change): the next version is a reset, so
        in-memory copies and the index file beside the database start again."""
        with atomic(self.conn):
            version = str(self.vector_versions()[0] + 1)
            self.conn.execute("DELETE FROM chunk_vectors")
            self.conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [("chunk_vectors_version", version), ("chunk_vectors_reset", version)])

    def vectors_since(self, version: int) -> list[tuple[int, bytes]]:
        return [(r[0], r[1]) for r in self.conn.execute(
            "SELECT chunk_id, embedding FROM chunk_vectors WHERE version > ? ORDER BY chunk_id",
            (version,))]

    def vectors_page(self, after: int, limit: int) -> list[tuple[int, bytes]]:
        """Vectors by chunk id from ``after`` on, ``limit`` at a time (an index is built from
        pages: a million vectors never sit in memory at once)."""
        return [(r[0], r[1]) for r in self.conn.execute(
            "SELECT chunk_id, embedding FROM chunk_vectors WHERE chunk_id > ? ORDER BY chunk_id "
            "LIMIT ?", (after, limit))]

    def vector_total(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0])

    def in_project(self, ids: Sequence[int], project: str) -> set[int]:
        """Those of ``ids`` that are chunks of ``project``."""
        return {cid for cid, p in self.chunk_projects(ids).items() if p == project}

    def chunk_projects(self, ids: Sequence[int]) -> dict[int, str | None]:
        out: dict[int, str | None] = {}
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            out.update(self.conn.execute(
                f"SELECT id, project FROM chunks WHERE id IN ({marks})", chunk).fetchall())
        return out

    def vectors_for(self, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            out += [(r[0], r[1]) for r in self.conn.execute(
                f"SELECT chunk_id, embedding FROM chunk_vectors WHERE chunk_id IN ({marks})", chunk)]
        return out

    def nearest(self, query: bytes, k: int, project: str | None) -> list[tuple[int, float]] | None:
        """None: an SQLite file has no nearest-neighbour search of its own; the caller uses the
        chunk index file beside it, or scans the vectors exactly."""
        return None

    def chunk_ids(self, project: str) -> list[int]:
        """The chunks of one project."""
        return [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE project = ?", (project,))]

    # ---- search -----------------------------------------------------------------------
    def keyword_search(self, terms: Sequence[str], weights: tuple[float, float, float, float],
                       limit: int, project: str | None,
                       max_postings: int) -> list[tuple[int, float]]:
        """(chunk id, bm25) best first, in one project or (None) in all. Terms match the text,
        date and context columns (not the speakers: with two speakers a name is in half the
        rows and carries no weight).

        BM25 scores at most about ``max_postings`` rows: the rarest terms are kept while their
        rows add up to that; when even the rarest term is in more rows (a common word in a
        long history), its newest ``max_postings`` rows are scored — FTS5 walks the term's
        rows newest first and stops, so the cost no longer grows with the history. Rare words
        always search all of it; the vector stage covers what the window leaves out."""
        if not terms:
            return []
        counts = dict(zip(terms, self._term_counts(terms, 4 * max_postings), strict=True))
        terms = prune_terms(terms, list(counts.values()), max_postings)
        window = sum(counts[t] for t in terms) > max_postings
        match = " OR ".join("{text date context} : " + t for t in terms)
        # One project: each row's project from the narrow (project, id) index, not the wide
        # chunk row (half the time at a million chunks).
        scope = "WHERE chunks_fts MATCH ?" + (
            " AND EXISTS (SELECT 1 FROM chunks c INDEXED BY idx_chunks_project "
            "WHERE c.project = ? AND c.id = f.rowid)" if project is not None else "")
        params: list[Any] = [*weights, match, *([project] if project is not None else [])]
        sql = f"SELECT f.rowid, bm25(chunks_fts, ?, ?, ?, ?) AS s FROM chunks_fts f {scope}"
        if window:
            sql = f"SELECT * FROM ({sql} ORDER BY f.rowid DESC LIMIT ?) ORDER BY s LIMIT ?"
            params += [max_postings, limit]
        else:
            sql += " ORDER BY s LIMIT ?"
            params.append(limit)
        return [(r[0], r[1]) for r in self.conn.execute(sql, params)]

    def _term_counts(self, terms: Sequence[str], cap: int) -> list[int]:
        """How many chunks match each term, counted up to ``cap`` (pruning needs only which
        terms are rare; counting a common word in full reads its whole posting list). A count
        is reused until the chunks have grown by a tenth."""
        cache: dict[str, tuple[int, int]] = self.__dict__.setdefault("_counts", {})
        size = int(self.conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
        out = []
        for t in terms:
            hit = cache.get(t)
            if hit is None or size > hit[1] * 1.1 or size < hit[1]:
                hit = (int(self.conn.execute(
                    "SELECT count(*) FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
                    "LIMIT ?)", ("{text date context} : " + t, cap)).fetchone()[0]), size)
                if len(cache) > 50_000:
                    cache.clear()
                cache[t] = hit
            out.append(hit[0])
        return out

    def chunk_meta(self, ids: Sequence[int]) -> dict[int, tuple[str | None, str, str, int, str]]:
        out: dict[int, tuple[str | None, str, str, int, str]] = {}
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            out.update((r[0], (r[1], r[2], r[3], r[4], r[5])) for r in self.conn.execute(
                f"SELECT id, ended_at, speakers, session_id, {WORDS}, {TAIL} FROM chunks "
                f"WHERE id IN ({marks})", chunk))
        return out

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                "SELECT c.id, c.session_id, c.project, c.first_seq, c.last_seq, c.started_at, "
                "c.ended_at, c.speakers, c.text, s.agent, s.git_branch, s.title "
                f"FROM chunks c JOIN sessions s ON s.id = c.session_id WHERE c.id IN ({marks})",
                chunk,
            ):
                out[r[0]] = cast(ChunkRow, dict(r))
        return out

    def chunk_first_uuids(self, ids: Sequence[int]) -> dict[int, str]:
        """The uuid of each chunk's first message (a chunk per turn: the turn's id)."""
        out: dict[int, str] = {}
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            out.update(self.conn.execute(
                f"SELECT c.id, m.uuid FROM chunks c JOIN messages m ON m.seq = c.first_seq "
                f"WHERE c.id IN ({marks})", chunk).fetchall())
        return out

    def neighbours(self, chunk_id: int, before: int, after: int) -> list[NeighbourTurn]:
        """The messages of a chunk with ``before``/``after`` messages of the same session around it."""
        row = self.conn.execute(
            "SELECT session_id, first_seq, last_seq FROM chunks WHERE id = ?", (chunk_id,)
        ).fetchone()
        if row is None:
            return []
        sid, first, last = row
        cols = "seq, uuid, role, speaker, text, timestamp, is_meta, injected"
        rows = self.conn.execute(  # portable SQL: Postgres runs the same statement
            f"SELECT * FROM (SELECT {cols} FROM messages WHERE session_id = ? AND seq < ? "
            f"ORDER BY seq DESC LIMIT ?) AS earlier UNION ALL SELECT {cols} FROM messages "
            f"WHERE session_id = ? AND seq BETWEEN ? AND ? UNION ALL SELECT * FROM (SELECT {cols} "
            "FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?) AS later "
            "ORDER BY seq",
            (sid, first, before, sid, first, last, sid, last, after),
        ).fetchall()
        return [cast(NeighbourTurn, dict(r) | {"in_chunk": first <= r["seq"] <= last})
                for r in rows]

    def sessions_of(self, *, project: str | None = None,
                    source_file: str | None = None) -> list[tuple[str, str | None]]:
        """(id, title) of the sessions of one project folder, or of those read from one file."""
        column, value = ("project", project) if project is not None else ("source_file", source_file)
        return [(r[0], r[1]) for r in self.conn.execute(
            f"SELECT id, title FROM sessions WHERE {column} = ? ORDER BY id", (value,))]

    def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Remove imported sessions: their messages, chunks (with their search entries and
        vectors), edits and their files' import state; returns how many messages they held.
        Chunk vectors start a new version as a reset, so copies in memory are read again."""
        removed = 0
        with atomic(self.conn):
            for sid in session_ids:
                row = self.conn.execute("SELECT source_file FROM sessions WHERE id = ?",
                                        (sid,)).fetchone()
                if row is None:
                    continue
                removed += int(self.conn.execute("SELECT count(*) FROM messages WHERE session_id = ?",
                                                 (sid,)).fetchone()[0])
                self.drop_search_entries(sid)
                for table in ("file_edits", "chunk_vectors", "messages", "chunks"):
                    where = ("chunk_id IN (SELECT id FROM chunks WHERE session_id = ?)"
                             if table == "chunk_vectors" else "session_id = ?")
                    self.conn.execute(f"DELETE FROM {table} WHERE {where}", (sid,))
                self.conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))
                if row[0]:
                    self.conn.execute("DELETE FROM ingest_files WHERE path = ?", (row[0],))
            if session_ids:
                version = str(self.vector_versions()[0] + 1)
                self.conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    [("chunk_vectors_version", version), ("chunk_vectors_reset", version)])
        return removed

    def drop_search_entries(self, session_id: str) -> None:
        """The full-text entries of a session's chunks (contentless: deleted by rowid)."""
        self.conn.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks "
                          "WHERE session_id = ?)", (session_id,))

    def session(self, session_id: str) -> SessionRow | None:
        r = self.conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return cast(SessionRow, dict(r)) if r else None

    def stats(self) -> dict[str, int]:
        q = self.conn.execute
        return {
            "sessions": int(q("SELECT count(*) FROM sessions").fetchone()[0]),
            "messages": int(q("SELECT count(*) FROM messages").fetchone()[0]),
            "chunks": int(q("SELECT count(*) FROM chunks").fetchone()[0]),
            "file_edits": int(q("SELECT count(*) FROM file_edits").fetchone()[0]),
            "files": int(q("SELECT count(*) FROM ingest_files").fetchone()[0]),
        }
