"""Ordered migrations, each in its own transaction, recorded in ``schema_migrations``.

Released migrations are never edited: a change to the schema is a new function
appended to ``MIGRATIONS``. docs/storage.md describes the resulting schema.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from lore.errors import MigrationError, NotALoreDatabase
from lore.extras import package_command
from lore.store.sqlite.db import atomic, driver

APP_ID = "lore"


def run_script(conn: Any, script: str) -> None:
    """Execute statement by statement: ``executescript`` would COMMIT the open transaction."""
    sqlite3 = driver()
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            conn.execute(buffer)
            buffer = ""
    if buffer.strip():
        raise MigrationError(f"incomplete statement in a migration script: {buffer[:200]!r}")


def m001_core(conn: Any) -> None:
    """Lessons in one table with their child tables, edges and tags, the keyword index
    (FTS5), the vectors, the search log, ``meta`` and the reference tables."""
    run_script(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        -- Reference tables: adding a value is an INSERT, not a migration.
        CREATE TABLE confidence_levels (
            name TEXT PRIMARY KEY,
            ordinal INTEGER NOT NULL UNIQUE,
            min_score REAL NOT NULL,          -- a 0..1 learned score maps to the highest level it reaches
            description TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE source_types (
            name TEXT PRIMARY KEY,
            description TEXT NOT NULL DEFAULT '',
            typical_confidence TEXT REFERENCES confidence_levels(name)
        );
        CREATE TABLE lesson_kinds (name TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '');
        CREATE TABLE lesson_statuses (name TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '');
        CREATE TABLE relation_types (name TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '');

        CREATE TABLE lessons (
            seq INTEGER PRIMARY KEY,          -- stable integer key for FTS5 and vector rows
            id TEXT NOT NULL UNIQUE,          -- ULID
            title TEXT NOT NULL CHECK (length(trim(title)) > 0),
            content TEXT NOT NULL,
            kind TEXT NOT NULL REFERENCES lesson_kinds(name),
            status TEXT NOT NULL REFERENCES lesson_statuses(name),
            confidence TEXT NOT NULL REFERENCES confidence_levels(name),
            score REAL CHECK (score IS NULL OR (score >= 0 AND score <= 1)),
            source TEXT REFERENCES source_types(name),
            source_notes TEXT,
            project TEXT,                     -- NULL: applies to every project
            summary TEXT,
            problem_solved TEXT,
            when_to_apply TEXT,
            when_not_to_apply TEXT,
            pref_context TEXT,
            pref_rejected TEXT,
            pref_preferred TEXT,
            pref_reasoning TEXT,
            metadata TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
            usage_count INTEGER NOT NULL DEFAULT 0,
            last_used TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            content_hash TEXT NOT NULL
        );
        CREATE INDEX idx_lessons_kind ON lessons(kind);
        CREATE INDEX idx_lessons_status ON lessons(status);
        CREATE INDEX idx_lessons_project ON lessons(project);
        CREATE INDEX idx_lessons_confidence ON lessons(confidence);
        CREATE INDEX idx_lessons_source ON lessons(source);
        CREATE INDEX idx_lessons_created ON lessons(created_at);
        CREATE INDEX idx_lessons_updated ON lessons(updated_at);
        CREATE INDEX idx_lessons_hash ON lessons(content_hash);

        CREATE TABLE lesson_tags (
            lesson_id TEXT NOT NULL REFERENCES lessons(id) ON DELETE CASCADE ON UPDATE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (lesson_id, tag)
        ) WITHOUT ROWID;
        CREATE INDEX idx_lesson_tags_tag ON lesson_tags(tag);

        CREATE TABLE lesson_contexts (
            lesson_id TEXT NOT NULL REFERENCES lessons(id) ON DELETE CASCADE ON UPDATE CASCADE,
            context TEXT NOT NULL,            -- normalised: lower case, single spaces
            applies INTEGER NOT NULL DEFAULT 1 CHECK (applies IN (0, 1)),  -- 0: anti-context
            PRIMARY KEY (lesson_id, context, applies)
        ) WITHOUT ROWID;
        CREATE INDEX idx_lesson_contexts_context ON lesson_contexts(context);

        CREATE TABLE lesson_file_types (
            lesson_id TEXT NOT NULL REFERENCES lessons(id) ON DELETE CASCADE ON UPDATE CASCADE,
            file_type TEXT NOT NULL,          -- extension without the dot, lower case
            PRIMARY KEY (lesson_id, file_type)
        ) WITHOUT ROWID;
        CREATE INDEX idx_lesson_file_types ON lesson_file_types(file_type);

        CREATE TABLE code_examples (
            id TEXT PRIMARY KEY,
            lesson_id TEXT NOT NULL REFERENCES lessons(id) ON DELETE CASCADE ON UPDATE CASCADE,
            position INTEGER NOT NULL,
            language TEXT NOT NULL DEFAULT '',
            code TEXT NOT NULL,
            context TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX idx_code_examples_lesson ON code_examples(lesson_id);

        CREATE TABLE trade_offs (
            id TEXT PRIMARY KEY,
            lesson_id TEXT NOT NULL REFERENCES lessons(id) ON DELETE CASCADE ON UPDATE CASCADE,
            position INTEGER NOT NULL,
            type TEXT NOT NULL CHECK (type IN ('pro', 'con')),
            description TEXT NOT NULL
        );
        CREATE INDEX idx_trade_offs_lesson ON trade_offs(lesson_id);

        CREATE TABLE evidence (
            id TEXT PRIMARY KEY,
            lesson_id TEXT NOT NULL REFERENCES lessons(id) ON DELETE CASCADE ON UPDATE CASCADE,
            position INTEGER NOT NULL,
            quote TEXT NOT NULL,
            session_id TEXT,
            message_id TEXT,
            observed_at TEXT,
            source TEXT
        );
        CREATE INDEX idx_evidence_lesson ON evidence(lesson_id);
        CREATE INDEX idx_evidence_session ON evidence(session_id);

        -- Free-form relations; relation_types lists the common ones.
        CREATE TABLE edges (
            from_id TEXT NOT NULL REFERENCES lessons(id) ON DELETE CASCADE ON UPDATE CASCADE,
            to_id TEXT NOT NULL REFERENCES lessons(id) ON DELETE CASCADE ON UPDATE CASCADE,
            relation TEXT NOT NULL CHECK (length(trim(relation)) > 0),
            created_at TEXT NOT NULL,
            PRIMARY KEY (from_id, to_id, relation),
            CHECK (from_id <> to_id)
        ) WITHOUT ROWID;
        CREATE INDEX idx_edges_to ON edges(to_id);

        -- Tag aliases recorded by merge-tags (config aliases live in config.yaml).
        CREATE TABLE tag_relations (
            from_tag TEXT NOT NULL,
            to_tag TEXT NOT NULL,
            relation TEXT NOT NULL,           -- 'alias_of'
            PRIMARY KEY (from_tag, to_tag, relation)
        ) WITHOUT ROWID;

        -- Keywords. Contentless: the text lives in lessons; rows are kept in step by the
        -- store in the same transaction. porter folds "sessions" into "session".
        CREATE VIRTUAL TABLE lessons_fts USING fts5(
            title, tags, body,
            content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );

        -- Embeddings of the title, a blank line and the content: float32 blobs by lessons.seq.
        -- The sqlite-vec index (lesson_vec_i8) is created once the dimensions are known.
        -- version: the write that stored the row, so a process holding the vectors in
        -- memory can load only what changed since it last looked.
        CREATE TABLE lesson_vectors (
            seq INTEGER PRIMARY KEY REFERENCES lessons(seq) ON DELETE CASCADE,
            content_hash TEXT NOT NULL,
            version INTEGER NOT NULL DEFAULT 0,
            embedding BLOB NOT NULL
        );
        CREATE INDEX idx_lesson_vectors_version ON lesson_vectors(version);

        CREATE TABLE search_log (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            query TEXT NOT NULL,
            filters TEXT NOT NULL DEFAULT '{}',
            result_ids TEXT NOT NULL DEFAULT '[]',
            took_ms REAL,
            interface TEXT
        );
        CREATE INDEX idx_search_log_at ON search_log(at);
        """
    )
    conn.executemany(
        "INSERT INTO confidence_levels (name, ordinal, min_score, description) VALUES (?, ?, ?, ?)",
        [
            ("very-low", 1, 0.0, "wild guess, untested assumption"),
            ("low", 2, 0.3, "some evidence but shaky"),
            ("medium", 3, 0.5, "reasonable confidence, worked once"),
            ("high", 4, 0.7, "well tested, several confirmations"),
            ("very-high", 5, 0.85, "battle-tested"),
        ],
    )
    conn.executemany(
        "INSERT INTO source_types (name, description, typical_confidence) VALUES (?, ?, ?)",
        [
            ("tested", "ran code and verified the behaviour", "high"),
            ("documented", "official documentation or specification", "high"),
            ("observed", "seen in logs or output", "medium"),
            ("inferred", "reasoned from evidence", "low"),
            ("hearsay", "someone said so", "low"),
            ("correction", "the user corrected the agent", "high"),
            ("preference", "the user stated a preference", "high"),
            ("conversation", "extracted from a past session", "medium"),
            ("git", "learned from commits and diffs", "medium"),
            ("manual", "written by hand", "medium"),
        ],
    )
    conn.executemany(
        "INSERT INTO lesson_kinds (name, description) VALUES (?, ?)",
        [
            ("code_pattern", "a reusable way of writing code"),
            ("bug_fix", "a bug, its cause and its fix"),
            ("architecture", "a structural decision and its reasons"),
            ("project_rule", "a convention of one project"),
            ("preference", "what the user wants instead of what the agent proposed"),
            ("decision", "a choice made, with the alternatives considered"),
            ("pattern", "an approach that keeps working"),
            ("anti_pattern", "an approach that does not work, and what to do instead"),
            ("learning", "a lesson learned the hard way"),
            ("reflection", "an insight stored from a conversation"),
        ],
    )
    conn.executemany(
        "INSERT INTO lesson_statuses (name, description) VALUES (?, ?)",
        [
            ("proposed", "learned but not reviewed yet"),
            ("active", "in use: searched, injected, published"),
            ("rejected", "reviewed and refused"),
            ("superseded", "replaced by a newer lesson"),
            ("archived", "kept for the record, no longer applied"),
        ],
    )
    conn.executemany(
        "INSERT INTO relation_types (name, description) VALUES (?, ?)",
        [
            ("related_to", "a general relationship"),
            ("derived_from", "this lesson came from that one"),
            ("contradicts", "the two lessons conflict"),
            ("supersedes", "this lesson replaces that one"),
            ("example_of", "this is an instance of that pattern"),
            ("alternative", "another way to reach the same goal"),
            ("prerequisite", "that lesson is needed first"),
        ],
    )


