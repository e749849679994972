"""The Postgres backend: a database several people and machines share, with pgvector for
vectors (HNSW, cosine) and Postgres full-text search for keywords (docs/storage.md).

Chosen by a ``postgresql://`` (or ``postgres://``) database location; psycopg and pgvector
come with ``pip install 'loreloop[postgres]'`` and are imported only when such a database opens.
Lore's tables live in one schema, ``lore`` unless the URL says ``?schema=NAME``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from lore.errors import ConfigError, InvalidInput, NotFound
from lore.home import mask_url as masked
from lore.store.postgres import migrations
from lore.store.postgres.db import (
    INSTALL,
    Connection,
    atomic,
    connect,
    register_vectors,
    storage_error,
)
from lore.store.postgres.lessons import LESSON_DOC, PGLessonTables, vector_bytes, vector_value
from lore.store.postgres.tables import (
    PGAnalysisTables,
    PGConversationTables,
    PGCorrectionTables,
    PGSessionTables,
    PGTokenTables,
)
from lore.store.protocol import COPY_TABLES, LOG_TABLE, VISIBILITIES, Store
from lore.store.sqlite.guards import GuardTables
from lore.store.sqlite.sync import SyncTables

DEFAULT_SCHEMA = "lore"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_VECTOR_TABLES = {"lesson_vectors", "chunk_vectors"}
_IDENTITY = {"lessons": "seq", "search_log": "id", "messages": "seq", "chunks": "id",
             "file_edits": "id", "corrections": "id", "snapshots": "id", "analysis_runs": "id",
             "lesson_changes": "seq", "lesson_history": "id", "schedule_runs": "id"}
_REFERENCE = ("meta", "confidence_levels", "source_types", "lesson_kinds", "lesson_statuses",
              "relation_types")


def split_url(location: str) -> tuple[str, str]:
    """(the URL psycopg connects to, the schema): ``?schema=NAME`` is Lore's, not libpq's.
    A URL that cannot be read (an unclosed ``[``, a port that is no number) is a ConfigError."""
    try:
        parts = urlsplit(location)
        parts.port  # noqa: B018 - raises for a port that is not a number from 0 to 65535
    except ValueError as exc:
        shown = masked(re.sub(r"(://[^:/@\[\]]*:)[^@]*@", r"\1***@", location))
        raise ConfigError(f"the database URL {shown} cannot be read ({exc}); write "
                          "it as postgresql://user:password@host:5432/database (an IPv6 "
                          "address in brackets: [::1])") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = DEFAULT_SCHEMA
    kept = []
    for k, v in query:
        if k == "schema":
            schema = v
        else:
            kept.append((k, v))
    if not _SCHEMA_NAME.match(schema):
        raise ConfigError(f"the schema name {schema!r} in the database URL is not valid; use "
                          "lower-case letters, digits and underscores")
    url = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(kept), parts.fragment))
    return url, schema


class PostgresStore(PGLessonTables):
    """One Lore database on a Postgres server (implements :class:`lore.store.protocol.Store`)."""

    def __init__(self, conn: Connection, location: str, schema: str) -> None:
        super().__init__(conn)
        self.location = masked(location)
        self.schema = schema
        self.conversations = PGConversationTables(conn)
        self.corrections = PGCorrectionTables(conn)
        self.sessions = PGSessionTables(conn)
        self.analysis = PGAnalysisTables(conn)
        self.tokens = PGTokenTables(conn)
        self.sync = SyncTables(conn)
        self.guards = GuardTables(conn)

    @classmethod
    def open(cls, location: str, *, create: bool = True) -> PostgresStore:
        """Connect, choose the schema and bring it up to date (``create`` is not needed: a
        server's database exists before Lore opens it)."""
        url, schema = split_url(str(location))
        conn = connect(url)
        try:
            conn.execute(f'SET search_path TO "{schema}", public')
            migrations.migrate(conn, schema)
            register_vectors(conn)
        except BaseException:
            conn.close()
            raise
        conn.location = str(location)
        return cls(conn, str(location), schema)

    @classmethod
    @contextmanager
    def session_reader(cls, location: str, user: str | None = None) -> Iterator[PGSessionTables]:
        """The SessionStart context's queries without migrating (the hook's path: a server
        that does not answer within 2 s costs the session its context, not its start)."""
        url, schema = split_url(str(location))
        conn = connect(url, timeout=2)
        conn.lore_user = user
        try:
            conn.execute(f'SET search_path TO "{schema}", public')
            yield PGSessionTables(conn)
        finally:
            conn.close()

    storage_error = staticmethod(storage_error)

    @classmethod
    def diagnose(cls) -> list[tuple[str, bool, str, str]]:
        """psycopg and the pgvector package are installed (the server is checked on open)."""
        out: list[tuple[str, bool, str, str]] = []
        try:
            import psycopg

            out.append(("postgres driver", True, f"psycopg {psycopg.__version__}", ""))
        except ImportError:
            out.append(("postgres driver", False, "psycopg is not installed", INSTALL))
        try:
            from importlib.metadata import version

            import pgvector  # noqa: F401

            out.append(("pgvector", True, f"pgvector (Python) {version('pgvector')}", ""))
        except ImportError:
            out.append(("pgvector", False, "the pgvector package is not installed", INSTALL))
        return out

    @property
    def read_only(self) -> bool:
        return False

    def set_identity(self, user: str | None, device: str | None) -> None:
        self.conn.lore_user, self.conn.lore_device = user, device

    def set_visibility(self, lesson_id: str, visibility: str) -> None:
        if visibility not in VISIBILITIES:
            raise InvalidInput(f"invalid visibility '{visibility}'; valid: {', '.join(VISIBILITIES)}")
        cur = self.conn.execute("UPDATE lessons SET visibility = ? WHERE id = ?",
                                (visibility, lesson_id))
        if cur.rowcount == 0:
            raise NotFound(f"no lesson with id {lesson_id}; `lore search` finds ids")

    @contextmanager
    def atomic(self) -> Iterator[Any]:
        with atomic(self.conn) as conn:
            yield conn

    def close(self) -> None:
        self.conn.close()

    def analyze(self) -> None:
        self.conn.execute("ANALYZE")

    def schema_version(self) -> int:
        return migrations.SCHEMA_VERSION

    def size_bytes(self) -> int:
        """The tables and indexes of Lore's schema."""
        return int(self.conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? "
            "AND c.relkind IN ('r', 'm')", (self.schema,)).fetchone()[0])

    def integrity(self) -> str:
        """'ok' when every keyword row has its lesson and every vector its dimensions."""
        orphans = self.conn.execute(
            "SELECT count(*) FROM lessons l LEFT JOIN lessons_fts f ON f.seq = l.seq "
            "WHERE f.seq IS NULL").fetchone()[0]
        return "ok" if orphans == 0 else f"{orphans} lessons have no keyword index row"

    def server_version(self) -> str:
        return str(self.conn.execute("SHOW server_version").fetchone()[0])

    # ---- copies (lore admin migrate-to) ------------------------------------------------
    def copy_columns(self, table: str) -> list[str]:
        assert table in COPY_TABLES
        return [r[0] for r in self.conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = ? "
            "AND table_name = ? ORDER BY ordinal_position", (self.schema, table))]

    def rows_in(self, table: str) -> int:
        assert table in COPY_TABLES
        return int(self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def export_rows(self, table: str, batch: int) -> Iterator[list[tuple[Any, ...]]]:
        cols = self.copy_columns(table)
        quoted = ", ".join(f'"{c}"' for c in cols)
        vec = cols.index("embedding") if table in _VECTOR_TABLES else -1
        key = _IDENTITY.get(table) or cols[0]
        cur = self.conn.execute(f'SELECT {quoted} FROM {table} ORDER BY "{key}"', binary=vec >= 0)
        while rows := cur.fetchmany(batch):
            if vec >= 0:
                rows = [(*r[:vec], vector_bytes(r[vec]), *r[vec + 1:]) for r in rows]
            yield [tuple(r) for r in rows]

    def import_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        assert table in COPY_TABLES
        quoted = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" * len(columns))
        vec = list(columns).index("embedding") if table in _VECTOR_TABLES else -1
        conflict = "ON CONFLICT DO NOTHING"
        if table == "meta":
            conflict = "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        values = []
        for r in rows:
            row = list(r)
            if vec >= 0:
                row[vec] = vector_value(row[vec])
            values.append(row)
        with atomic(self.conn):
            end = int(self.conn.execute(f"SELECT coalesce(max(seq), 0) FROM {LOG_TABLE}")
                      .fetchone()[0]) if table == "lessons" else 0
            cur = self.conn.executemany(
                f"INSERT INTO {table} ({quoted}) VALUES ({marks}) {conflict}", values)
            if table == "lessons":  # not new local changes: the log is copied as it is
                self.conn.execute(f"DELETE FROM {LOG_TABLE} WHERE seq > ?", (end,))
        return max(int(cur.rowcount), 0)

    def clear(self) -> None:
        with atomic(self.conn):
            self.conn.execute("DROP INDEX IF EXISTS idx_lesson_vectors_hnsw")
            # Built once after the copy (rebuild_indexes), not row by row during it.
            self.conn.execute(f"DROP INDEX IF EXISTS {migrations.CHUNK_VECTOR_INDEX_NAME}")
            tables = [t for t in COPY_TABLES if t not in _REFERENCE]
            self.conn.execute(f"TRUNCATE {', '.join(tables)}, lessons_fts, chunks_fts CASCADE")
            self.conn.execute("ALTER TABLE lesson_vectors ALTER COLUMN embedding TYPE vector")

    def rebuild_indexes(self) -> None:
        """Keywords from the rows (one statement per table), identity counters past the copied
        keys, the vector indexes: lessons' at the copied vectors' dimensions, chunks'."""
        from lore.normalize import date_words

        with atomic(self.conn):
            for table, column in _IDENTITY.items():
                self.conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                    f"coalesce((SELECT max({column}) FROM {table}), 0) + 1, false)")
            self.conn.execute("DELETE FROM lessons_fts")
            self.conn.execute(f"INSERT INTO lessons_fts (seq, doc) SELECT l.seq, {LESSON_DOC} "
                              "FROM lessons l")
            self.conn.execute("DELETE FROM chunks_fts")
            for r in self.conn.execute("SELECT id, started_at, ctx_before, ctx_after "
                                       "FROM chunks").fetchall():
                self.conversations.index_chunk(
                    r[0], date_words(r[1]), "\n".join([*json.loads(r[2]), *json.loads(r[3])]))
            first = self.conn.execute("SELECT vector_dims(embedding) FROM lesson_vectors "
                                      "LIMIT 1").fetchone()
            self.conn.execute("DROP INDEX IF EXISTS idx_lesson_vectors_hnsw")
            self.conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
            self.conn.execute(migrations.CHUNK_VECTOR_INDEX)
        if first is not None:
            self.create_vector_index(int(first[0]))


__all__ = ["PostgresStore", "split_url", "masked"]


def _check_protocol(store: PostgresStore) -> Store:
    """Never called: mypy checks here that PostgresStore implements the whole Store protocol."""
    return store
