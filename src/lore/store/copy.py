"""A whole database copied into another, across backends (``lore admin migrate-to``): an
SQLite home to a Postgres server and back. Every table of ``COPY_TABLES`` travels row by
row, in batches of one transaction each; the target rebuilds its keyword and vector indexes
from the copied rows. A target that holds lessons, sessions or corrections is refused unless
``force`` empties it first (a merge of two databases would have to renumber their keys).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lore.errors import InvalidInput
from lore.home import is_url, mask_url
from lore.store import Store, open_store
from lore.store.protocol import COPY_TABLES

BATCH = 2000
# The tables whose rows make a database "not empty" (the others hold defaults and counters).
CONTENT = ("lessons", "sessions", "corrections", "search_log", "server_tokens")

Progress = Callable[[int, int], None]  # (rows copied so far, rows in all tables)


def open_target(location: str) -> Store:
    """The target database, created (a file) or migrated (a server) as any open does."""
    if not is_url(location):
        path = Path(location).expanduser()
        if not path.parent.is_dir():
            raise InvalidInput(f"the folder of {path} does not exist; create it first")
        location = str(path)
    return open_store(location)


def copy_database(source: Store, target: Store, *, force: bool = False,
                  progress: Progress | None = None) -> dict[str, int]:
    """Copy every table of ``source`` into ``target``; the rows copied per table."""
    if source.location == target.location:
        raise InvalidInput("the target is the database being copied; name another one")
    if not force and not is_empty(target):
        raise InvalidInput(f"{mask_url(target.location)} already holds Lore data; add --force to "
                           "replace it (its lessons, conversations and history are deleted)")
    if force:
        target.clear()
    copied: dict[str, int] = {}
    total = sum(source.rows_in(t) for t in COPY_TABLES)
    done = 0
    for table in COPY_TABLES:
        have = source.copy_columns(table)
        columns = [c for c in have if c in set(target.copy_columns(table))]
        copied[table] = 0
        for batch in source.export_rows(table, BATCH):
            target.import_rows(table, columns, _project(have, columns, batch))
            copied[table] += len(batch)
            done += len(batch)
            if progress:
                progress(done, total)
    target.rebuild_indexes()
    return copied


def is_empty(store: Store) -> bool:
    return all(store.rows_in(t) == 0 for t in CONTENT)


def _project(have: list[str], want: list[str],
             rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Rows cut down to the columns both databases have, in ``want``'s order."""
    if have == want:
        return rows
    index = [have.index(c) for c in want]
    return [tuple(r[i] for i in index) for r in rows]