def m002_conversations(conn: Any) -> None:
    """Conversation memory: sessions, messages, searchable chunks, file edits, import state."""
    run_script(
        conn,
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,              -- the agent's session id
            agent TEXT NOT NULL,              -- claude-code, codex, locomo …
            project TEXT,                     -- cwd recorded in the transcript (not the folder name)
            device TEXT NOT NULL,
            git_branch TEXT,
            started_at TEXT,
            ended_at TEXT,
            source_file TEXT,
            title TEXT,                       -- the first prompt, shortened
            speakers TEXT NOT NULL DEFAULT '',  -- distinct speakers, space separated
            message_count INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX idx_sessions_project ON sessions(project);

        CREATE TABLE messages (
            seq INTEGER PRIMARY KEY,
            uuid TEXT NOT NULL UNIQUE,        -- resumed sessions copy old messages: one row each
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            parent_uuid TEXT,
            role TEXT NOT NULL,
            speaker TEXT,
            text TEXT NOT NULL,
            tool_calls TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tool_calls)),
            timestamp TEXT,
            is_sidechain INTEGER NOT NULL DEFAULT 0,
            agent_id TEXT,
            is_meta INTEGER NOT NULL DEFAULT 0,
            injected INTEGER NOT NULL DEFAULT 0,  -- context Lore itself injected: never learned from
            chunk_id INTEGER
        );
        CREATE INDEX idx_messages_session ON messages(session_id, seq);
        CREATE INDEX idx_messages_chunk ON messages(chunk_id);

        -- Search units: consecutive turns of one session, about 500 tokens, never split.
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            project TEXT,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            started_at TEXT,
            ended_at TEXT,
            speakers TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,               -- the turns' text, one turn per line
            ctx_before TEXT NOT NULL DEFAULT '[]',  -- JSON: up to 2 turns before, same session
            ctx_after TEXT NOT NULL DEFAULT '[]',   -- JSON: up to 2 turns after
            content_hash TEXT NOT NULL        -- of the embedded text: text + nearest neighbours
        );
        CREATE INDEX idx_chunks_session ON chunks(session_id, first_seq);
        CREATE INDEX idx_chunks_project ON chunks(project);

        -- Neighbouring turns and the session date in words are searchable too: an answer is
        -- often a short turn whose meaning sits around it (docs/benchmarks.md, LoCoMo).
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, speakers, date, context, content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );

        CREATE TABLE chunk_vectors (
            chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
            content_hash TEXT NOT NULL,
            version INTEGER NOT NULL DEFAULT 0,
            embedding BLOB NOT NULL
        );
        CREATE INDEX idx_chunk_vectors_version ON chunk_vectors(version);

        -- What the agent wrote, for silent-fix detection later.
        CREATE TABLE file_edits (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            message_uuid TEXT NOT NULL,
            tool TEXT NOT NULL,
            file_path TEXT NOT NULL,
            file_type TEXT,
            old_text TEXT,
            new_text TEXT,
            timestamp TEXT,
            succeeded INTEGER,
            UNIQUE (message_uuid, file_path, old_text, new_text)
        );
        CREATE INDEX idx_file_edits_path ON file_edits(file_path);

        -- Incremental import: where each file was read up to, and how to tell it was rewritten.
        CREATE TABLE ingest_files (
            path TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            size INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            head_hash TEXT NOT NULL,          -- sha256 of the first 4 KiB
            tail_hash TEXT NOT NULL,          -- sha256 of the 4 KiB before offset
            imported_at TEXT NOT NULL,
            messages INTEGER NOT NULL DEFAULT 0,
            malformed INTEGER NOT NULL DEFAULT 0,
            unknown INTEGER NOT NULL DEFAULT 0
        );
        """,
    )


def m003_corrections(conn: Any) -> None:
    """Corrections the Stop hook noticed: the user's words and the proposal they answer."""
    run_script(
        conn,
        """
        CREATE TABLE corrections (
            id INTEGER PRIMARY KEY,
            event_id TEXT NOT NULL UNIQUE,    -- the queue event: handling it twice stores it once
            session_id TEXT,
            project TEXT,
            user_message TEXT NOT NULL,
            assistant_proposal TEXT,
            files TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(files)),
            at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'new',  -- new | extracted | dismissed
            -- Seen by the prompt hook and by the Stop hook: stored once.
            UNIQUE (session_id, user_message)
        );
        CREATE INDEX idx_corrections_project ON corrections(project, at);

        -- What was in progress when a session was compacted (PreCompact).
        CREATE TABLE snapshots (
            id INTEGER PRIMARY KEY,
            event_id TEXT NOT NULL UNIQUE,
            session_id TEXT,
            project TEXT,
            at TEXT NOT NULL,
            data TEXT NOT NULL CHECK (json_valid(data))
        );
        CREATE INDEX idx_snapshots_session ON snapshots(session_id);
        """,
    )


