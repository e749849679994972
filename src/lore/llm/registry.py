"""Providers are found through the ``lore.llm_providers`` entry point group, as every other
backend is (:mod:`lore.plugins`).

Each entry point names a factory: any callable taking :class:`ProviderSettings` and
returning a :class:`Provider` (a class with that ``__init__`` is one). Lore's own three
are registered in its pyproject.toml the same way a plugin registers its own.
"""

from __future__ import annotations

from collections.abc import Callable

from lore import plugins
from lore.errors import ConfigError
from lore.llm.base import Provider, ProviderSettings

GROUP = "lore.llm_providers"

Factory = Callable[[ProviderSettings], Provider]


def installed() -> dict[str, str]:
    """Every provider name installed, mapped to the object its entry point names (first one
    wins on a clash)."""
    return plugins.available(GROUP)


def factory(name: str) -> Factory:
    loaded = plugins.load(GROUP, name, "llm.provider",
                          unknown="unknown {what} '{name}' (installed: {names})")
    if not callable(loaded):
        raise ConfigError(f"llm.provider '{name}': {plugins.reference(GROUP, name)} is not a "
                          "provider factory")
    return loaded  # type: ignore[no-any-return]


def create(settings: ProviderSettings) -> Provider:
    provider = factory(settings.name)(settings)
    if not isinstance(provider, Provider):
        raise ConfigError(f"llm.provider '{settings.name}' made {type(provider).__name__}, which lacks "
                          "name, model or complete()")
    return provider
