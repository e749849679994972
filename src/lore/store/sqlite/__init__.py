"""The SQLite backend: one file, FTS5 for keywords, sqlite-vec beside float32 blobs for vectors.

Every SQL statement of Lore lives in this package, one module per group of tables:
``lessons`` (rows and child tables), ``search`` (FTS5 and filters), ``vectors``, ``graph``
(edges), ``stats`` (usage and the search log), ``reference`` (meta and reference tables),
``conversations``, ``corrections``, ``sessions``, ``tokens`` and ``sync``; ``db`` opens the
connection and runs transactions, ``migrations`` the schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lore.store.protocol import Store
from lore.store.sqlite import migrations
from lore.store.sqlite.analysis import AnalysisTables
from lore.store.sqlite.conversations import ConversationTables
from lore.store.sqlite.corrections import CorrectionTables
from lore.store.sqlite.db import atomic, connect, storage_error
from lore.store.sqlite.lessons import LessonTables
from lore.store.sqlite.migrations import SCHEMA_VERSION, migrate
from lore.store.sqlite.sessions import SessionTables
from lore.store.sqlite.sync import SyncTables
from lore.store.sqlite.tokens import TokenTables


class SQLiteStore(LessonTables):
    """One Lore database file (implements :class:`lore.store.protocol.Store`)."""

    def __init__(self, conn: Any, location: str = "") -> None:
        super().__init__(conn)
        self.location = location
        self.conversations = ConversationTables(conn)
        self.corrections = CorrectionTables(conn)
        self.sessions = SessionTables(conn)
        self.analysis = AnalysisTables(conn)
        self.tokens = TokenTables(conn)
        self.sync = SyncTables(conn)

    @classmethod
    def open(cls, location: str | Path, *, create: bool = True) -> SQLiteStore:
        """Connect (creating the file unless ``create`` is False) and bring the schema up to date."""
        conn = connect(location, create=create)
        try:
            migrate(conn, str(location))
        except BaseException:
            conn.close()
            raise
        return cls(conn, str(location))

    # A driver exception as the StorageError that says what to do (see lore.store.storage_error).
    storage_error = staticmethod(storage_error)

    @property
    def read_only(self) -> bool:
        """Opened read-only (the file or its folder is not writable): nothing is written."""
        return bool(getattr(self.conn, "read_only", False))

    @contextmanager
    def atomic(self) -> Iterator[Any]:
        with atomic(self.conn) as conn:
            yield conn

    def close(self) -> None:
        self.conn.close()

    def schema_version(self) -> int:
        return migrations.SCHEMA_VERSION

    def size_bytes(self) -> int:
        """The database file and its write-ahead log."""
        path = Path(self.location)
        return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())

    def integrity(self) -> str:
        """SQLite's quick check: 'ok' or the first problems it found."""
        return str(self.conn.execute("PRAGMA quick_check").fetchone()[0])


__all__ = ["SQLiteStore", "connect", "atomic", "migrate", "SCHEMA_VERSION"]


def _check_protocol(store: SQLiteStore) -> Store:
    """Never called: mypy checks here that SQLiteStore implements the whole Store protocol."""
    return store