def m004_filter_index(conn: Any) -> None:
    """Filters on tags, kinds, sources … select lessons by id and then check their columns; a
    covering index keeps that out of the wide rows (a tag filter at 100,000 lessons: 33 -> 12 ms)."""
    conn.execute(
        "CREATE INDEX idx_lessons_filter ON lessons(id, status, kind, confidence, source, project)"
    )


def m005_learning(conn: Any) -> None:
    """Learning from corrections: the detector's verdict on each captured message, the lesson
    it fed, silent fixes found in file edits, and the proposal an evidence quote answers."""
    run_script(
        conn,
        """
        ALTER TABLE corrections ADD COLUMN label TEXT;            -- correction | preference | none
        ALTER TABLE corrections ADD COLUMN correction_type TEXT;  -- explicit | refinement | silent_fix
        ALTER TABLE corrections ADD COLUMN durable INTEGER;
        ALTER TABLE corrections ADD COLUMN probability REAL;
        ALTER TABLE corrections ADD COLUMN cues TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE corrections ADD COLUMN lesson_id TEXT REFERENCES lessons(id) ON DELETE SET NULL;
        ALTER TABLE corrections ADD COLUMN action TEXT;           -- created | reinforced | conflict | ...
        ALTER TABLE corrections ADD COLUMN message_uuid TEXT;
        ALTER TABLE corrections ADD COLUMN proposal_uuid TEXT;
        ALTER TABLE corrections ADD COLUMN diff TEXT;             -- silent fixes: agent -> now
        ALTER TABLE corrections ADD COLUMN origin TEXT NOT NULL DEFAULT 'hook';  -- hook | manual | mcp | edit
        CREATE INDEX idx_corrections_status ON corrections(status);
        CREATE INDEX idx_corrections_lesson ON corrections(lesson_id);

        ALTER TABLE file_edits ADD COLUMN checked_at TEXT;       -- compared with the file since
        CREATE INDEX idx_file_edits_unchecked ON file_edits(session_id) WHERE checked_at IS NULL;

        ALTER TABLE evidence ADD COLUMN context TEXT;            -- the agent turn the quote answers
        """,
    )
    conn.executemany(
        "INSERT OR IGNORE INTO lesson_statuses (name, description) VALUES (?, ?)",
        [("candidate", "learned from too little evidence to propose yet; kept as evidence")])
    conn.executemany(
        "INSERT OR IGNORE INTO source_types (name, description, typical_confidence) VALUES (?, ?, ?)",
        [("silent_fix", "the user rewrote or reverted what the agent wrote", "medium")])


