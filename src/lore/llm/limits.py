"""What every call goes through, whatever the provider: redact, cut, budget, call, log.

:func:`open_provider` is how Lore gets a model: it resolves the settings an entry
point passes in (the key from the environment variable named in the config),
creates the backend through the registry and wraps it in a :class:`LimitedProvider`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from lore.errors import BudgetExceeded, ConfigError, ProviderError
from lore.llm import ledger, registry
from lore.llm.base import (
    CHARS_PER_TOKEN,
    Completion,
    Message,
    Provider,
    ProviderSettings,
    Request,
    estimate_tokens,
    request_tokens,
)
from lore.llm.ledger import Budget, Prices
from lore.redact import redact

if TYPE_CHECKING:
    from lore.config import LLMConfig

CUT_MARK = "\n[…]\n"
USAGE_FACTOR = 10  # claimed usage past this many times Lore's estimate is not believed …
USAGE_SLACK = 20_000  # … plus this many tokens of the provider's own framing
MAX_CALL_COST = 100.0  # dollars: a reported cost above this for one call is no cost
log = logging.getLogger("lore.llm")


class LimitedProvider:
    """A provider whose calls are redacted, cut to ``max_input_tokens``, budgeted and logged."""

    def __init__(self, inner: Provider, home: Path, *, max_input_tokens: int = 8000,
                 budget: Budget | None = None, prices: Prices | None = None) -> None:
        self.inner = inner
        self.home = home
        self.max_input_tokens = max_input_tokens
        self.budget = budget or Budget()
        self.prices = prices

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    def prepare(self, request: Request) -> Request:
        """The request as it will be sent: secrets redacted, then cut to the input budget."""
        system = redact(request.system)
        messages = tuple(Message(m.role, redact(m.content)) for m in request.messages)
        room = self.max_input_tokens * CHARS_PER_TOKEN - len(system)
        if room < 0:
            raise ProviderError(f"{self.name}: the instructions alone exceed llm.max_input_tokens "
                                f"({self.max_input_tokens}); raise it")
        return replace(request, system=system, messages=cut_messages(messages, room))

    def complete(self, request: Request) -> Completion:
        request = self.prepare(request)
        tokens_in = request_tokens(request)
        cost_needed = self.prices.cost(tokens_in, request.max_tokens) if self.prices else None
        try:
            ledger.check_budget(self.home, self.name, self.budget, tokens_in + request.max_tokens,
                                cost_needed)
        except BudgetExceeded:
            self._log(request, None, 0.0, "budget", 0)
            raise
        started = time.monotonic()
        try:
            completion = self.inner.complete(request)
        except ProviderError as exc:
            self._log(request, None, time.monotonic() - started, "error", exc.attempts)
            raise
        completion, claimed = believable(request, completion)
        self._log(request, completion, completion.latency_s, "ok", completion.attempts, claimed)
        return completion

    def _cost(self, completion: Completion) -> float | None:
        if completion.cost_usd is not None:
            return completion.cost_usd
        if self.prices is None:
            return None
        return self.prices.cost(completion.input_tokens, completion.output_tokens)

    def _log(self, request: Request, completion: Completion | None, latency: float, outcome: str,
             attempts: int, claimed: tuple[int, int] | None = None) -> None:
        extra: dict[str, object] = {}
        if claimed is not None:  # what the provider said it used, not believed
            extra["claimed_tokens"] = list(claimed)
            log.warning("%s: the reply claims %s input and %s output tokens, more than %d times "
                        "Lore's estimate of the request and reply (or no count); counted %d and "
                        "%d instead", self.name, *claimed, USAGE_FACTOR,
                        completion.input_tokens if completion else 0,
                        completion.output_tokens if completion else 0)
        ledger.append(self.home, {
            "ts": ledger.now().isoformat(timespec="milliseconds"),
            "provider": self.name,
            "model": completion.model if completion else self.model,
            "purpose": request.purpose,
            "input_tokens": completion.input_tokens if completion else 0,
            "output_tokens": completion.output_tokens if completion else 0,
            "estimated": completion.estimated if completion else False,
            "cost_usd": self._cost(completion) if completion else None,
            "latency_s": round(latency, 3),
            "attempts": attempts,
            "outcome": outcome,
            **extra,
        })


def believable(request: Request, completion: Completion) -> tuple[Completion, tuple[int, int] | None]:
    """``completion`` with token counts the budget may believe, and the counts the provider
    claimed when they were not (None: believed). A count that is no count (-1, see
    :func:`lore.llm.base.claimed_tokens`), or a total past :data:`USAGE_FACTOR` times Lore's
    own estimate of the request and the reply plus :data:`USAGE_SLACK` (a provider's own
    framing: Claude Code's prompt, a cached prefix), is replaced by the estimate: a server
    cannot spend the day's budget by what it says it used. A reported cost that is negative,
    not a number or past :data:`MAX_CALL_COST` is dropped too."""
    cost = completion.cost_usd
    if cost is not None and not 0 <= cost <= MAX_CALL_COST:  # negative, NaN, inf, absurd
        completion = replace(completion, cost_usd=None)
    tokens_in, tokens_out = completion.input_tokens, completion.output_tokens
    estimate_in = request_tokens(request)
    estimate_out = estimate_tokens(completion.text)
    limit = USAGE_FACTOR * (estimate_in + max(estimate_out, request.max_tokens)) + USAGE_SLACK
    if min(tokens_in, tokens_out) >= 0 and tokens_in + tokens_out <= limit:
        return completion, None
    # The cost a provider reported goes with the usage it claimed: the prices, if set, count.
    return (replace(completion, input_tokens=estimate_in, output_tokens=estimate_out, estimated=True,
                    cost_usd=None), (tokens_in, tokens_out))


def cut_messages(messages: tuple[Message, ...], max_chars: int) -> tuple[Message, ...]:
    """Shorten the longest messages first until all fit in ``max_chars``.

    Every message keeps at most the same cap (found by water-filling); a cut one keeps its
    beginning and its end, where requests and questions usually sit, joined by a mark.
    """
    total = sum(len(m.content) for m in messages)
    if total <= max_chars:
        return messages
    lengths = sorted(len(m.content) for m in messages)
    cap, left = 0, max_chars
    for i, length in enumerate(lengths):
        share = left // (len(lengths) - i)
        if length > share:
            cap = share
            break
        left -= length
    return tuple(Message(m.role, _shorten(m.content, cap)) for m in messages)


def _shorten(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    keep = max(0, cap - len(CUT_MARK))
    head = keep * 2 // 3
    return text[:head] + CUT_MARK + text[len(text) - (keep - head):] if keep else text[:cap]


def provider_settings(config: LLMConfig, env: Mapping[str, str] | None = None,
                      home: Path | None = None) -> ProviderSettings:
    env = os.environ if env is None else env
    if not config.provider:
        raise ConfigError("no language model is configured: set llm.provider in config.yaml "
                          "(anthropic, openai or claude-cli; see docs/llm.md)")
    key_env = config.api_key_env or ("ANTHROPIC_API_KEY" if config.provider == "anthropic" else None)
    return ProviderSettings(name=config.provider, model=config.model, base_url=config.base_url,
                            api_key=env.get(key_env) if key_env else None, api_key_env=key_env,
                            timeout=config.timeout, max_retries=config.max_retries, home=home)


def open_provider(config: LLMConfig, home: Path, env: Mapping[str, str] | None = None) -> LimitedProvider:
    """The configured provider, within its limits; ConfigError when none is configured or it is unknown."""
    inner = registry.create(provider_settings(config, env, home))
    prices = (Prices(config.cost_per_mtok.input, config.cost_per_mtok.output)
              if config.cost_per_mtok else None)
    return LimitedProvider(inner, home, max_input_tokens=config.max_input_tokens,
                           budget=Budget(config.daily_token_budget, config.daily_cost_budget), prices=prices)
