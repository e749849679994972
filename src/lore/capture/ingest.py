"""Transcripts into conversation memory: import incrementally, chunk, keep the agent's edits.

A file is read from where the last import stopped. A file that was rewritten (its
first 4 KiB, or the 4 KiB before the old offset, changed, or it shrank) is read again
from the start; messages are unique by uuid, so nothing is stored twice. Chunks are
consecutive turns of one session, about ``CHUNK_CHARS`` characters, never splitting a
turn. Each batch of messages is written in one transaction of the store.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.capture.reading import Part, ReadingProcess, edit_row, read_ahead
from lore.embed import embed_text
from lore.home import device_id
from lore.ids import now
from lore.normalize import clip_words, date_words, project_root
from lore.redact import redact
from lore.store import Store
from lore.store.protocol import FileState
from lore.store.rows import SessionRow

if TYPE_CHECKING:
    from lore.capture.transcripts import FileEdit, Turn

CHUNK_CHARS = 2000  # about 500 tokens
COMMIT_EVERY = 2000  # messages per transaction: bounds memory and the WAL on huge files
PROCESS_BYTES = 8 << 20  # an import reading this much parses in a second process
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
    background: int = 0  # chunks left to the background worker to embed
    sessions: set[str] = field(default_factory=set)
    own_calls: int = 0  # transcripts of Lore's own model calls, left out
    purged: int = 0  # sessions of Lore's own model calls imported before, removed

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files, "unchanged": self.unchanged, "rewritten": self.rewritten,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "messages": self.messages, "duplicates": self.duplicates, "chunks": self.chunks,
            "edits": self.edits, "malformed_lines": self.malformed,
            "unknown_records": self.unknown, "embedded": self.embedded,
            "left_to_embed": self.background,
            "sessions": len(self.sessions),
            "own_model_calls": self.own_calls, "own_sessions_removed": self.purged,
        }


def default_roots() -> list[Path]:
    base = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    return [base / "projects"]


OWN_CALL = "Lore's own model call"


def discover(paths: Sequence[Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """Every transcript file under the given paths, and the paths that could not be used
    (transcripts of Lore's own model calls among them, with the reason :data:`OWN_CALL`)."""
    from lore.llm.own import own_transcript

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
    own = [f for f in files if own_transcript(f)]
    problems += [(str(f), OWN_CALL) for f in own]
    return [f for f in files if f not in set(own)], problems


class Ingest:
    """Transcript files and hand-made sessions into one store's conversation tables."""

    def __init__(self, store: Store, context_turns: int) -> None:
        self.store = store
        self.tables = store.conversations
        self.context_turns = context_turns

    @property
    def device(self) -> str:
        """The device stamped on the sessions written here: the home's id, as the store was
        opened with it (:func:`lore.home.device_id` for a store opened without one)."""
        return self.store.who[1] or device_id()

    def files(self, paths: Sequence[Path], report: IngestReport,
              progress: Any = None) -> None:
        """Import every transcript under ``paths``; ``progress`` hears (kilobytes read, of
        kilobytes to read) after each batch. A large import is read, parsed and redacted on
        the second core, in a process of its own, every file ahead of the writer
        (:mod:`lore.capture.reading`)."""
        files, skipped = discover(paths)
        own = [Path(p) for p, why in skipped if why == OWN_CALL]
        report.skipped = [(p, why) for p, why in skipped if why != OWN_CALL]
        report.own_calls = len(own)
        report.purged = self.purge_own(own)
        sizes = [_size(f) for f in files]
        total = sum(sizes) // 1024
        plans = [(path, size, self._plan(path, report)) for path, size in zip(files, sizes,
                                                                              strict=True)]
        reading = ReadingProcess() if sum(sizes) >= PROCESS_BYTES else None
        try:
            if reading is not None:
                reading.submit([(p.path, p.offset) for _, _, p in plans if p is not None],
                               COMMIT_EVERY)
            before = 0
            for path, size, plan in plans:
                def step(offset: int, base: int = before) -> None:
                    if progress:
                        progress(min((base + offset) // 1024, total), total)

                if plan is not None:
                    parts = (reading.next_file() if reading is not None
                             else read_ahead(path, plan.offset, COMMIT_EVERY))
                    self._write(plan, parts, report, step)
                before += size
                if progress:
                    progress(min(before // 1024, total), total)
        finally:
            if reading is not None:
                reading.close()

    def purge_own(self, transcripts: Sequence[Path]) -> int:
        """Remove the sessions of Lore's own model calls imported before they were told apart:
        those read from ``transcripts``, and those that ran in the temporary folder and began
        with Lore's prompt (a transcript Claude Code has since deleted), with the messages a
        learning pass captured from them that no verdict settled yet.
        Returns how many sessions were removed."""
        from lore.llm.own import own_session, temp_folders

        ids = {sid for path in transcripts
               for sid, _ in self.tables.sessions_of(source_file=str(path.resolve()))}
        for folder in temp_folders():
            ids |= {sid for sid, title in self.tables.sessions_of(project=folder)
                    if own_session(folder, title)}
        if ids:
            with self.store.atomic():
                self.tables.delete_sessions(sorted(ids))
                # What a learning pass captured from them must never reach the judge either.
                self.store.corrections.drop_unsettled(sorted(ids))
        return len(ids)

    def _plan(self, path: Path, report: IngestReport) -> _Plan | None:
        """Where to read ``path`` from, or None (not a transcript, unreadable, unchanged)."""
        from lore.capture.readers import reader_for

        reader = reader_for(path)
        if reader is None:
            report.skipped.append((str(path), "not a transcript format Lore reads"))
            return None
        key = str(path.resolve())
        state = self.tables.file_state(key)
        try:
            size = path.stat().st_size
            # Hash only what was read last time: a growing file keeps its head hash.
            head = _hash_at(path, 0, min(HASH_SPAN, state.offset if state else HASH_SPAN))
        except OSError as exc:
            report.skipped.append((str(path), f"cannot read: {exc.strerror or exc}"))
            return None
        offset = 0
        if state is not None:
            same = (state.head_hash == head and size >= state.offset
                    and _hash_at(path, max(0, state.offset - HASH_SPAN), min(HASH_SPAN, state.offset))
                    == state.tail_hash)
            if same and size == state.offset:
                report.unchanged += 1
                return None
            if same:
                offset = state.offset
            else:
                report.rewritten += 1
        return _Plan(path, key, reader.agent, size, offset)

    def _write(self, plan: _Plan, parts: Iterable[Part], report: IngestReport,
               progress: Callable[[int], None] | None) -> None:
        report.files += 1
        batch = _Batch(self, plan.agent, plan.key)
        try:
            for part in parts:
                batch.commit(part, plan.size, report)
                if progress and not part.last:
                    progress(part.end_offset)
        except OSError as exc:
            # The batch in hand was never written; the ones before it stay, with the offset
            # they reached, so the next import resumes there.
            report.skipped.append((str(plan.path), f"cannot read: {exc.strerror or exc}"))

    def add_turns(self, session_id: str, agent: str, project: str | None,
                  turns: Sequence[tuple[str, str, str, str | None]], *, per_turn: bool = False,
                  title: str | None = None) -> int:
        """Store already-parsed turns (uuid, speaker, text, timestamp) as one session.

        ``per_turn`` makes every turn its own chunk (the evaluation protocol's unit).
        """
        with self.store.atomic():
            self.tables.upsert_session(session_id, agent, project, self.device, None, None, title)
            rows = []
            for uuid, speaker, raw, ts in turns:
                text = redact(raw)
                seq = self.tables.insert_message({
                    "uuid": uuid, "session_id": session_id, "parent_uuid": None, "role": "user",
                    "speaker": speaker, "text": text, "tool_calls": "[]", "timestamp": ts,
                    "is_sidechain": 0, "agent_id": None, "is_meta": 0, "injected": 0})
                if seq is not None:
                    rows.append((seq, speaker, text, ts))
            made = self.chunk(session_id, project, rows, 1 if per_turn else CHUNK_CHARS)
            self.tables.refresh_session(session_id)
        return made

    def record_edits(self, session_id: str, project: str | None, transcript: str | None,
                     edits: Sequence[FileEdit]) -> int:
        """What the agent wrote (file, old and new text) as a hook saw it, for silent fixes."""
        with self.store.atomic():
            self.tables.upsert_session(session_id, "claude-code", project, self.device, None,
                                       transcript, None)
            for e in edits:
                self.tables.insert_edit(edit_row(e, succeeded=1))
        return len(edits)

    def chunk(self, session_id: str, project: str | None,
              rows: Sequence[tuple[int, str, str, str | None]], max_chars: int) -> int:
        made = []
        for group in _groups(rows, max_chars):
            text = "\n".join(body for _, _, body, _ in group)
            speakers = " ".join(dict.fromkeys(s for _, s, _, _ in group if s))
            stamps = [ts for *_, ts in group if ts]
            made.append(self.tables.insert_chunk(
                session_id, project, [r[0] for r in group], min(stamps) if stamps else None,
                max(stamps) if stamps else None, speakers, text))
        if made:
            self.contextualise(session_id, min(made))
        return len(made)

    def contextualise(self, session_id: str, first_new: int) -> None:
        """Give new chunks, and the chunks just before them, their neighbouring turns."""
        n = self.context_turns
        for chunk in self.tables.chunks_to_contextualise(session_id, first_new, n):
            before, after = self.tables.turns_around(session_id, chunk["first_seq"],
                                                     chunk["last_seq"], n)
            embedded = embed_text(chunk["text"], before, after)
            self.tables.set_context(chunk["id"], before, after, date_words(chunk["started_at"]),
                                    hashlib.sha256(embedded.encode()).hexdigest())

    def texts_to_embed(self, limit: int | None = None) -> list[tuple[int, str, str]]:
        """(chunk id, text to embed, its hash) of chunks without an up-to-date vector, oldest
        first, at most ``limit``."""
        return [(cid, embed_text(text, json.loads(before), json.loads(after)), h)
                for cid, text, before, after, h in self.tables.chunks_needing_vectors(limit)]


@dataclass(frozen=True, slots=True)
class _Plan:
    path: Path
    key: str  # the resolved path, as file states are kept
    agent: str
    size: int
    offset: int  # where the read starts


class _Batch:
    """The parts of one file, each written in one transaction."""

    def __init__(self, ingest: Ingest, agent: str, path: str) -> None:
        self.ingest = ingest
        self.agent = agent
        self.path = path
        self.projects: dict[str, str | None] = {}

    def commit(self, part: Part, size: int, report: IngestReport) -> None:
        from lore.capture.transcripts import FileEdit

        tables = self.ingest.tables
        rows: dict[str, list[tuple[int, str, str, str | None]]] = {}
        messages = 0
        with self.ingest.store.atomic():
            for item, prepared in part.items:
                if isinstance(item, FileEdit):
                    tables.upsert_session(item.session_id, self.agent, None, self.ingest.device, None,
                                          self.path, None)
                    tables.insert_edit(prepared)
                    report.edits += 1
                    continue
                messages += self._message(item, prepared, rows, report)
            for sid, turns in rows.items():
                project = self.projects.get(sid) or _project_of(tables.session(sid))
                report.chunks += self.ingest.chunk(sid, project, turns, CHUNK_CHARS)
                tables.refresh_session(sid)
            path = Path(self.path)
            end = part.end_offset
            state = FileState(self.path, self.agent, size, end, _hash_at(path, 0, min(HASH_SPAN, end)),
                              _hash_at(path, max(0, end - HASH_SPAN), min(HASH_SPAN, end)))
            tables.save_file_state(state, now(), messages, part.malformed, part.unknown)
        report.malformed += part.malformed
        report.unknown += part.unknown

    def _message(self, t: Turn, prepared: tuple[str, str],
                 rows: dict[str, list[tuple[int, str, str, str | None]]],
                 report: IngestReport) -> int:
        tables = self.ingest.tables
        text, tool_calls = prepared  # redacted by reading.prepare
        if t.session_id not in self.projects:
            title = clip_words(text, 120) if t.role == "user" and not t.is_meta else None
            project = project_root(t.cwd)  # the repository, as every face scopes a search
            tables.upsert_session(t.session_id, self.agent, project, self.ingest.device,
                                  t.git_branch, self.path, title)
            self.projects[t.session_id] = project
        seq = tables.insert_message({
            "uuid": t.uuid, "session_id": t.session_id, "parent_uuid": t.parent_uuid,
            "role": t.role, "speaker": t.role, "text": text,
            "tool_calls": tool_calls, "timestamp": t.timestamp,
            "is_sidechain": int(t.is_sidechain), "agent_id": t.agent_id, "is_meta": int(t.is_meta),
            "injected": int(t.injected)})
        if seq is None:
            report.duplicates += 1
            return 0
        report.messages += 1
        report.sessions.add(t.session_id)
        if text.strip() and not t.is_meta and not t.injected:
            rows.setdefault(t.session_id, []).append((seq, t.role, text, t.timestamp))
        return 1


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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _hash_at(path: Path, start: int, length: int) -> str:
    with path.open("rb") as fh:
        fh.seek(start)
        return hashlib.sha256(fh.read(length)).hexdigest()


def _project_of(session: SessionRow | None) -> str | None:
    """A stored session's project (None: no project, or no such session)."""
    return session["project"] if session else None