def m006_redact_stored(conn: Any) -> None:
    """Secrets stored before every door redacted: the text of lessons, their children and
    evidence, corrections, conversations, edits, snapshots and search queries passes the
    redactor once. Changed lessons and chunks are re-indexed for keywords; their vectors become
    stale (a new content hash), so `lore admin reembed` / `lore ingest` embed the redacted text."""
    import hashlib
    import json

    from lore.embed import document_text, embed_text
    from lore.normalize import date_words
    from lore.redact import redact, redact_value
    from lore.store.sqlite.conversations import ConversationTables
    from lore.store.sqlite.search import KeywordIndex

    def texts(table: str, key: str, cols: Sequence[str], json_cols: Sequence[str] = ()) -> list[Any]:
        """Redact ``cols`` (and the strings inside ``json_cols``) of every row; the keys changed."""
        changed = []
        names = ", ".join([key, *cols, *json_cols])
        for row in conn.execute(f"SELECT {names} FROM {table}").fetchall():
            new: dict[str, Any] = {}
            for i, col in enumerate(cols, start=1):
                if isinstance(row[i], str) and (r := redact(row[i])) != row[i]:
                    new[col] = r
            for i, col in enumerate(json_cols, start=1 + len(cols)):
                if isinstance(row[i], str):
                    value = json.loads(row[i])
                    if (redacted := redact_value(value)) != value:
                        new[col] = json.dumps(redacted, ensure_ascii=False)
            if not new:
                continue
            sets = ", ".join(f"{c} = ?" for c in new)
            try:
                conn.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", [*new.values(), row[0]])
            except driver().IntegrityError:  # the same text, once redacted, is already stored
                conn.execute(f"DELETE FROM {table} WHERE {key} = ?", (row[0],))
            changed.append(row[0])
        return changed

    lesson_cols = ("title", "content", "source_notes", "summary", "problem_solved",
                   "when_to_apply", "when_not_to_apply", "pref_context", "pref_rejected",
                   "pref_preferred", "pref_reasoning")
    changed = set(texts("lessons", "seq", lesson_cols, ("metadata",)))
    for table, cols in (("code_examples", ("code", "context")), ("trade_offs", ("description",)),
                        ("evidence", ("quote", "context"))):
        for rowid in texts(table, "rowid", cols):
            seq = conn.execute(f"SELECT l.seq FROM {table} t JOIN lessons l ON l.id = t.lesson_id "
                               "WHERE t.rowid = ?", (rowid,)).fetchone()
            if seq:
                changed.add(seq[0])
    keywords = KeywordIndex(conn)
    for seq in sorted(changed):
        r = conn.execute("SELECT id, title, content FROM lessons WHERE seq = ?", (seq,)).fetchone()
        conn.execute("UPDATE lessons SET content_hash = ? WHERE seq = ?", (
            hashlib.sha256(document_text(r[1], r[2]).encode("utf-8")).hexdigest(), seq))
        keywords.index_keywords(seq, r[0])

    texts("corrections", "id", ("user_message", "assistant_proposal", "diff"))
    texts("messages", "seq", ("text",), ("tool_calls",))
    texts("sessions", "id", ("title",))
    texts("file_edits", "id", ("old_text", "new_text"))
    texts("snapshots", "id", (), ("data",))
    texts("search_log", "id", ("query",))
    chunks = ConversationTables(conn)
    for chunk_id in texts("chunks", "id", ("text",), ("ctx_before", "ctx_after")):
        c = conn.execute("SELECT text, ctx_before, ctx_after, started_at FROM chunks WHERE id = ?",
                         (chunk_id,)).fetchone()
        before, after = json.loads(c[1]), json.loads(c[2])
        chunks.set_context(chunk_id, before, after, date_words(c[3]), hashlib.sha256(
            embed_text(c[0], before, after).encode()).hexdigest())


