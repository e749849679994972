"""Storage behind one protocol (:mod:`lore.store.protocol`); SQL lives only in this package.

:func:`open_store` picks the backend from the database location: a ``scheme://`` names an
entry point of the ``lore.stores`` group (a Postgres backend would be ``postgresql``), and
a plain path is an SQLite file (:mod:`lore.store.sqlite`).
"""

from __future__ import annotations

from contextlib import contextmanager

from lore.errors import LoreError, StorageError

# typing, pathlib, re and the plugin loader cost `lore statusline` more than its query:
# names for mypy only, the loader imported where a backend is loaded.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    from lore.store.protocol import (
        PREFERENCE_COLUMNS,
        PREFERENCE_KEYS,
        TEXT_FIELDS,
        ConversationStore,
        CorrectionStore,
        LessonRow,
        LessonStore,
        SessionStore,
        Store,
        TokenStore,
    )
    from lore.store.sqlite.search import fts_query, fts_terms

# The protocols and the search helpers load on first use: `lore statusline` reads its counts
# through lore.store.glance (the standard library's sqlite3) without importing the backends.
_PROTOCOL = ("PREFERENCE_COLUMNS", "PREFERENCE_KEYS", "TEXT_FIELDS", "ConversationStore",
             "CorrectionStore", "LessonRow", "LessonStore", "SessionStore", "Store", "TokenStore")
_LAZY = {**dict.fromkeys(_PROTOCOL, "lore.store.protocol"),
         "fts_query": "lore.store.sqlite.search", "fts_terms": "lore.store.sqlite.search"}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lore.store' has no attribute '{name}'")


def backend_name(location: str | Path) -> str:
    """The scheme of ``scheme://…`` (a letter, then letters, digits, ``+.-``), else sqlite."""
    scheme, sep, _ = str(location).partition("://")
    if (sep and scheme[:1].isascii() and scheme[:1].isalpha()
            and all(c.isascii() and (c.isalnum() or c in "+.-") for c in scheme)):
        return scheme.lower()
    return "sqlite"


def _backend(location: str | Path) -> Any:
    from lore import plugins

    return plugins.load("lore.stores", backend_name(location), "database backend")


def storage_error(exc: Exception, location: str | Path) -> StorageError | None:
    """A backend's own exception (a read-only file, a full disk …) as the StorageError that says
    what to do; None when it is something else. A backend offers this as ``storage_error``."""
    try:
        cls = _backend(location)
    except LoreError:
        return None
    translate = getattr(cls, "storage_error", None)
    found: StorageError | None = translate(exc, location) if translate else None
    return found


def diagnose(location: str | Path) -> list[tuple[str, bool, str, str]]:
    """The backend's own health checks for ``lore doctor``: (name, ok, detail, fix)."""
    try:
        cls = _backend(location)
    except LoreError as exc:
        return [("database backend", False, str(exc), "use a path or a postgresql:// URL")]
    checks: list[tuple[str, bool, str, str]] = cls.diagnose() if hasattr(cls, "diagnose") else []
    return checks


@contextmanager
def session_reader(location: str | Path, user: str | None = None) -> Iterator[SessionStore]:
    """The SessionStart context's queries on an existing database, without migrating or
    loading a model (the hook's path); ``user``: whose personal lessons count."""
    cls = _backend(location)
    if hasattr(cls, "session_reader"):
        with cls.session_reader(str(location), user) as reader:
            yield reader
        return
    store: Store = cls.open(location, create=False)  # a plugin without the light path
    try:
        store.set_identity(user, None)
        yield store.sessions
    finally:
        store.close()


def open_store(location: str | Path, *, create: bool = True) -> Store:
    """Open (and migrate) the database at ``location`` with the backend it names."""
    cls = _backend(location)
    store: Store = cls.open(location, create=create)
    return store


__all__ = [
    "open_store", "session_reader", "diagnose", "storage_error", "backend_name", "Store", "LessonStore",
    "ConversationStore", "CorrectionStore",
    "SessionStore", "TokenStore", "LessonRow", "fts_query", "fts_terms", "PREFERENCE_COLUMNS",
    "PREFERENCE_KEYS",
    "TEXT_FIELDS",
]
