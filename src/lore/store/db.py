"""The connection: driver choice, PRAGMAs, sqlite-vec, transactions.

Driver: ``sqlean.py``. Python's own ``sqlite3`` module is often built without
extension loading (as on our machines' default ``python3`` and on macOS's
system Python), and sqlite-vec is an extension. ``sqlean.py`` is a drop-in
``sqlite3`` replacement that bundles a recent SQLite with FTS5 and extension
loading enabled, with wheels for Linux, macOS and Windows, so the same code runs
everywhere. pysqlite3-binary ships Linux wheels only; APSW would work but has a
different API from every other DB-API driver.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lore.errors import BackendUnavailable, NotALoreDatabase, StoreBusy
from lore.private import make_private, private_dir

BUSY_TIMEOUT_MS = 5000
LOCK_RETRIES = 5


def driver() -> Any:
    try:
        import sqlean
    except ImportError:  # pragma: no cover - a dependency; only a broken install lands here
        raise BackendUnavailable(
            "the SQLite driver sqlean.py is not installed; reinstall lore-memory"
        ) from None
    return sqlean


def connect(path: Path | str, *, create: bool = True) -> Any:
    """Open the database with every PRAGMA Lore relies on and sqlite-vec loaded."""
    sqlite3 = driver()
    path = Path(path)
    if str(path) != ":memory:":
        if not path.exists():
            if not create:
                raise NotALoreDatabase(f"no database at {path}; run `lore admin init`")
            if not path.parent.is_dir():
                private_dir(path.parent)
            # Lessons quote what the user typed: private by default (0600).
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        elif path.is_dir():
            raise NotALoreDatabase(f"{path} is a folder, not a Lore database")
        else:
            # A database made by an older Lore: SQLite gives -wal/-shm the file's own mode.
            for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                if p.exists():
                    make_private(p)
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise NotALoreDatabase(f"cannot open {path}: {exc}") from None
    conn.row_factory = sqlite3.Row
    try:
        # Fails here, not later, when the file is not SQLite at all.
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except sqlite3.DatabaseError:
        conn.close()
        raise NotALoreDatabase(f"{path} is not a Lore database (not an SQLite file)") from None
    _load_vec(conn)
    # A second process (the MCP server, the worker) waits for a writer instead of failing.
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # Readers never block the writer and vice versa; one file plus -wal/-shm.
    if str(path) != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
    # WAL + NORMAL: durable at checkpoints, no fsync per commit; a power cut can lose
    # the last commits but never corrupts the file.
    conn.execute("PRAGMA synchronous = NORMAL")
    # Child rows (tags, contexts, edges, evidence) go with their lesson.
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _load_vec(conn: Any) -> None:
    try:
        import sqlite_vec
    except ImportError:  # pragma: no cover
        raise BackendUnavailable("sqlite-vec is not installed; reinstall lore-memory") from None
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except Exception as exc:  # noqa: BLE001 - any failure means the same thing to the user
        raise BackendUnavailable(
            f"cannot load sqlite-vec ({exc}); run `lore admin doctor` for details"
        ) from None


@contextmanager
def atomic(conn: Any) -> Iterator[Any]:
    """One transaction; nested calls become savepoints that roll back on their own."""
    if conn.in_transaction:
        name = f"sp_{time.perf_counter_ns()}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    _begin_immediate(conn)
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _begin_immediate(conn: Any) -> None:
    # IMMEDIATE takes the write lock up front, so a transaction never fails half-way
    # on a lock upgrade; busy_timeout waits, then a few retries, then a clear error.
    sqlite3 = driver()
    for attempt in range(LOCK_RETRIES):
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            time.sleep(0.05 * (attempt + 1))
    raise StoreBusy("the database is locked by another Lore process; try again in a moment")


def versions(conn: Any) -> dict[str, str]:
    sqlite3 = driver()
    vec = conn.execute("SELECT vec_version()").fetchone()[0]
    return {"sqlite": sqlite3.sqlite_version, "sqlite_vec": vec, "driver": "sqlean.py"}
