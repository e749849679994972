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
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lore.errors import (
    BackendUnavailable,
    NotALoreDatabase,
    ReadOnlyDatabase,
    StorageError,
    StoreBusy,
    os_error_message,
)
from lore.private import make_private, private_dir

BUSY_TIMEOUT_MS = 5000
WAL_CHECKPOINT_PAGES = 256  # pages (4 kB) the write-ahead log reaches before a checkpoint
WAL_LIMIT_BYTES = 1024 * 1024  # the log is cut back to this after a checkpoint
LOCK_RETRIES = 5
CHUNK = 500  # bound parameters per IN (...) list


def driver() -> Any:
    try:
        import sqlean
    except ImportError:  # pragma: no cover - a dependency; only a broken install lands here
        raise BackendUnavailable(
            "the SQLite driver sqlean.py is not installed; reinstall loreloop"
        ) from None
    return sqlean


def connect(path: Path | str, *, create: bool = True) -> Any:
    """Open the database with every PRAGMA Lore relies on and sqlite-vec loaded.

    A database whose file or folder is not writable opens read-only (``conn.read_only``):
    reading works, a write raises an error that says so. Every other reason a file cannot
    be used raises StorageError or NotALoreDatabase naming the path and the fix.
    """
    sqlite3 = driver()
    read_only = False
    target = str(path)
    if target != ":memory:":
        path = Path(path)
        read_only = _prepare(path, create)
        if read_only:
            target = _read_only_uri(path)
    try:
        conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False,
                               factory=_connection_class(), uri=read_only)
    except sqlite3.Error as exc:
        raise storage_error(exc, path) or NotALoreDatabase(f"cannot open {path}: {exc}") from None
    conn.read_only = read_only
    conn.row_factory = sqlite3.Row
    try:
        # Fails here, not later, when the file is not SQLite at all.
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        # A folder that cannot hold the -wal/-shm files is not a wrong file: say which it is.
        raise storage_error(exc, path) or NotALoreDatabase(
            f"{path} is not a Lore database (not an SQLite file)") from None
    _load_vec(conn)
    # A second process (the MCP server, the worker) waits for a writer instead of failing.
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # Readers never block the writer and vice versa; one file plus -wal/-shm.
    if str(path) != ":memory:" and not read_only:
        conn.execute("PRAGMA journal_mode = WAL")
        # A small write-ahead log: checkpointed every 256 pages (1 MB, not SQLite's 4 MB) and
        # cut back to 1 MB after a checkpoint, so a small or nearly full disk holds it.
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
        conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")
    # WAL + NORMAL: durable at checkpoints, no fsync per commit; a power cut can lose
    # the last commits but never corrupts the file.
    conn.execute("PRAGMA synchronous = NORMAL")
    # Child rows (tags, contexts, edges, evidence) go with their lesson.
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


_CONNECTION: Any = None


def _connection_class() -> Any:
    """The driver's Connection with a ``read_only`` flag the interfaces can consult."""
    global _CONNECTION
    if _CONNECTION is None:
        class Connection(driver().Connection):  # type: ignore[misc,name-defined]
            read_only = False
            lore_user: str | None = None  # who writes (Store.set_identity)
            lore_device: str | None = None

        _CONNECTION = Connection
    return _CONNECTION


def _prepare(path: Path, create: bool) -> bool:
    """Check the file and its folder before SQLite sees them; create a missing file
    (mode 0600). Returns True when the database can only be read."""
    try:
        st = path.stat()
    except FileNotFoundError:
        if not create:
            raise NotALoreDatabase(f"no database at {path}; run `lore admin init`") from None
        _create(path)
        return False
    except NotADirectoryError:
        raise _file_in_the_way(path) from None
    except OSError as exc:
        raise StorageError(*os_error_message(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise NotALoreDatabase(f"{path} is a folder, not a Lore database")
    if not os.access(path, os.R_OK):
        raise StorageError(f"cannot read the database {path}: permission denied",
                           "check its owner and mode (ls -l), e.g. chmod 600 it as its owner")
    # A database made by an older Lore: SQLite gives -wal/-shm the file's own mode.
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if p.exists():
            make_private(p)
    return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK))


def _create(path: Path) -> None:
    folder = path.parent
    for parent in (folder, *folder.parents):
        if parent.exists():
            if not parent.is_dir():
                raise _file_in_the_way(path)
            break
    try:
        private_dir(folder)
        # Lessons quote what the user typed: private by default (0600).
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise StorageError(*os_error_message(exc)) from None


