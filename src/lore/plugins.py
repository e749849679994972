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
- ``lore.llm_providers``: a callable taking :class:`lore.llm.ProviderSettings` and
  returning a :class:`lore.llm.Provider`; chosen by ``llm.provider`` (:mod:`lore.llm.registry`).

The built-in backends are registered the same way in Lore's own package metadata; the
table below is what an installation without that metadata (a source checkout) still finds.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from lore.errors import ConfigError

GROUPS = ("lore.stores", "lore.embedders", "lore.extractors", "lore.llm_providers")

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
    "lore.llm_providers": {"anthropic": "lore.llm.anthropic:AnthropicProvider",
                           "openai": "lore.llm.openai_compat:OpenAICompatProvider",
                           "claude-cli": "lore.llm.claude_cli:ClaudeCliProvider"},
}


def entry_points(group: str) -> Any:
    """The installed packages' entry points of ``group`` (importlib.metadata, imported here:
    about 15 ms, spent only when a name is not built in)."""
    from importlib.metadata import entry_points as installed

    return installed(group=group)


def available(group: str) -> dict[str, str]:
    """Every backend of a group by name, with the object reference it loads."""
    found = dict(BUILTIN.get(group, {}))
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep.value)
    return found


def is_known(group: str, name: str) -> bool:
    return name in BUILTIN.get(group, {}) or name in available(group)


UNKNOWN = "unknown {what} '{name}'; valid: {names} (a plugin package adds more)"


def reference(group: str, name: str) -> str | None:
    """The object reference (``module:attribute``) registered as ``name``, or None."""
    # A built-in name needs no scan of the installed packages' metadata.
    return BUILTIN.get(group, {}).get(name) or available(group).get(name)


def load(group: str, name: str, what: str, unknown: str = UNKNOWN) -> Any:
    """The object registered as ``name`` in ``group``; ``what`` names it in the errors, and
    ``unknown`` is the message for a name nothing registered (``{what}``, ``{name}`` and
    ``{names}``, the valid ones, are filled in)."""
    ref = reference(group, name)
    if ref is None:
        names = ", ".join(sorted(available(group))) or "none"
        raise ConfigError(unknown.format(what=what, name=name, names=names))
    module, _, attr = ref.partition(":")
    try:
        obj: Any = import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except Exception as exc:  # noqa: BLE001 - a plugin's broken install is not a Lore bug
        if name in BUILTIN.get(group, {}):
            raise
        raise ConfigError(f"{what} '{name}' cannot be loaded from {ref}: "
                          f"{type(exc).__name__}: {exc}") from None
    return obj
