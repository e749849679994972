"""Conversations, corrections, session context, analysis runs and tokens on Postgres: the
SQLite backend's code where portable, and Postgres's SQL where not (``ON CONFLICT``,
``RETURNING``, ``string_agg``, JSON paths, the quoted ``"offset"`` column, tsvector search)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from lore.models import RULE_KINDS
from lore.store.postgres.db import atomic, chunks
from lore.store.postgres.lessons import TS_CONFIG, tsquery, vector_bytes, vector_value
from lore.store.postgres.migrations import CHUNK_VECTOR_DIMS
from lore.store.rows import (
    AnalysisRun,
    ContextRule,
    LessonActivity,
    RunSummary,
    SessionStart,
)
from lore.store.sqlite.analysis import AnalysisTables
from lore.store.sqlite.conversations import ConversationTables
from lore.store.sqlite.corrections import CorrectionTables
from lore.store.sqlite.search import prune_terms
from lore.store.sqlite.sessions import SessionTables
from lore.store.sqlite.tokens import TokenTables

_RULE_KINDS = "(" + ", ".join(f"'{k}'" for k in RULE_KINDS) + ")"
# How deep the HNSW index is searched for the chunks nearest a query (hnsw.ef_search), and
# for a project's (pgvector 0.6's deepest: the other projects' rows are filtered out after
# the search). Chosen by bench/postgres_scale_bench.py for recall@10 >= 0.98.
EF_SEARCH = 400
PROJECT_EF_SEARCH = 1000
_DISTANCE = (f"(v.embedding::vector({CHUNK_VECTOR_DIMS})) <=> ?::vector({CHUNK_VECTOR_DIMS}) "
             f"AS d FROM chunk_vectors v WHERE vector_dims(v.embedding) = {CHUNK_VECTOR_DIMS}")
# The expression and the condition of the index, so that the planner can use it.
NEAREST = f"SELECT v.chunk_id, {_DISTANCE} ORDER BY d LIMIT ?"
NEAREST_IN_PROJECT = (f"SELECT a.chunk_id, a.d FROM (SELECT v.chunk_id, {_DISTANCE} "
                      "ORDER BY d LIMIT ?) a JOIN chunks c ON c.id = a.chunk_id "
                      "WHERE c.project = ? ORDER BY a.d, a.chunk_id LIMIT ?")
_OCCURRENCES = "coalesce((l.metadata::jsonb #>> '{learning,occurrences}')::numeric, 1)"


class PGConversationTables(ConversationTables):
    """Imported transcripts on Postgres (implements ``ConversationStore``)."""

    def drop_search_entries(self, session_id: str) -> None:
        self.conn.execute("DELETE FROM chunks_fts WHERE chunk_id IN (SELECT id FROM chunks "
                          "WHERE session_id = ?)", (session_id,))

    def refresh_session(self, session_id: str) -> None:
        self.conn.execute(
            "UPDATE sessions SET started_at = m.first, ended_at = m.last, message_count = m.n, "
            "speakers = m.speakers FROM (SELECT min(timestamp) AS first, max(timestamp) AS last, "
            "count(*) AS n, coalesce(string_agg(DISTINCT speaker, ' ') FILTER (WHERE speaker "
            "IS NOT NULL AND chunk_id IS NOT NULL), '') AS speakers FROM messages "
            "WHERE session_id = ?) m WHERE id = ?", (session_id, session_id))

    def insert_chunk(self, session_id: str, project: str | None, seqs: Sequence[int],
                     started: str | None, ended: str | None, speakers: str, text: str) -> int:
        chunk_id = int(self.conn.execute(
            "INSERT INTO chunks (session_id, project, first_seq, last_seq, started_at, ended_at, "
            "speakers, text, content_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '') RETURNING id",
            (session_id, project, min(seqs), max(seqs), started, ended, speakers, text),
        ).fetchone()[0])
        self.conn.execute("UPDATE messages SET chunk_id = ? WHERE seq = ANY(?)",
                          (chunk_id, list(seqs)))
        return chunk_id

    def set_context(self, chunk_id: int, before: Sequence[str], after: Sequence[str],
                    date_words: str, embed_hash: str) -> None:
        self.conn.execute(
            "UPDATE chunks SET ctx_before = ?, ctx_after = ?, content_hash = ? WHERE id = ?",
            (json.dumps(list(before)), json.dumps(list(after)), embed_hash, chunk_id))
        self.index_chunk(chunk_id, date_words, "\n".join([*before, *after]))

    def index_chunk(self, chunk_id: int, date_words: str, context: str) -> None:
        """A chunk's tsvector: its text (A), the date in words (B), neighbouring turns (C)."""
        self.conn.execute(
            "INSERT INTO chunks_fts (chunk_id, doc) SELECT c.id, "
            f"setweight(to_tsvector('{TS_CONFIG}', c.text), 'A') || "
            f"setweight(to_tsvector('{TS_CONFIG}', ?), 'B') || "
            f"setweight(to_tsvector('{TS_CONFIG}', ?), 'C') FROM chunks c WHERE c.id = ? "
            "ON CONFLICT (chunk_id) DO UPDATE SET doc = excluded.doc",
            (date_words, context, chunk_id))

    def put_vectors(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        with atomic(self.conn):
            version = int(self.conn.execute(
                "INSERT INTO meta (key, value) VALUES ('chunk_vectors_version', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + 1)::text "
                "RETURNING value").fetchone()[0])
            self.conn.executemany(
                "INSERT INTO chunk_vectors (chunk_id, content_hash, version, embedding) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (chunk_id) DO UPDATE SET "
                "content_hash = excluded.content_hash, version = excluded.version, "
                "embedding = excluded.embedding",
                [(cid, h, version, vector_value(blob)) for cid, h, blob in rows])

    def vectors_since(self, version: int) -> list[tuple[int, bytes]]:
        return [(r[0], vector_bytes(r[1])) for r in self.conn.execute(
            "SELECT chunk_id, embedding FROM chunk_vectors WHERE version > ? ORDER BY chunk_id",
            (version,), binary=True)]

    def vectors_for(self, ids: Sequence[int]) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        for chunk in chunks(list(ids)):
            out += [(r[0], vector_bytes(r[1])) for r in self.conn.execute(
                "SELECT chunk_id, embedding FROM chunk_vectors WHERE chunk_id = ANY(?)",
                (chunk,), binary=True)]
        return out

    def chunks_needing_vectors(self, limit: int | None = None) -> list[
            tuple[int, str, str, str, str]]:
        return [(r[0], r[1], r[2], r[3], r[4]) for r in self.conn.execute(
            "SELECT c.id, c.text, c.ctx_before, c.ctx_after, c.content_hash FROM chunks c "
            "LEFT JOIN chunk_vectors v ON v.chunk_id = c.id "
            "WHERE v.chunk_id IS NULL OR v.content_hash <> c.content_hash ORDER BY c.id "
            "LIMIT ?", (limit,))]  # LIMIT NULL: all

    def vectors_page(self, after: int, limit: int) -> list[tuple[int, bytes]]:
        return [(r[0], vector_bytes(r[1])) for r in self.conn.execute(
            "SELECT chunk_id, embedding FROM chunk_vectors WHERE chunk_id > ? ORDER BY chunk_id "
            "LIMIT ?", (after, limit), binary=True)]

    def in_project(self, ids: Sequence[int], project: str) -> set[int]:
        out: set[int] = set()
        for part in chunks(list(ids)):
            out.update(r[0] for r in self.conn.execute(
                "SELECT id FROM chunks WHERE id = ANY(?) AND project = ?", (part, project)))
        return out

    def nearest(self, query: bytes, k: int, project: str | None) -> list[tuple[int, float]]:
        """The server answers: (chunk id, cosine similarity) best first, within one project
        when given (no index file beside a server's database). The default model's vectors
        are found through the HNSW index (migration 17) searched ``EF_SEARCH`` deep; a
        project's by the same search ``PROJECT_EF_SEARCH`` deep, filtered to the project, and
        exactly when that leaves fewer than ``k`` (a small project, or a query whose
        neighbours are in other projects). Another model's vectors are scanned exactly."""
        vec = vector_value(query)
        if len(vec) != CHUNK_VECTOR_DIMS:
            return self._exact(vec, k, project)
        with atomic(self.conn):
            if project is None:
                self.conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, min(k, 1000))}")
                return _similar(self.conn.execute(NEAREST, (vec, k)).fetchall())
            self.conn.execute(f"SET LOCAL hnsw.ef_search = {PROJECT_EF_SEARCH}")
            rows = self.conn.execute(NEAREST_IN_PROJECT,
                                     (vec, PROJECT_EF_SEARCH, project, k)).fetchall()
        return _similar(rows) if len(rows) >= k else self._exact(vec, k, project)

    def _exact(self, vec: Any, k: int, project: str | None) -> list[tuple[int, float]]:
        """Every vector (of the project) compared: the order an index approximates."""
        scope, params = ("JOIN chunks c ON c.id = v.chunk_id WHERE c.project = ? ",
                         [project]) if project is not None else ("", [])
        return _similar(self.conn.execute(
            f"SELECT v.chunk_id, v.embedding <=> ? AS d FROM chunk_vectors v {scope}"
            "ORDER BY d, v.chunk_id LIMIT ?", [vec, *params, k]).fetchall())

    def keyword_search(self, terms: Sequence[str], weights: tuple[float, float, float, float],
                       limit: int, project: str | None,
                       max_postings: int) -> list[tuple[int, float]]:
        """(chunk id, -rank) best first; weights (text, speakers, date, context): the
        speakers are not searched, as on SQLite. The rarest terms are kept as on SQLite
        (``prune_terms``), counted by the planner's estimate rather than by reading every
        match. When even they match more than ``max_postings`` chunks, only the matches among
        the newest chunks are ranked, a span chosen to hold about ``max_postings`` of them:
        such words weigh little, and reading and ranking every match is what grows with the
        database (docs/benchmarks.md)."""
        if not terms:
            return []
        estimates = self._term_estimates(terms)
        kept = prune_terms(terms, estimates, max_postings) if len(terms) > 1 else list(terms)
        matched = sum(n for t, n in zip(terms, estimates, strict=True) if t in kept)
        query, qparams = tsquery(kept)
        text_w, _, date_w, ctx_w = weights
        top = max(text_w, date_w, ctx_w, 1e-9)
        w = f"'{{0.0, {ctx_w / top:.6f}, {date_w / top:.6f}, {text_w / top:.6f}}}'"
        scope, sparams = ("JOIN chunks c ON c.id = f.chunk_id AND c.project = ? ",
                          [project]) if project is not None else ("", [])
        newest, nparams = "", []
        if matched > max_postings:
            last = int(self.conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
            newest, nparams = "AND f.chunk_id > ? ", [last - max_postings * last // matched]
        sql = (f"SELECT f.chunk_id, -ts_rank_cd({w}, f.doc, q.q) AS s FROM (SELECT {query} AS q) "
               f"q, chunks_fts f {scope}WHERE f.doc @@ q.q {newest}ORDER BY s, f.chunk_id LIMIT ?")
        with atomic(self.conn):
            # The keyword index's matches intersected with the span's ids, then read: not the
            # newest rows read one by one, each tested (2.5 times slower at 100,000).
            self.conn.execute("SET LOCAL enable_indexscan = off")
            return [(r[0], float(r[1])) for r in self.conn.execute(
                sql, [*qparams, *sparams, *nparams, limit])]

    def _term_estimates(self, terms: Sequence[str]) -> list[int]:
        """The chunks each term matches, as the planner estimates them from the statistics
        ANALYZE keeps (a fraction of a millisecond; counting a common word reads all its
        rows). Pruning needs only the order of magnitude."""
        out = []
        for t in terms:
            q, qp = tsquery([t])
            plan = self.conn.execute(
                f"EXPLAIN (FORMAT JSON) SELECT 1 FROM chunks_fts WHERE doc @@ {q}", qp
            ).fetchone()[0]
            out.append(int(plan[0]["Plan"]["Plan Rows"]))
        return out

class PGCorrectionTables(CorrectionTables):
    """Captured messages and their verdicts on Postgres (implements ``CorrectionStore``)."""

    def learned_rule_ids(self) -> list[str]:
        """Every lesson whose metadata has a 'learning' entry (not JSON null, as on SQLite)."""
        return [r[0] for r in self.conn.execute(
            "SELECT id FROM lessons WHERE jsonb_typeof(metadata::jsonb -> 'learning') <> 'null'")]

    FIRST_CORRECTIONS = ("SELECT DISTINCT ON (session_id) session_id, project, at FROM corrections "
                         "WHERE session_id IS NOT NULL ORDER BY session_id, at")

    def sessions_mentioning(self, term: str) -> set[str]:
        return {r[0] for r in self.conn.execute(
            "SELECT DISTINCT session_id FROM messages WHERE strpos(lower(text), ?) > 0 "
            "AND injected = 0", (term.casefold(),))}


class PGSessionTables(SessionTables):
    """The SessionStart context's queries on Postgres (implements ``SessionStore``)."""

    def rules_and_preferences(self, project: str | None, limit: int, status: str = "active",
                              min_seen: int = 1) -> list[ContextRule]:
        vis, who = self._visible()
        return [cast(ContextRule, dict(r)) for r in self.conn.execute(
            "SELECT l.id, l.title, l.content, l.kind, l.project, l.pref_context, l.pref_rejected, "
            "l.pref_preferred, l.pref_reasoning, l.score, c.ordinal, "
            "(l.metadata::jsonb -> 'learning')::text AS learning FROM lessons l "
            "JOIN confidence_levels c ON c.name = l.confidence "
            f"WHERE l.status = ? AND l.kind IN {_RULE_KINDS} "
            "AND (l.project IS NULL OR l.project = ?) "
            f"AND {_OCCURRENCES} >= ? "
            f"{vis}ORDER BY (l.project IS NOT NULL) DESC, coalesce(l.score, c.ordinal / 5.0) DESC, "
            "c.ordinal DESC, l.usage_count DESC, l.updated_at DESC "
            "LIMIT ?", (status, project, min_seen, *who, limit))]



class PGAnalysisTables(AnalysisTables):
    """Session starts and analysis runs on Postgres (implements ``AnalysisStore``)."""

    def lesson_activity(self, since: str) -> list[LessonActivity]:
        """As on SQLite, where json_extract reads a JSON null as NULL."""
        learning = "nullif(metadata::jsonb -> 'learning', 'null'::jsonb)"
        rows = self.conn.execute(
            "SELECT id, title, kind, status, project, source, created_at, "
            f"nullif({learning} -> 'review', 'null'::jsonb)::text AS review, "
            f"{learning} ->> 'rejected_reason' AS rejected_reason "
            "FROM lessons WHERE (created_at >= ? OR updated_at >= ?) "
            f"AND {learning} IS NOT NULL ORDER BY created_at, id", (since, since)).fetchall()
        return [{"id": r[0], "title": r[1], "kind": r[2], "status": r[3], "project": r[4],
                 "source": r[5], "created_at": r[6], "review": json.loads(r[7]) if r[7] else None,
                 "rejected_reason": r[8]} for r in rows]

    def run_summary(self, project: str | None) -> RunSummary:
        where, params = ("WHERE project = ?", [project]) if project else ("", [])
        and_ = "AND" if project else "WHERE"
        seen = self.conn.execute(
            "SELECT count(*) FROM (SELECT session_id FROM analysis_sessions "
            + ("WHERE project = ? " if project else "")
            + "UNION SELECT session_id FROM analysis_runs "
            f"{where} {and_} session_id IS NOT NULL) s", params * 2).fetchone()[0]
        q = self.conn.execute
        outcomes = {r[0]: r[1] for r in q(
            f"SELECT outcome, count(*) FROM analysis_runs {where} GROUP BY outcome", params)}
        skipped = {r[0]: r[1] for r in q(
            f"SELECT reason, count(*) FROM analysis_runs {where} {and_} outcome = 'skipped' "
            "GROUP BY reason ORDER BY count(*) DESC", params)}
        totals = q(f"SELECT coalesce(sum(created), 0), coalesce(sum(reinforced), 0) "
                   f"FROM analysis_runs {where}", params).fetchone()
        last = q(f"SELECT * FROM analysis_runs {where} ORDER BY id DESC LIMIT 1", params).fetchone()
        error = q(f"SELECT at, error FROM analysis_runs {where} {and_} error IS NOT NULL "
                  "ORDER BY id DESC LIMIT 1", params).fetchone()
        # No rowid here: sessions that started in the same instant are ordered by id.
        start = q("SELECT session_id, project, started_at, start_commit, start_branch, "
                  "start_git FROM analysis_sessions " + ("WHERE project = ? " if project else "")
                  + "ORDER BY started_at DESC, session_id DESC LIMIT 1", params).fetchone()
        return {"sessions_seen": int(seen), "outcomes": outcomes, "skipped_by_reason": skipped,
                "last_session_start": cast(SessionStart, dict(start)) if start else None,
                "created": int(totals[0]), "reinforced": int(totals[1]),
                "last_run": cast(AnalysisRun, {**dict(last),
                                               "lesson_ids": json.loads(last["lesson_ids"])})
                if last else None,
                "last_error": {"at": error[0], "error": error[1]} if error else None}


class PGTokenTables(TokenTables):
    """Access tokens on Postgres: the SQLite backend's SQL is portable as it is."""


def _similar(rows: Sequence[Any]) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) from (chunk id, cosine distance) rows."""
    return [(int(r[0]), 1.0 - float(r[1])) for r in rows]
