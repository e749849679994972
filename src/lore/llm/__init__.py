"""The optional language model: one narrow Provider protocol and the limits every call passes.

Lore runs without a model. When the user configures one (``llm:`` in config.yaml),
features ask :func:`open_provider` for it and call ``complete`` (free text),
:func:`complete_json` (a validated structure) or a task such as :func:`second_opinion`.
Every call is redacted, cut to the input budget, checked against the daily budget and
logged to ``$LORE_HOME/logs/llm.jsonl`` (see docs/llm.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lore.llm.base import Completion, Message, Provider, ProviderSettings, Request, estimate_tokens
    from lore.llm.jsonreply import complete_json, extract_json
    from lore.llm.ledger import Usage, usage_today
    from lore.llm.limits import LimitedProvider, open_provider
    from lore.llm.opinion import SecondOpinion, second_opinion

# Each name from the module that defines it, imported on first use: a process that only needs
# lore.llm.own (the worker's start, a hook) does not load pydantic or the HTTP client.
_FROM = {"Completion": "base", "Message": "base", "Provider": "base", "ProviderSettings": "base",
         "Request": "base", "estimate_tokens": "base", "LimitedProvider": "limits",
         "open_provider": "limits", "complete_json": "jsonreply", "extract_json": "jsonreply",
         "Usage": "ledger", "usage_today": "ledger", "SecondOpinion": "opinion",
         "second_opinion": "opinion"}

__all__ = [
    "Completion", "LimitedProvider", "Message", "Provider", "ProviderSettings", "Request", "SecondOpinion",
    "Usage", "complete_json", "estimate_tokens", "extract_json", "open_provider", "second_opinion",
    "usage_today",
]


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module 'lore.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"lore.llm.{module}"), name)
    globals()[name] = value
    return value