def m007_analysis(conn: Any) -> None:
    """Learning from the work: when each session started (SessionStart), and one row per
    analysis run (the command, SessionEnd, the MCP trigger) with its verdict, for the status."""
    run_script(
        conn,
        """
        CREATE TABLE analysis_sessions (
            session_id TEXT PRIMARY KEY,
            project TEXT,
            started_at TEXT NOT NULL
        );
        CREATE TABLE analysis_runs (
            id INTEGER PRIMARY KEY,
            event_id TEXT UNIQUE,             -- the SessionEnd event: handled twice, run once
            at TEXT NOT NULL,
            trigger TEXT NOT NULL,            -- command | session_end | mcp
            session_id TEXT,
            project TEXT,
            outcome TEXT NOT NULL,            -- analysed | summarised | skipped | failed
            reason TEXT NOT NULL DEFAULT '',
            score INTEGER,
            threshold INTEGER,
            base TEXT,
            head TEXT,
            created INTEGER NOT NULL DEFAULT 0,
            reinforced INTEGER NOT NULL DEFAULT 0,
            lesson_ids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(lesson_ids)),
            error TEXT
        );
        CREATE INDEX idx_analysis_runs_at ON analysis_runs(at);
        CREATE INDEX idx_analysis_runs_session ON analysis_runs(session_id);
        """,
    )


def m008_server_tokens(conn: Any) -> None:
    """Access tokens for `lore serve` beyond loopback. Only a salted SHA-256 of each secret is
    stored; the secret is shown once when the token is made."""
    run_script(
        conn,
        """
        CREATE TABLE server_tokens (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            scope TEXT NOT NULL CHECK (scope IN ('read', 'write')),
            salt TEXT NOT NULL,
            secret_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            last_used_at TEXT,
            revoked_at TEXT
        );
        """,
    )


