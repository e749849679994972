"""The keyword index (contentless FTS5) and the filters of a lesson search, as SQL.

User text reaches FTS5 only through :func:`fts_terms`: every term is quoted. A filter
becomes a WHERE clause over ``lessons l`` with its bound parameters, built here from the
:class:`~lore.models.Filters` each method is given: no SQL leaves the store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from lore.models import Filters
from lore.store.rows import LessonBrief
from lore.store.sqlite.db import Tables, chunks

_STOPWORDS = frozenset(
    "a an and are as at be by do does for from how i in is it of on or that the this to was "
    "what when where which why with you your we our can should".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def fts_terms(text: str) -> list[str]:
    """Any user text as quoted FTS5 terms, stop words dropped (unless nothing else is left).

    Every term is wrapped in double quotes, so operators, parentheses, colons and
    stray quotes in the input are plain text to FTS5 and can never be a syntax error.
    """
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in _STOPWORDS] or words
    return ['"' + w.replace('"', '""') + '"' for w in dict.fromkeys(kept)]


def fts_query(text: str) -> str | None:
    """The terms of :func:`fts_terms` joined by OR; None when the text has no word at all."""
    return " OR ".join(fts_terms(text)) or None


def prune_terms(terms: Sequence[str], counts: Sequence[int], max_postings: int) -> list[str]:
    """Keep the rarest terms while their rows add up to at most ``max_postings`` (BM25 weighs
    frequent terms least, and they are what makes a query scan the whole index)."""
    kept: list[tuple[int, str]] = []
    total = 0
    for n, i, t in sorted((n, i, t) for i, (t, n) in enumerate(zip(terms, counts, strict=True))):
        if n == 0:
            continue
        if kept and total + n > max_postings:
            break
        kept.append((i, t))
        total += n
    return [t for _, t in sorted(kept)] or list(terms[:1])



class KeywordIndex(Tables):
    """FTS5 upkeep, filters as SQL, BM25 search and the columns a result needs."""

    def index_keywords(self, seq: int, lesson_id: str) -> None:
        """Rewrite one lesson's FTS row from its columns and tags (same transaction as the write)."""
        r = self.conn.execute(
            "SELECT title, content, summary, problem_solved, when_to_apply, pref_context, "
            "pref_rejected, pref_preferred, pref_reasoning FROM lessons WHERE seq = ?",
            (seq,),
        ).fetchone()
        tags = " ".join(
            t[0] for t in self.conn.execute(
                "SELECT tag FROM lesson_tags WHERE lesson_id = ?", (lesson_id,)
            )
        )
        body = "\n".join(v for v in tuple(r)[1:] if v)
        self.conn.execute("DELETE FROM lessons_fts WHERE rowid = ?", (seq,))
        self.conn.execute(
            "INSERT INTO lessons_fts (rowid, title, tags, body) VALUES (?, ?, ?, ?)",
            (seq, r[0], tags.replace("-", " "), body),
        )

    def brief(self, seqs: Sequence[int]) -> dict[int, LessonBrief]:
        """The columns a search result needs, for these lessons."""
        out: dict[int, LessonBrief] = {}
        for chunk in chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                "SELECT l.seq, l.id, l.title, l.kind, l.confidence, l.usage_count, "
                "l.updated_at, c.ordinal FROM lessons l "
                "JOIN confidence_levels c ON c.name = l.confidence "
                f"WHERE l.seq IN ({marks})",
                chunk,
            ):
                out[r[0]] = cast(LessonBrief, dict(r))
        return out

    def contents(self, seqs: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for chunk in chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            out.update(self.conn.execute(
                f"SELECT seq, content FROM lessons WHERE seq IN ({marks})", chunk
            ).fetchall())
        return out

    def successors(self, seqs: Sequence[int]) -> dict[int, set[int]]:
        """For each of ``seqs`` that an active lesson supersedes (an edge ``supersedes`` from
        it), the seqs of those successors."""
        out: dict[int, set[int]] = {}
        for chunk in chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            for old, new in self.conn.execute(
                "SELECT o.seq, n.seq FROM edges e JOIN lessons o ON o.id = e.to_id "
                "JOIN lessons n ON n.id = e.from_id "
                f"WHERE e.relation = 'supersedes' AND n.status = 'active' AND o.seq IN ({marks})",
                chunk,
            ):
                out.setdefault(old, set()).add(new)
        return out

    def anti_context_hits(self, seqs: Sequence[int], contexts: Sequence[str]) -> set[int]:
        if not seqs or not contexts:
            return set()
        hits: set[int] = set()
        cmarks = ",".join("?" * len(contexts))
        for chunk in chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            hits.update(
                r[0] for r in self.conn.execute(
                    "SELECT l.seq FROM lessons l JOIN lesson_contexts c ON c.lesson_id = l.id "
                    f"WHERE c.applies = 0 AND c.context IN ({cmarks}) AND l.seq IN ({marks})",
                    [*contexts, *chunk],
                )
            )
        return hits


    # ---- filters ----------------------------------------------------------------------
    def _filter(self, f: Filters, anti_contexts_exclude: bool) -> tuple[str, list[Any]]:
        """A WHERE clause over ``lessons l`` for the filters (``TRUE``: none), and its
        parameters. ``anti_contexts_exclude``: a lesson whose anti-contexts name one of the
        filter's contexts is left out (otherwise ranking demotes it)."""
        where: list[str] = []
        params: list[Any] = []
        if f.statuses:
            where.append(f"l.status IN ({','.join('?' * len(f.statuses))})")
            params += f.statuses
        if f.kinds:
            where.append(f"l.kind IN ({','.join('?' * len(f.kinds))})")
            params += f.kinds
        if f.sources:
            where.append(f"l.source IN ({','.join('?' * len(f.sources))})")
            params += f.sources
        if f.min_confidence:
            where.append(
                "l.confidence IN (SELECT name FROM confidence_levels WHERE ordinal >= "
                "(SELECT ordinal FROM confidence_levels WHERE name = ?))"
            )
            params.append(f.min_confidence)
        if f.project is not None:
            where.append("(l.project IS NULL OR l.project = ?)")
            params.append(f.project)
        if f.tags:
            where.append(
                "l.id IN (SELECT lesson_id FROM lesson_tags WHERE tag IN "
                f"({','.join('?' * len(f.tags))}))"
            )
            params += f.tags
        if f.file_types:
            marks = ",".join("?" * len(f.file_types))
            where.append(
                "(NOT EXISTS (SELECT 1 FROM lesson_file_types t WHERE t.lesson_id = l.id) OR "
                f"l.id IN (SELECT lesson_id FROM lesson_file_types WHERE file_type IN ({marks})))"
            )
            params += f.file_types
        if f.contexts:
            marks = ",".join("?" * len(f.contexts))
            # A lesson with contexts applies only there; one without applies everywhere.
            where.append(
                "(NOT EXISTS (SELECT 1 FROM lesson_contexts c WHERE c.lesson_id = l.id "
                "AND c.applies = 1) OR l.id IN (SELECT lesson_id FROM lesson_contexts WHERE "
                f"applies = 1 AND context IN ({marks})))"
            )
            params += f.contexts
            if anti_contexts_exclude:
                where.append(
                    "l.id NOT IN (SELECT lesson_id FROM lesson_contexts WHERE applies = 0 AND "
                    f"context IN ({marks}))"
                )
                params += f.contexts
        visible, who = self.visible()
        if visible and self.conn.execute(
                f"SELECT 1 FROM lessons l WHERE NOT {visible} LIMIT 1", who).fetchone():
            # Someone else's personal lessons are in this database: keep them out.
            where.append(visible)
            params += who
        return (" AND ".join(where) or "TRUE"), params

    # ---- keyword search ---------------------------------------------------------------
    def keyword_search(
        self, terms: Sequence[str], weights: tuple[float, float, float], limit: int,
        filters: Filters, max_postings: int, narrow: bool = True, *,
        anti_contexts_exclude: bool = False,
    ) -> list[tuple[int, float]]:
        """(seq, bm25) best first among the lessons ``filters`` allows; bm25 is negative, lower
        is better (FTS5 convention). ``narrow`` False: the filters hold a status alone.

        BM25 scores every row that matches any term, so a query full of common words
        costs as much as the corpus is large. Past ``max_postings`` matching rows, the
        most frequent terms are dropped (rarest first are kept): they carry the least
        weight in BM25 anyway, and the cost stays bounded at 100,000 lessons.
        """
        if not terms:
            return []
        if len(terms) > 1:
            terms = self._prune_terms(terms, max_postings)
        match = " OR ".join(terms)
        where, params = self._filter(filters, anti_contexts_exclude)
        if not narrow:
            # Only a status filter: rank without touching the (wide) lessons rows, then
            # drop the few hits in other statuses; join only if that leaves too few.
            hits = [(r[0], r[1]) for r in self.conn.execute(
                "SELECT rowid, bm25(lessons_fts, ?, ?, ?) AS s FROM lessons_fts "
                "WHERE lessons_fts MATCH ? ORDER BY s LIMIT ?", [*weights, match, 2 * limit])]
            keep = self._seqs_where([s for s, _ in hits], where, params)
            kept = [h for h in hits if h[0] in keep][:limit]
            if len(kept) == limit or len(hits) < 2 * limit:
                return kept
        sql = (
            "SELECT f.rowid, bm25(lessons_fts, ?, ?, ?) AS s FROM lessons_fts f "
            "JOIN lessons l ON l.seq = f.rowid "
            f"WHERE lessons_fts MATCH ? AND {where} ORDER BY s LIMIT ?"
        )
        return [(r[0], r[1]) for r in self.conn.execute(sql, [*weights, match, *params, limit])]

    def _prune_terms(self, terms: Sequence[str], max_postings: int) -> list[str]:
        counts = [int(self.conn.execute(
            "SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH ?", (t,)).fetchone()[0])
            for t in terms]
        return prune_terms(terms, counts, max_postings)


    def allowed_seqs(self, filters: Filters, *, anti_contexts_exclude: bool = False) -> list[int]:
        """The seqs of every lesson ``filters`` allows."""
        where, params = self._filter(filters, anti_contexts_exclude)
        return [r[0] for r in self.conn.execute(f"SELECT l.seq FROM lessons l WHERE {where}", params)]

    def seqs_matching(self, seqs: Sequence[int], filters: Filters, *,
                      anti_contexts_exclude: bool = False) -> set[int]:
        """Those of ``seqs`` that ``filters`` allows."""
        return self._seqs_where(seqs, *self._filter(filters, anti_contexts_exclude))

    def _seqs_where(self, seqs: Sequence[int], where: str, params: Sequence[Any]) -> set[int]:
        if where == "TRUE":
            return set(seqs)
        keep: set[int] = set()
        for chunk in chunks(list(seqs)):
            marks = ",".join("?" * len(chunk))
            keep.update(
                r[0] for r in self.conn.execute(
                    f"SELECT l.seq FROM lessons l WHERE l.seq IN ({marks}) AND {where}",
                    [*chunk, *params],
                )
            )
        return keep

