"""Conversation memory: import transcripts incrementally, chunk them, search past sessions.

A file is read from where the last import stopped. A file that was rewritten (its
first 4 KiB, or the 4 KiB before the old offset, changed, or it shrank) is read again
from the start; messages are unique by uuid, so nothing is stored twice. Chunks are
consecutive turns of one session, about ``CHUNK_CHARS`` characters, never splitting a
turn.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import socket
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lore import normalize
from lore.errors import InvalidInput
from lore.ids import now, parse_time
from lore.learn.redact import redact
from lore.search.snippet import snippet
from lore.search.vectors import MemoryIndex
from lore.store import atomic
from lore.store.conversations import (
    ConversationStore,
    FileState,
    date_words,
    embed_text,
    tool_calls_json,
)

if TYPE_CHECKING:
    from lore.api import Lore, Progress
    from lore.capture.transcripts import FileEdit, ParseStats, Turn

CHUNK_CHARS = 2000  # about 500 tokens
COMMIT_EVERY = 2000  # messages per transaction: bounds memory and the WAL on huge files
HASH_SPAN = 4096


@dataclass(slots=True)
class IngestReport:
    files: int = 0
    unchanged: int = 0
    rewritten: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    messages: int = 0
    duplicates: int = 0
    chunks: int = 0
    edits: int = 0
    malformed: int = 0
    unknown: int = 0
    embedded: int = 0
    sessions: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files, "unchanged": self.unchanged, "rewritten": self.rewritten,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "messages": self.messages, "duplicates": self.duplicates, "chunks": self.chunks,
            "edits": self.edits, "malformed_lines": self.malformed,
            "unknown_records": self.unknown, "embedded": self.embedded,
            "sessions": len(self.sessions),
        }


@dataclass(frozen=True, slots=True)
class ConversationHit:
    chunk_id: int
    session_id: str
    project: str | None
    date: str | None
    speakers: str
    snippet: str
    score: float
    parts: dict[str, Any]

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        out = {"chunk_id": self.chunk_id, "session_id": self.session_id, "project": self.project,
               "date": self.date, "speakers": self.speakers, "snippet": self.snippet,
               "score": round(self.score, 6)}
        if explain:
            out["explain"] = self.parts
        return out


def device_id() -> str:
    return os.environ.get("LORE_DEVICE") or socket.gethostname() or "unknown"


def default_roots() -> list[Path]:
    base = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    return [base / "projects"]


def discover(paths: Sequence[Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """Every transcript file under the given paths, and the paths that could not be used."""
    files: list[Path] = []
    problems: list[tuple[str, str]] = []
    for p in paths:
        if p.is_dir():
            try:
                files += sorted(f for f in p.rglob("*.jsonl") if f.is_file())
            except OSError as exc:
                problems.append((str(p), f"cannot list: {exc.strerror or exc}"))
        elif p.is_file():
            files.append(p)
        else:
            problems.append((str(p), "no such file or folder"))
    return files, problems


class Conversations:
    """Conversation memory of one database (an attribute of :class:`lore.api.Lore`)."""

    def __init__(self, lore: Lore) -> None:
        self.lore = lore
        self.store = ConversationStore(lore.conn)
        self.vectors = MemoryIndex()

    # ---- import -----------------------------------------------------------------------
    def ingest(self, paths: Sequence[Path], *, embed: bool = True,
               progress: Progress | None = None) -> IngestReport:
        report = IngestReport()
        files, report.skipped = discover(paths)
        for i, path in enumerate(files):
            self._ingest_file(path, report)
            if progress:
                progress(i + 1, len(files))
        if embed:
            report.embedded = self.embed_pending()
        return report

    def _ingest_file(self, path: Path, report: IngestReport) -> None:
        from lore.capture.readers import reader_for
        from lore.capture.transcripts import ParseStats

        reader = reader_for(path)
        if reader is None:
            report.skipped.append((str(path), "not a transcript format Lore reads"))
            return
        key = str(path.resolve())
        state = self.store.file_state(key)
        try:
            size = path.stat().st_size
            # Hash only what was read last time: a growing file keeps its head hash.
            head = _hash_at(path, 0, min(HASH_SPAN, state.offset if state else HASH_SPAN))
        except OSError as exc:
            report.skipped.append((str(path), f"cannot read: {exc.strerror or exc}"))
            return
        offset = 0
        if state is not None:
            same = (state.head_hash == head and size >= state.offset
                    and _hash_at(path, max(0, state.offset - HASH_SPAN), min(HASH_SPAN, state.offset))
                    == state.tail_hash)
            if same and size == state.offset:
                report.unchanged += 1
                return
            if same:
                offset = state.offset
            else:
                report.rewritten += 1
        report.files += 1
        stats = ParseStats()
        stats.end_offset = offset
        batch = _Batch(self, reader.agent, key)
        try:
            for item in reader.read(path, offset, stats):
                batch.add(item, report)
                if batch.pending >= COMMIT_EVERY:
                    batch.commit(stats, size, report)
            batch.commit(stats, size, report)
        except OSError as exc:
            if self.lore.conn.in_transaction:
                self.lore.conn.execute("ROLLBACK")
            report.skipped.append((str(path), f"cannot read: {exc.strerror or exc}"))

    def embed_pending(self, progress: Progress | None = None) -> int:
        todo = self.store.chunks_needing_vectors()
        if not todo:
            return 0
        self.lore.check_model()
        texts = [embed_text(t, json.loads(b), json.loads(a)) for _, t, b, a, _ in todo]
        vectors = self.lore._embed(texts, progress)
        self.store.put_vectors([(row[0], row[4], v) for row, v in zip(todo, vectors, strict=True)])
        self.lore._record_model()
        return len(todo)

    def add_turns(self, session_id: str, agent: str, project: str | None,
                  turns: Sequence[tuple[str, str, str, str | None]], *, per_turn: bool = False,
                  title: str | None = None) -> int:
        """Store already-parsed turns (uuid, speaker, text, timestamp) as one session.

        ``per_turn`` makes every turn its own chunk (the evaluation protocol's unit).
        """
        with atomic(self.lore.conn):
            self.store.upsert_session(session_id, agent, project, device_id(), None, None, title)
            rows = []
            for uuid, speaker, raw, ts in turns:
                text = redact(raw)
                seq = self.store.insert_message({
                    "uuid": uuid, "session_id": session_id, "parent_uuid": None, "role": "user",
                    "speaker": speaker, "text": text, "tool_calls": "[]", "timestamp": ts,
                    "is_sidechain": 0, "agent_id": None, "is_meta": 0, "injected": 0})
                if seq is not None:
                    rows.append((seq, speaker, text, ts))
            made = self._chunk(session_id, project, rows, 1 if per_turn else CHUNK_CHARS)
            self.store.refresh_session(session_id)
        return made

    def _chunk(self, session_id: str, project: str | None,
               rows: Sequence[tuple[int, str, str, str | None]], max_chars: int) -> int:
        made = []
        for group in _groups(rows, max_chars):
            text = "\n".join(body for _, _, body, _ in group)
            speakers = " ".join(dict.fromkeys(s for _, s, _, _ in group if s))
            stamps = [ts for *_, ts in group if ts]
            made.append(self.store.insert_chunk(
                session_id, project, [r[0] for r in group], min(stamps) if stamps else None,
                max(stamps) if stamps else None, speakers, text))
        if made:
            self._contextualise(session_id, min(made))
        return len(made)

    def _contextualise(self, session_id: str, first_new: int) -> None:
        """Give new chunks, and the chunks just before them, their neighbouring turns."""
        n = self.lore.config.conversations.context_turns
        for chunk in self.store.chunks_to_contextualise(session_id, first_new, n):
            before, after = self.store.turns_around(session_id, chunk["first_seq"],
                                                    chunk["last_seq"], n)
            embedded = embed_text(chunk["text"], before, after)
            self.store.set_context(chunk["id"], before, after, date_words(chunk["started_at"]),
                                   hashlib.sha256(embedded.encode()).hexdigest())

    # ---- search -----------------------------------------------------------------------
    def search(self, query: str, *, project: str | None = None, limit: int = 5,
               min_score: float = 0.0, decay: bool | None = None, mode: str = "hybrid",
               now_: datetime | None = None) -> list[ConversationHit]:
        """Chunks ranked by normalised BM25 + weighted cosine, a bonus for the speaker the
        query names, and memory decay (seed 003). docs/conversations.md has the formula."""
        cfg = self.lore.config.conversations
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1 (got {limit})")
        where, params = ("c.project = ?", [project]) if project else ("1", [])
        depth = max(cfg.candidates, limit)
        speakers = self.store.scope_speakers(project)
        terms, named = query_terms(query, speakers)
        keyword: list[tuple[int, float]] = []
        if mode in ("hybrid", "keyword"):
            weights = (cfg.text_weight, 0.0, cfg.date_weight, cfg.context_weight)
            keyword = self.store.keyword_search(terms, weights, depth, where, params,
                                                cfg.keyword_max_postings)
        vector: list[tuple[int, float]] = []
        if mode in ("hybrid", "vector") and self.lore.store.meta("embedding_model") and query.strip():
            self.lore.check_model()
            qvec = np.asarray(self.lore.embedder.embed_query(strip_names(query, speakers)),
                              dtype=np.float32)
            vector = self._vector_search(qvec, depth, where, params)
        return self._fuse(query, keyword, vector, named, limit, min_score,
                          cfg.decay if decay is None else decay, mode, now_ or datetime.now(UTC))

    def _vector_search(self, qvec: np.ndarray, depth: int, where: str,
                       params: list[Any]) -> list[tuple[int, float]]:
        self.vectors.sync(self.store)  # type: ignore[arg-type]
        if where == "1":
            return self.vectors.search(qvec, depth)
        allowed = self.store.chunk_ids(where, params)
        return self.vectors.search(qvec, depth, allowed)

    def _fuse(self, query: str, keyword: list[tuple[int, float]], vector: list[tuple[int, float]],
              named: str | None, limit: int, min_score: float, decay: bool, mode: str,
              at: datetime) -> list[ConversationHit]:
        cfg = self.lore.config.conversations
        # FTS5's bm25 is negative, better is lower: divide by the best to get 0..1.
        best_bm25 = min((s for _, s in keyword), default=-1.0) or -1.0
        kscore = {cid: s / best_bm25 for cid, s in keyword}
        krank = {cid: i + 1 for i, (cid, _) in enumerate(keyword)}
        vscore = dict(vector)
        vrank = {cid: i + 1 for i, (cid, _) in enumerate(vector)}
        kw = cfg.keyword_weight if mode != "vector" else 0.0
        vw = cfg.vector_weight if mode != "keyword" else 0.0
        ids = list(dict.fromkeys([c for c, _ in keyword] + [c for c, _ in vector]))
        rows = self.store.chunk_rows(ids)
        scored = []
        for cid in ids:
            row = rows.get(cid)
            if row is None:
                continue
            relevance = kw * kscore.get(cid, 0.0) + vw * vscore.get(cid, 0.0)
            speaker_bonus = (cfg.named_speaker_bonus
                             if named and mode == "hybrid" and named in row["speakers"].split()
                             else 0.0)
            bonus = 0.0
            if decay and row["ended_at"]:
                age = max((at - parse_time(row["ended_at"])).total_seconds() / 86400, 0.0)
                bonus = cfg.decay_weight * math.exp(-age / cfg.decay_scale_days)
            total = relevance + speaker_bonus + bonus
            if total < min_score:
                continue
            parts = {"keyword_rank": krank.get(cid), "bm25_normalised": kscore.get(cid),
                     "vector_rank": vrank.get(cid), "similarity": vscore.get(cid),
                     "relevance": round(relevance, 6), "speaker_bonus": speaker_bonus,
                     "decay_bonus": round(bonus, 6)}
            scored.append((total, cid, parts))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [
            ConversationHit(cid, rows[cid]["session_id"], rows[cid]["project"],
                            rows[cid]["ended_at"], rows[cid]["speakers"],
                            snippet(rows[cid]["text"], query, 240), total, parts)
            for total, cid, parts in scored[:limit]
        ]

    def context(self, chunk_id: int, before: int = 3, after: int = 3) -> dict[str, Any]:
        """A chunk's turns with the turns around it, to read a hit in its conversation."""
        rows = self.store.chunk_rows([chunk_id])
        if chunk_id not in rows:
            from lore.errors import NotFound

            raise NotFound(f"no conversation chunk {chunk_id}; `lore recall conversations` finds them")
        row = rows[chunk_id]
        return {"chunk_id": chunk_id, "session_id": row["session_id"], "project": row["project"],
                "session": self.store.session(row["session_id"]),
                "messages": self.store.neighbours(chunk_id, before, after)}


class _Batch:
    """Messages of one file between two commits, grouped into chunks per session."""

    def __init__(self, conv: Conversations, agent: str, path: str) -> None:
        self.conv = conv
        self.agent = agent
        self.path = path
        self.pending = 0
        self.rows: dict[str, list[tuple[int, str, str, str | None]]] = {}
        self.projects: dict[str, str | None] = {}
        self.messages = 0
        self.began = False

    def add(self, item: Turn | FileEdit, report: IngestReport) -> None:
        if not self.began:
            self.conv.lore.conn.execute("BEGIN IMMEDIATE")
            self.began = True
        from lore.capture.transcripts import FileEdit

        store = self.conv.store
        if isinstance(item, FileEdit):
            # The file edits feed silent-fix learning: redacted like every message.
            old_text = redact(item.old_text) if item.old_text else item.old_text
            new_text = redact(item.new_text) if item.new_text else item.new_text
            store.upsert_session(item.session_id, self.agent, None, device_id(), None, self.path, None)
            store.insert_edit({
                "session_id": item.session_id, "message_uuid": item.message_uuid, "tool": item.tool,
                "file_path": item.file_path, "file_type": normalize.file_type(Path(item.file_path).suffix)
                or None, "old_text": old_text, "new_text": new_text,
                "timestamp": item.timestamp,
                "succeeded": None if item.succeeded is None else int(item.succeeded)})
            report.edits += 1
            return
        t = item
        # The door for transcripts: messages, tool calls, titles and chunks hold no secret.
        text = redact(t.text)
        if t.session_id not in self.projects:
            title = text[:120] if t.role == "user" and not t.is_meta else None
            store.upsert_session(t.session_id, self.agent, t.cwd, device_id(), t.git_branch,
                                 self.path, title)
            self.projects[t.session_id] = t.cwd
        seq = store.insert_message({
            "uuid": t.uuid, "session_id": t.session_id, "parent_uuid": t.parent_uuid,
            "role": t.role, "speaker": t.role, "text": text,
            "tool_calls": tool_calls_json(t.tool_calls), "timestamp": t.timestamp,
            "is_sidechain": int(t.is_sidechain), "agent_id": t.agent_id, "is_meta": int(t.is_meta),
            "injected": int(t.injected)})
        if seq is None:
            report.duplicates += 1
            return
        report.messages += 1
        report.sessions.add(t.session_id)
        self.messages += 1
        self.pending += 1
        if text.strip() and not t.is_meta and not t.injected:
            self.rows.setdefault(t.session_id, []).append((seq, t.role, text, t.timestamp))

    def commit(self, stats: ParseStats, size: int, report: IngestReport) -> None:
        conv = self.conv
        if not self.began:
            conv.lore.conn.execute("BEGIN IMMEDIATE")
            self.began = True
        for sid, rows in self.rows.items():
            project = self.projects.get(sid) or (conv.store.session(sid) or {}).get("project")
            report.chunks += conv._chunk(sid, project, rows, CHUNK_CHARS)
            conv.store.refresh_session(sid)
        path = Path(self.path)
        end = stats.end_offset
        state = FileState(self.path, self.agent, size, end, _hash_at(path, 0, min(HASH_SPAN, end)),
                          _hash_at(path, max(0, end - HASH_SPAN), min(HASH_SPAN, end)))
        conv.store.save_file_state(state, now(), self.messages, stats.malformed,
                                   sum(stats.unknown_types.values()))
        conv.lore.conn.execute("COMMIT")
        report.malformed += stats.malformed
        report.unknown += sum(stats.unknown_types.values())
        stats.malformed = 0
        stats.unknown_types.clear()
        self.began = False
        self.rows.clear()
        self.pending = 0
        self.messages = 0


# English function words, question framing and contractions: in a conversation they match
# nearly every turn (the LoCoMo ablation: +1.8 recall@5 over the lesson search's shorter list).
STOP = frozenset("""
a an and are as at be by do does for from how i in is it of on or that the this to was what when
where which why with you your we our can should about above after again against all am any because
been before being below between both but could did doing down during each few further had has
have having he her here hers herself him himself his its itself just me more most my myself no nor
not now off once only other ours ourselves out over own same she so some such than their theirs
them themselves then there these they those through too under until up very were while who whom
whose will would yours yourself yourselves s t don isn wasn didn doesn ve ll re d m o y also into
ever
""".split())
_WORDS = re.compile(r"\w+", re.UNICODE)
_TOKENS = re.compile(r"[\w']+|[^\w\s]", re.UNICODE)


def first_names(speakers: Sequence[str]) -> dict[str, str]:
    return {s.split()[0].lower(): s for s in speakers if s.strip()}


def query_terms(query: str, speakers: Sequence[str]) -> tuple[list[str], str | None]:
    """Quoted FTS5 terms without stop words or speaker names, and the one speaker the query
    names (None when it names none or several)."""
    names = first_names(speakers)
    words = [w.lower() for w in _WORDS.findall(query)]
    named = {names[w] for w in words if w in names}
    kept = [w for w in words if w not in STOP and w not in names]
    if not kept:
        kept = [w for w in words if w not in names] or words
    terms = ['"' + w.replace('"', '""') + '"' for w in dict.fromkeys(kept)]
    return terms, (named.pop() if len(named) == 1 else None)


def strip_names(query: str, speakers: Sequence[str]) -> str:
    """The query without the speakers' first names (or their possessives): a name in a
    question pulls the embedding towards the turns where the *other* speaker says it."""
    names = first_names(speakers)
    if not names:
        return query
    return " ".join(t for t in _TOKENS.findall(query) if t.lower().split("'")[0] not in names)


def _groups(rows: Iterable[tuple[int, str, str, str | None]],
            max_chars: int) -> Iterator[list[tuple[int, str, str, str | None]]]:
    group: list[tuple[int, str, str, str | None]] = []
    size = 0
    for row in rows:
        n = len(row[2]) + len(row[1]) + 2
        if group and size + n > max_chars:
            yield group
            group, size = [], 0
        group.append(row)
        size += n
    if group:
        yield group


def _hash_at(path: Path, start: int, length: int) -> str:
    with path.open("rb") as fh:
        fh.seek(start)
        return hashlib.sha256(fh.read(length)).hexdigest()