def m009_context_loads(conn: Any) -> None:
    """What each SessionStart gave the new session: the lessons shown and those the size
    budget left out (ids, sizes; never the text, which the lessons hold)."""
    run_script(
        conn,
        """
        CREATE TABLE context_loads (
            event_id TEXT PRIMARY KEY,       -- the queued hook event (stored once)
            session_id TEXT,
            project TEXT,
            at TEXT NOT NULL,
            shown TEXT NOT NULL DEFAULT '[]',    -- lesson ids, in the order given
            dropped TEXT NOT NULL DEFAULT '[]',  -- lesson ids the budget left out
            chars INTEGER NOT NULL DEFAULT 0,
            dropped_chars INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX idx_context_loads_session ON context_loads(session_id, at);
        CREATE INDEX idx_context_loads_at ON context_loads(at);
        """,
    )


def m011_sync(conn: Any) -> None:
    """Sync across devices through `lore serve` (docs/server.md). On every home: a change log
    of lessons (a monotonic sequence appended by triggers in the transaction that writes the
    lesson), the device that wrote each pulled lesson, and the versions a conflict replaced.
    On the server: which device's records and batches arrived, so a retry stores nothing
    twice. Captured messages keep the device they were captured on."""
    run_script(
        conn,
        """
        CREATE TABLE lesson_changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: push and pull cursors
            lesson_id TEXT NOT NULL
        );
        CREATE INDEX idx_lesson_changes_lesson ON lesson_changes(lesson_id);
        -- Every lesson write appends, in its own transaction. A write sets updated_at; usage
        -- counts do not, and are not a change to sync.
        CREATE TRIGGER lesson_changes_insert AFTER INSERT ON lessons BEGIN
            INSERT INTO lesson_changes (lesson_id) VALUES (new.id);
        END;
        CREATE TRIGGER lesson_changes_update AFTER UPDATE OF updated_at ON lessons BEGIN
            INSERT INTO lesson_changes (lesson_id) VALUES (new.id);
        END;

        -- The device whose version of a lesson is stored here, when it came through sync.
        CREATE TABLE lesson_origins (
            lesson_id TEXT PRIMARY KEY,
            device TEXT NOT NULL,
            updated_at TEXT NOT NULL          -- the version it wrote; a later local edit is ours
        );

        -- A version a conflict replaced or refused (latest updated_at wins, ties by device).
        CREATE TABLE lesson_history (
            id INTEGER PRIMARY KEY,
            lesson_id TEXT NOT NULL,
            device TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            at TEXT NOT NULL,
            outcome TEXT NOT NULL,            -- replaced | refused
            winner_device TEXT NOT NULL,
            winner_updated_at TEXT NOT NULL,
            data TEXT NOT NULL CHECK (json_valid(data))
        );
        CREATE INDEX idx_lesson_history_lesson ON lesson_history(lesson_id);

        CREATE TABLE sync_records (
            device TEXT NOT NULL,
            kind TEXT NOT NULL,               -- lesson | correction | session | message | edit
            record_id TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            batch_id TEXT NOT NULL,
            received_at TEXT NOT NULL,
            PRIMARY KEY (device, kind, record_id, content_hash)
        );
        CREATE TABLE sync_batches (
            batch_id TEXT NOT NULL,
            device TEXT NOT NULL,
            received_at TEXT NOT NULL,
            records INTEGER NOT NULL,
            stored INTEGER NOT NULL,
            PRIMARY KEY (device, batch_id)
        );

        ALTER TABLE corrections ADD COLUMN device TEXT;  -- NULL: captured on this machine
        """,
    )
    # Lessons written before the log existed are changes not yet pushed.
    conn.execute("INSERT INTO lesson_changes (lesson_id) SELECT id FROM lessons ORDER BY seq")


def m012_schedule_runs(conn: Any) -> None:
    """One row per scheduled analysis (`schedule.analysis`): when it ran, how long, what it
    did (a JSON summary) and its error; a run skipped because another was going is kept too."""
    run_script(
        conn,
        """
        CREATE TABLE schedule_runs (
            id INTEGER PRIMARY KEY,
            trigger TEXT NOT NULL,            -- schedule | command | api | dashboard
            started_at TEXT NOT NULL,
            finished_at TEXT,
            duration_ms INTEGER,
            outcome TEXT NOT NULL,            -- ok | failed | skipped
            summary TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(summary)),
            error TEXT
        );
        CREATE INDEX idx_schedule_runs_started ON schedule_runs(started_at);
        """,
    )


def m013_who_and_where(conn: Any) -> None:
    """Who wrote a row (a user name) and on which device, for a database several people or
    machines share; and who may see a lesson: ``visibility`` personal (its author only; the
    default for learned rules), project or team. Rows written before keep NULL authors and
    stay visible to everyone."""
    run_script(
        conn,
        """
        ALTER TABLE lessons ADD COLUMN author TEXT;
        ALTER TABLE lessons ADD COLUMN device TEXT;
        ALTER TABLE lessons ADD COLUMN visibility TEXT NOT NULL DEFAULT 'personal'
            CHECK (visibility IN ('personal', 'project', 'team'));
        CREATE INDEX idx_lessons_visibility ON lessons(visibility, author);
        ALTER TABLE corrections ADD COLUMN author TEXT;  -- corrections.device came with m011
        ALTER TABLE edges ADD COLUMN author TEXT;
        ALTER TABLE search_log ADD COLUMN author TEXT;
        ALTER TABLE search_log ADD COLUMN device TEXT;
        """,
    )


