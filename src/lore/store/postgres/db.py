"""The Postgres connection: the driver (psycopg 3, imported only here, only when a
``postgresql://`` database is opened), rows that read like SQLite's, transactions, errors.

The table code of the SQLite backend is shared where its SQL is portable: statements are
written with ``?`` (and ``:name``) placeholders, and :class:`Connection` turns them into
psycopg's ``%s`` (and ``%(name)s``) before they reach the server. What is not portable
(full-text search, vectors, ``INSERT OR IGNORE``, JSON functions) is overridden in this
package with Postgres's own SQL.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lore.errors import BackendUnavailable, StorageError, StoreBusy
from lore.extras import add_extra
from lore.home import mask_url as masked

INSTALL = add_extra("postgres")  # the way this Lore was installed (pipx, uv, a venv, pip)


def driver() -> Any:
    """psycopg, or a one-line error naming the extra that installs it."""
    try:
        import psycopg
    except ImportError:
        raise BackendUnavailable(
            f"the Postgres backend needs psycopg and pgvector: {INSTALL}") from None
    return psycopg


class Row(tuple):  # type: ignore[type-arg]
    """A row read by position (``r[0]``), by name (``r["id"]``) and as ``dict(r)``."""

    columns: dict[str, int]  # name -> position, shared by the rows of one result

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self.columns[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.columns)


def _row_factory(cursor: Any) -> Any:
    desc = cursor.description
    if desc is None:
        return tuple
    index = {d.name: i for i, d in enumerate(desc)}

    def make(values: Sequence[Any]) -> Row:
        row = Row(values)
        row.columns = index
        return row

    return make


_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|(?<!:):([A-Za-z_]\w*)|\?|%|\bIS \?")


def translate(sql: str) -> str:
    """``?`` -> ``%s``, ``:name`` -> ``%(name)s``, ``IS ?`` -> ``IS NOT DISTINCT FROM %s``,
    a literal ``%`` doubled; quoted strings are left as they are (but their ``%`` doubled)."""

    def sub(m: re.Match[str]) -> str:
        text = m.group(0)
        if text.startswith("'"):
            return text.replace("%", "%%")
        if text == "?":
            return "%s"
        if text == "%":
            return "%%"
        if text.startswith("IS"):
            return "IS NOT DISTINCT FROM %s"
        return f"%({m.group(1)})s"

    return _PLACEHOLDER.sub(sub, sql)


class Connection:
    """A psycopg connection in autocommit mode that speaks the SQLite backend's dialect of
    placeholders; ``BEGIN``/``SAVEPOINT`` statements run transactions as on SQLite."""

    read_only = False

    def __init__(self, raw: Any, location: str) -> None:
        self.raw = raw
        self.location = location
        self.lore_user: str | None = None
        self.lore_device: str | None = None
        self._cache: dict[str, str] = {}

    def _sql(self, sql: str) -> str:
        out = self._cache.get(sql)
        if out is None:
            out = self._cache[sql] = translate(sql)
        return out

    def execute(self, sql: str, params: Any = None, *, binary: bool = False) -> Any:
        """``binary``: results in Postgres's binary format (vectors arrive as float32 arrays
        without parsing text: 10-20 times faster for a few thousand rows)."""
        if sql.startswith("BEGIN"):
            sql = "BEGIN"
        cur = self.raw.cursor(row_factory=_row_factory, binary=binary)
        if params is None:  # no parameters: psycopg leaves the text alone
            return cur.execute(sql)
        if isinstance(params, dict):
            return cur.execute(self._sql(sql), params)
        return cur.execute(self._sql(sql), list(params))

    def executemany(self, sql: str, rows: Any) -> Any:
        rows = [r if isinstance(r, dict) else list(r) for r in rows]
        cur = self.raw.cursor(row_factory=_row_factory)
        if rows:
            cur.executemany(self._sql(sql), rows)
        return cur

    @property
    def in_transaction(self) -> bool:
        return bool(self.raw.info.transaction_status != driver().pq.TransactionStatus.IDLE)

    def close(self) -> None:
        self.raw.close()


def connect(url: str, timeout: int = 10) -> Connection:
    """Connect (autocommit: every statement outside ``atomic`` commits on its own);
    ``timeout``: seconds to wait for the server."""
    psycopg = driver()
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=timeout)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StorageError(f"cannot connect to the Postgres database {masked(url)}: {first}",
                           "check that the server runs and the URL (host, port, database, "
                           "user, password) is right") from None
    except psycopg.ProgrammingError as exc:
        reason = " ".join(str(exc).split())
        raise StorageError(f"the database URL {masked(url)} is not valid: {reason}",
                           "write it as postgresql://user:password@host:5432/database") from None
    return Connection(raw, url)


def register_vectors(conn: Connection) -> None:
    """pgvector's types for this connection (after the extension exists)."""
    try:
        from pgvector.psycopg import register_vector
    except ImportError:
        raise BackendUnavailable(
            f"the Postgres backend needs the pgvector package: {INSTALL}") from None
    register_vector(conn.raw)


@contextmanager
def atomic(conn: Connection) -> Iterator[Connection]:
    """One transaction; nested calls become savepoints that roll back on their own (the same
    statements as the SQLite backend's ``atomic``, which the shared table code calls). A
    deadlock with another writer is a StoreBusy that says to try again."""
    psycopg = driver()
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
    conn.execute("BEGIN")
    try:
        yield conn
    except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected) as exc:
        conn.execute("ROLLBACK")
        raise StoreBusy(f"another Lore process changed the same rows at once ({exc}); "
                        "try again") from None
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def chunks(items: Sequence[Any], size: int = 5000) -> Iterator[list[Any]]:
    items = list(items)
    for i in range(0, len(items), size):
        yield items[i : i + size]


def storage_error(exc: Exception, location: Any) -> StorageError | None:
    """A psycopg error the user can act on (a lost connection, a full disk, no rights)."""
    module = type(exc).__module__.split(".")[0]
    if module != "psycopg":
        return None
    psycopg = driver()
    where = masked(str(location))
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StorageError(f"the Postgres user may not change {where} ({exc})",
                            "grant it rights on the Lore tables, or use read commands only")
    if isinstance(exc, psycopg.errors.DiskFull):
        return StorageError(f"the Postgres server holding {where} is out of disk space",
                            "free space on the server and run it again")
    if isinstance(exc, psycopg.OperationalError):
        return StorageError(f"the connection to {where} failed ({str(exc).strip()})",
                            "check that the server runs and run it again")
    return None
