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

from lore.errors import InvalidInput, NotFound
from lore.extras import package_command
from lore.store.protocol import VISIBILITIES, Store
from lore.store.sqlite import migrations
from lore.store.sqlite.analysis import AnalysisTables
from lore.store.sqlite.conversations import ConversationTables
from lore.store.sqlite.copy import CopyTables
from lore.store.sqlite.corrections import CorrectionTables
from lore.store.sqlite.db import atomic, check_fts5, connect, driver, storage_error, versions
from lore.store.sqlite.guards import GuardTables
from lore.store.sqlite.lessons import LessonTables
from lore.store.sqlite.migrations import SCHEMA_VERSION, migrate
from lore.store.sqlite.sessions import SessionTables
from lore.store.sqlite.sync import SyncTables
from lore.store.sqlite.tokens import TokenTables

REINSTALL_DEPS = "reinstall Lore with its dependencies: {}"


class SQLiteStore(LessonTables, CopyTables):
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
        self.guards = GuardTables(conn)

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

    @classmethod
    def diagnose(cls) -> list[tuple[str, bool, str, str]]:
        """The driver, FTS5 and sqlite-vec, each with its fix (``lore doctor``)."""
        out: list[tuple[str, bool, str, str]] = []
        try:
            sqlite3 = driver()
            out.append(("sqlite driver", True, f"sqlean.py with SQLite {sqlite3.sqlite_version}", ""))
        except Exception as exc:  # noqa: BLE001 - report whatever broke
            out.append(("sqlite driver", False, str(exc), package_command("reinstall")))
        try:
            check_fts5()
            out.append(("fts5", True, "available", ""))
        except Exception as exc:  # noqa: BLE001
            out.append(("fts5", False, str(exc), REINSTALL_DEPS.format(package_command("reinstall"))))
        try:
            conn = connect(":memory:")
            v = versions(conn)["sqlite_vec"]
            conn.close()
            out.append(("sqlite-vec", True, f"loaded {v}", ""))
        except Exception as exc:  # noqa: BLE001
            out.append(("sqlite-vec", False, str(exc),
                        REINSTALL_DEPS.format(package_command("reinstall"))))
        return out

    @classmethod
    @contextmanager
    def session_reader(cls, location: str, user: str | None = None) -> Iterator[SessionTables]:
        """The SessionStart queries on the file as it is: no migration (the hook's path)."""
        conn = connect(location, create=False)
        conn.lore_user = user
        try:
            yield SessionTables(conn)
        finally:
            conn.close()

    # A driver exception as the StorageError that says what to do (see lore.store.storage_error).
    storage_error = staticmethod(storage_error)

    @property
    def read_only(self) -> bool:
        """Opened read-only (the file or its folder is not writable): nothing is written."""
        return bool(getattr(self.conn, "read_only", False))

    def set_identity(self, user: str | None, device: str | None) -> None:
        self.conn.lore_user, self.conn.lore_device = user, device

    def set_visibility(self, lesson_id: str, visibility: str) -> None:
        if visibility not in VISIBILITIES:
            raise InvalidInput(f"invalid visibility '{visibility}'; valid: {', '.join(VISIBILITIES)}")
        with atomic(self.conn):
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