def m015_session_start_commit(conn: Any) -> None:
    """The commit each session started from (read by the SessionStart hook), so the end of the
    session diffs from it rather than from the last commit before its start time."""
    run_script(
        conn,
        """
        ALTER TABLE analysis_sessions ADD COLUMN start_commit TEXT;  -- HEAD's sha at the start
        ALTER TABLE analysis_sessions ADD COLUMN start_branch TEXT;
        -- commit | no-commits | no-git | unreadable; NULL: not recorded (an older hook)
        ALTER TABLE analysis_sessions ADD COLUMN start_git TEXT;
        """,
    )


def m016_lesson_deletions(conn: Any) -> None:
    """Deletions sync: a deleted lesson leaves a tombstone (when, on which device) and a row in
    the change log, so a push sends the deletion and a pull hands it to the other devices."""
    run_script(
        conn,
        """
        CREATE TABLE lesson_deletions (
            lesson_id TEXT PRIMARY KEY,
            deleted_at TEXT NOT NULL,         -- compared with updated_at: the later one wins
            device TEXT NOT NULL              -- where it was deleted
        );
        """,
    )


def m020_sync_identity(conn: Any) -> None:
    """Sync that cannot lose or forge (docs/server.md): the write token each device pushes
    with (bound on its first push), and the server's view of each device's push cursors, so a
    device whose database was reset or restored, or a server restored from an older backup,
    is noticed and the records the server lacks are sent again. The view is seeded from the
    batches received before, whose ids named their cursors (``device:stream:after-end``)."""
    run_script(
        conn,
        """
        CREATE TABLE sync_devices (
            device TEXT PRIMARY KEY,
            token_id TEXT NOT NULL UNIQUE,    -- the write token that pushes for it
            bound_at TEXT NOT NULL
        );
        CREATE TABLE sync_cursors (
            device TEXT NOT NULL,
            stream TEXT NOT NULL,             -- lessons | corrections | messages | edits
            acked INTEGER NOT NULL,           -- the device's cursor after its last stored batch
            updated_at TEXT NOT NULL,
            PRIMARY KEY (device, stream)
        );
        """,
    )
    seed_sync_cursors(conn)


def seed_sync_cursors(conn: Any) -> None:
    """The last cursor each device's batches reached, read from the ids batches had before
    sync protocol 3 (both backends run this)."""
    latest: dict[tuple[str, str], tuple[str, int]] = {}
    for batch_id, device, at in conn.execute(
            "SELECT batch_id, device, received_at FROM sync_batches ORDER BY received_at"):
        m = re.fullmatch(r"([0-9A-Z]{26}):(lessons|corrections|messages|edits):(\d+)-(\d+)",
                         str(batch_id))
        if m and m.group(1) == device and len(m.group(4)) < 19:
            latest[(device, m.group(2))] = (str(at), int(m.group(4)))
    for (device, stream), (at, acked) in sorted(latest.items()):
        conn.execute("INSERT INTO sync_cursors (device, stream, acked, updated_at) "
                     "VALUES (?, ?, ?, ?)", (device, stream, acked, at))


def m021_checks(conn: Any) -> None:
    """Checks on rules (docs/apply.md): which tool calls a rule governs (a Bash command
    pattern, a path glob, a pattern in the text written, a tool name), remind or block, its
    review status; and every match the hooks reported (blocked, reminded, allowed, ran)."""
    run_script(conn, CHECKS_SQL)


CHECKS_SQL = """
        CREATE TABLE checks (
            id TEXT PRIMARY KEY,              -- ULID
            lesson_id TEXT NOT NULL,          -- the rule it holds
            command TEXT,                     -- a regular expression at a command's start
            path TEXT,                        -- a glob, relative to the session's folder
            content TEXT,                     -- a regular expression over the text written
            tool TEXT,                        -- a tool name, * for any characters
            mode TEXT NOT NULL CHECK (mode IN ('remind', 'block')),
            status TEXT NOT NULL CHECK (status IN ('proposed', 'active', 'rejected')),
            origin TEXT NOT NULL,             -- user | shape:<name> | judge
            note TEXT NOT NULL DEFAULT '',    -- why it was proposed, in words
            allowed_until TEXT,               -- `lore guard mode ID allow`: blocks let through until then
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            reviewed_at TEXT
        );
        CREATE INDEX idx_checks_lesson ON checks(lesson_id);
        CREATE TABLE check_events (
            event_id TEXT PRIMARY KEY,        -- the hook event and the check: stored once
            check_id TEXT NOT NULL,
            lesson_id TEXT NOT NULL,
            session_id TEXT,
            project TEXT,
            at TEXT NOT NULL,
            tool TEXT,
            outcome TEXT NOT NULL,            -- blocked | reminded | allowed | ran
            matched TEXT NOT NULL DEFAULT ''  -- what of the call matched (redacted)
        );
        CREATE INDEX idx_check_events_lesson ON check_events(lesson_id, at);
        CREATE INDEX idx_check_events_check ON check_events(check_id);
"""


