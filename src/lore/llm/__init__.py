"""The optional language model: one narrow Provider protocol and the guard every call passes.

Lore runs without a model. When the user configures one (``llm:`` in config.yaml),
features ask :func:`open_provider` for it and call ``complete`` (free text),
:func:`complete_json` (a validated structure) or a task such as :func:`second_opinion`.
Every call is redacted, cut to the input budget, checked against the daily budget and
logged to ``$LORE_HOME/logs/llm.jsonl`` (see docs/llm.md).
"""

from __future__ import annotations

from lore.llm.base import Completion, Message, Provider, ProviderSettings, Request, estimate_tokens
from lore.llm.guard import GuardedProvider, open_provider
from lore.llm.jsonreply import complete_json, extract_json
from lore.llm.ledger import Usage, usage_today
from lore.llm.opinion import SecondOpinion, second_opinion

__all__ = [
    "Completion", "GuardedProvider", "Message", "Provider", "ProviderSettings", "Request", "SecondOpinion",
    "Usage", "complete_json", "estimate_tokens", "extract_json", "open_provider", "second_opinion",
    "usage_today",
]
