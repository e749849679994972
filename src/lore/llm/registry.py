"""Providers are found through the ``lore.llm_providers`` entry point group.

Each entry point names a factory: any callable taking :class:`ProviderSettings` and
returning a :class:`Provider` (a class with that ``__init__`` is one). Lore's own three
are registered in its pyproject.toml the same way a plugin registers its own.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points

from lore.errors import ConfigError
from lore.llm.base import Provider, ProviderSettings

GROUP = "lore.llm_providers"

Factory = Callable[[ProviderSettings], Provider]


def installed() -> dict[str, EntryPoint]:
    """Every provider name installed, mapped to its entry point (first one wins on a clash)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep)
    return found


def factory(name: str) -> Factory:
    providers = installed()
    ep = providers.get(name)
    if ep is None:
        names = ", ".join(sorted(providers)) or "none"
        raise ConfigError(f"unknown llm.provider '{name}' (installed: {names})")
    try:
        loaded = ep.load()
    except Exception as exc:  # a plugin's import error must not look like a Lore bug
        raise ConfigError(f"llm.provider '{name}' cannot be loaded from {ep.value}: "
                          f"{type(exc).__name__}: {exc}") from None
    if not callable(loaded):
        raise ConfigError(f"llm.provider '{name}': {ep.value} is not a provider factory")
    return loaded  # type: ignore[no-any-return]


def create(settings: ProviderSettings) -> Provider:
    provider = factory(settings.name)(settings)
    if not isinstance(provider, Provider):
        raise ConfigError(f"llm.provider '{settings.name}' made {type(provider).__name__}, which lacks "
                          "name, model or complete()")
    return provider