# The tables whose ``project`` names the project a row belongs to. Conversation sessions and
# chunks keep theirs: the chunk index's keys carry the chunk's project (recall/vectors.py).
PROJECT_TABLES = ("lessons", "corrections", "snapshots", "analysis_sessions", "analysis_runs",
                  "context_loads")


def project_keys(conn: Any) -> int:
    """Every stored project key as its project: a folder inside a git repository becomes the
    repository's top level (``normalize.project_root``, as every face resolves a folder now), a
    folder outside one its real path. Keys that are not folders on this machine stay. Portable
    SQL: the Postgres backend runs it too. Returns how many keys changed."""
    from lore.normalize import project_root

    moved: dict[str, str] = {}
    for table in PROJECT_TABLES:
        rows = conn.execute(f"SELECT DISTINCT project FROM {table} "  # noqa: S608 - fixed names
                            "WHERE project IS NOT NULL").fetchall()
        for (key,) in rows:
            root = moved.get(key) or project_root(key)
            if root and root != key:
                moved[key] = root
                conn.execute(f"UPDATE {table} SET project = ? WHERE project = ?",  # noqa: S608
                             (root, key))
    return len(moved)


def m023_project_roots(conn: Any) -> None:
    """Project keys recorded in a repository's subfolder (``repo/src``), or by a face that
    resolved a folder its own way, become the repository's: one project for every command,
    tool and hook."""
    project_keys(conn)


def m022_redact_search_log(conn: Any) -> None:
    """Search queries were logged as typed (a pasted key stayed in the log that stats show):
    the log is redacted once; new queries are redacted before they are logged."""
    from lore.store.sqlite.stats import redact_search_log

    # The old text is overwritten with zeros where it was, not left in the file's free space.
    before = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        redact_search_log(conn, rewrite=True)
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(before)}")


def m026_context_in_files(conn: Any) -> None:
    """The rules a SessionStart left out because a file the agent reads at start states them
    (Lore's block in CLAUDE.md): the session had them all the same."""
    run_script(conn, "ALTER TABLE context_loads ADD COLUMN in_files TEXT NOT NULL DEFAULT '[]';")


# Each migration keeps its number (the digits of its name): migrations are added on several
# lines of work at once, and a database records which numbers it has run, not a count.
MIGRATIONS: list[Callable[[Any], None]] = [
    m001_core, m002_conversations, m003_corrections, m004_filter_index, m005_learning,
    m006_redact_stored, m007_analysis, m008_server_tokens, m009_context_loads, m011_sync,
    m012_schedule_runs, m013_who_and_where, m015_session_start_commit, m016_lesson_deletions,
    m020_sync_identity, m021_checks, m022_redact_search_log, m023_project_roots,
    m026_context_in_files,
]


def number(position: int, migration: Callable[[Any], None]) -> int:
    """The migration's number: the digits of its name (``m013_…``), else its place (1-based)."""
    m = re.match(r"m(\d{3})_", migration.__name__)
    return int(m.group(1)) if m else position + 1


def numbers() -> list[int]:
    return [number(i, m) for i, m in enumerate(MIGRATIONS)]


SCHEMA_VERSION = max(numbers())


def migrate(conn: Any, path: str = "") -> int:
    """Bring the database to SCHEMA_VERSION; return how many migrations ran."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    if "schema_migrations" not in tables:
        if tables:
            raise NotALoreDatabase(
                f"{path or 'the file'} is an SQLite database but not a Lore database"
            )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
    current = current_version(conn)
    applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}
    if current > SCHEMA_VERSION:
        raise MigrationError(
            f"{path or 'the database'} was written by a newer Lore (schema {current}; this "
            f"Lore knows up to {SCHEMA_VERSION}); upgrade with `{package_command('upgrade')}`"
        )
    ran = 0
    for position, migration in enumerate(MIGRATIONS):
        version = number(position, migration)
        if version in applied:
            continue
        with atomic(conn):
            migration(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (version, migration.__name__, datetime.now(UTC).isoformat()),
            )
            if version == 1:
                conn.execute("INSERT INTO meta (key, value) VALUES ('app', ?)", (APP_ID,))
        ran += 1
    return ran


def current_version(conn: Any) -> int:
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)
