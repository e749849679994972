"""Backends found by name through entry points, as llm and datasette find their plugins.

A package adds a backend by declaring an entry point in one of these groups, without
editing Lore (docs/plugins.md shows how):

- ``lore.stores``: a class with ``open(location, *, create=True)`` returning a
  :class:`lore.store.protocol.Store`; chosen by the database location's scheme
  (``postgresql://…`` loads the entry point named ``postgresql``), SQLite otherwise;
- ``lore.embedders``: a class taking an :class:`lore.config.EmbeddingConfig` and returning
  an :class:`lore.embed.Embedder`; chosen by ``embedding.backend``;
- ``lore.extractors``: a class with no arguments implementing
  :class:`lore.extract.Extractor`; chosen by ``learning.extractor``;
- ``lore.llm_providers``: language-model providers, found by :mod:`lore.llm.registry`.

The built-in backends are registered the same way in Lore's own package metadata; the
table below is what an installation without that metadata (a source checkout) still finds.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from lore.errors import ConfigError

GROUPS = ("lore.stores", "lore.embedders", "lore.extractors")

BUILTIN: dict[str, dict[str, str]] = {
    "lore.stores": {"sqlite": "lore.store.sqlite:SQLiteStore",
                    "postgresql": "lore.store.postgres:PostgresStore",
                    "postgres": "lore.store.postgres:PostgresStore"},
    "lore.embedders": {
        "fastembed": "lore.embed.fastembed_backend:FastEmbedEmbedder",
        "sentence-transformers": "lore.embed.sentence_transformers_backend:SentenceTransformersEmbedder",
        "openai": "lore.embed.openai_backend:OpenAIEmbedder",
    },
    "lore.extractors": {"rules": "lore.extract.shapes:RuleExtractor"},
}


def available(group: str) -> dict[str, str]:
    """Every backend of a group by name, with the object reference it loads."""
    found = dict(BUILTIN.get(group, {}))
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep.value)
    return found


def is_known(group: str, name: str) -> bool:
    return name in BUILTIN.get(group, {}) or name in available(group)


def load(group: str, name: str, what: str) -> Any:
    """The object registered as ``name`` in ``group``; ``what`` names it in the error."""
    # A built-in name needs no scan of the installed packages' metadata.
    ref = BUILTIN.get(group, {}).get(name) or available(group).get(name)
    if ref is None:
        valid = ", ".join(sorted(available(group)))
        raise ConfigError(f"unknown {what} '{name}'; valid: {valid} (a plugin package adds more)")
    module, _, attr = ref.partition(":")
    try:
        obj: Any = import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:  # a plugin's broken install is not a Lore bug
        if name in BUILTIN.get(group, {}):
            raise
        raise ConfigError(f"{what} '{name}' cannot be loaded from {ref}: "
                          f"{type(exc).__name__}: {exc}") from None
    return obj
