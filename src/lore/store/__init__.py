"""Storage: one SQLite file (sqlite-vec + FTS5). SQL lives only in this package."""

from lore.store.db import atomic, connect
from lore.store.lessons import LessonRow, SQLiteStore, fts_query, fts_terms
from lore.store.migrations import SCHEMA_VERSION, migrate

__all__ = [
    "atomic", "connect", "LessonRow", "SQLiteStore", "fts_query", "fts_terms", "SCHEMA_VERSION",
    "migrate",
]
