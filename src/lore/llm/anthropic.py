"""Anthropic's Messages API: POST {base_url}/v1/messages with x-api-key."""

from __future__ import annotations

from typing import Any

from lore.errors import ConfigError, ProviderError
from lore.llm.base import Completion, ProviderSettings, Request, claimed_tokens
from lore.llm.http import HTTPProvider

API_VERSION = "2023-06-01"  # the anthropic-version header; the current stable one
DEFAULT_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-haiku-4-5"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"


class AnthropicProvider(HTTPProvider):
    def __init__(self, settings: ProviderSettings) -> None:
        key_env = settings.api_key_env or DEFAULT_KEY_ENV
        if not settings.api_key:
            raise ConfigError(f"{settings.name} needs an API key: set ${key_env} "
                              "(or name another variable in llm.api_key_env)")
        super().__init__(settings, settings.model or DEFAULT_MODEL,
                         (settings.base_url or DEFAULT_URL).rstrip("/") + "/v1/messages", f"${key_env}")

    def complete(self, request: Request) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if request.system:
            body["system"] = request.system
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        data, attempts, latency = self.post(request, body, {
            "x-api-key": self._key or "", "anthropic-version": API_VERSION,
            "content-type": "application/json"})
        return _completion(self.name, data, self.model, latency, attempts)


def _completion(name: str, data: dict[str, Any], model: str, latency: float, attempts: int) -> Completion:
    blocks = data.get("content")
    usage = data.get("usage")
    if not isinstance(blocks, list) or not isinstance(usage, dict):
        raise ProviderError(f"{name}: the reply has no content or usage; is llm.base_url an Anthropic API?")
    text = "".join(str(b.get("text") or "") for b in blocks
                   if isinstance(b, dict) and b.get("type") == "text")
    return Completion(text=text, input_tokens=input_tokens(usage),
                      output_tokens=claimed_tokens(usage.get("output_tokens")),
                      model=str(data.get("model") or model), latency_s=latency,
                      stop_reason=data.get("stop_reason"), attempts=attempts)


def input_tokens(usage: dict[str, Any]) -> int:
    """Prompt tokens of an Anthropic usage object (claude -p prints the same one).

    Cached prompt tokens are billed too, so they count against the budget. -1 when one of
    them is no count (:func:`lore.llm.base.claimed_tokens`).
    """
    counts = [claimed_tokens(usage.get(k)) for k in
              ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    return -1 if min(counts) < 0 else sum(counts)