def _file_in_the_way(path: Path) -> StorageError:
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            return StorageError(f"{parent} is a file, not a folder, so {path} cannot be there",
                                "point LORE_HOME (or --db) at a folder, or move the file away")
    return StorageError(f"a part of {path} is not a folder", "check the path")


def _read_only_uri(path: Path) -> str:
    """``mode=ro`` when SQLite can still keep its -shm file next to the database; else
    ``immutable=1``, which reads the file alone: safe only when no WAL holds newer pages."""
    from urllib.parse import quote

    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    if os.access(path.parent, os.W_OK | os.X_OK) or Path(f"{path}-shm").exists():
        return uri
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StorageError(f"{path.parent} is read-only and {wal.name} holds writes not yet "
                           "merged into the database, so it cannot be read safely",
                           "make the folder writable once (any lore command then merges them)")
    return uri + "&immutable=1"


def _nearly_full(folder: Path) -> bool:
    """A write that failed on a full disk can surface as an I/O error (the -shm mapping)."""
    try:
        vfs = os.statvfs(folder)
    except OSError:
        return False
    return vfs.f_bavail * vfs.f_frsize < 1024 * 1024


# SQLite's primary result codes a user can cause through the file system.
SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 3, 8, 10, 13, 14


def storage_error(exc: Exception, path: Path | str) -> StorageError | None:
    """The StorageError for an SQLite error caused by the file or its folder, else None."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    code &= 0xFF  # extended codes keep the primary code in the low byte
    folder = Path(path).parent
    if code == SQLITE_READONLY:
        return ReadOnlyDatabase(f"the database {path} is read-only here (its file or folder is "
                                "not writable), so this command cannot change it",
                                f"make {path} and {folder} writable, or use read commands only")
    if code == SQLITE_FULL or (code == SQLITE_IOERR and _nearly_full(folder)):
        return StorageError(f"no space left on the disk holding {path}",
                            "free some space (df -h shows how much is left) and run it again")
    if code == SQLITE_CANTOPEN or code == SQLITE_PERM:
        return StorageError(f"SQLite cannot open {path} or create its -wal/-shm files in "
                            f"{folder} ({exc})",
                            "check that the folder exists and that you may read and write it")
    if code == SQLITE_IOERR:
        return StorageError(f"disk I/O error on {path} ({exc})",
                            "check the disk (free space, dmesg) and run it again")
    return None


def _load_vec(conn: Any) -> None:
    # The extension file is found without importing the sqlite_vec package: its module
    # imports numpy when installed (~0.1 s), which the hooks and `lore review` never need.
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover
        raise BackendUnavailable("sqlite-vec is not installed; reinstall loreloop")
    extension = os.path.join(list(spec.submodule_search_locations)[0], "vec0")
    try:
        conn.enable_load_extension(True)
        conn.load_extension(extension)
        conn.enable_load_extension(False)
    except Exception as exc:  # noqa: BLE001 - any failure means the same thing to the user
        raise BackendUnavailable(
            f"cannot load sqlite-vec ({exc}); run `lore doctor` for details"
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


def check_fts5() -> None:
    """Raise unless the driver's SQLite has FTS5 (``lore doctor`` reports it)."""
    conn = driver().connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    finally:
        conn.close()


def versions(conn: Any) -> dict[str, str]:
    sqlite3 = driver()
    vec = conn.execute("SELECT vec_version()").fetchone()[0]
    return {"sqlite": sqlite3.sqlite_version, "sqlite_vec": vec, "driver": "sqlean.py"}


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    """Long ``IN (...)`` lists in pieces SQLite accepts."""
    items = list(items)
    for i in range(0, len(items), size):
        yield items[i : i + size]


class Tables:
    """A group of tables over one connection (the store is made of these)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    @property
    def who(self) -> tuple[str | None, str | None]:
        """(user, device) stamped on the rows this connection writes (None: not set)."""
        return getattr(self.conn, "lore_user", None), getattr(self.conn, "lore_device", None)

    def visible(self, alias: str = "l") -> tuple[str, list[Any]]:
        """The one condition every read that returns lessons to a person applies: another
        user's personal lessons are left out (a lesson without an author is everyone's). An
        empty condition until the user is known (the store was opened without an identity)."""
        user = self.who[0]
        if user is None:
            return "", []
        return (f"({alias}.visibility <> 'personal' OR {alias}.author IS NULL OR "
                f"{alias}.author = ?)", [user])
