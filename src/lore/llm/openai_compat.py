"""Any OpenAI-compatible chat completions endpoint: Ollama, llama.cpp server, vLLM, OpenAI."""

from __future__ import annotations

from typing import Any

from lore.errors import ConfigError, ProviderError
from lore.llm.base import (
    Completion,
    ProviderSettings,
    Request,
    claimed_tokens,
    estimate_tokens,
    request_tokens,
)
from lore.llm.http import HTTPProvider

DEFAULT_URL = "http://127.0.0.1:11434/v1"  # Ollama's OpenAI-compatible API


class OpenAICompatProvider(HTTPProvider):
    def __init__(self, settings: ProviderSettings) -> None:
        if not settings.model:
            raise ConfigError(f"{settings.name} needs llm.model: the model name the server knows "
                              "(e.g. llama3.2 for Ollama)")
        if settings.api_key_env and not settings.api_key:
            raise ConfigError(f"{settings.name}: llm.api_key_env names ${settings.api_key_env}, "
                              "which is not set; set it or remove llm.api_key_env")
        super().__init__(settings, settings.model,
                         (settings.base_url or DEFAULT_URL).rstrip("/") + "/chat/completions",
                         f"${settings.api_key_env}" if settings.api_key_env else "llm.api_key_env")

    def complete(self, request: Request) -> Completion:
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": request.max_tokens,
                                "temperature": request.temperature, "stream": False}
        if request.stop:
            body["stop"] = list(request.stop)
        headers = {"content-type": "application/json"}
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        data, attempts, latency = self.post(request, body, headers)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderError(f"{self.name}: the reply has no choices; is llm.base_url a chat "
                                "completions API (…/v1)?")
        message = choices[0].get("message")
        text = str(message.get("content") or "") if isinstance(message, dict) else ""
        usage = data.get("usage")
        # Some servers (older llama.cpp builds, proxies) leave usage out: estimate it.
        estimated = not (isinstance(usage, dict) and "prompt_tokens" in usage)
        if estimated:
            tokens_in, tokens_out = request_tokens(request), estimate_tokens(text)
        else:
            assert isinstance(usage, dict)
            tokens_in = claimed_tokens(usage.get("prompt_tokens"))
            tokens_out = claimed_tokens(usage.get("completion_tokens"))
        return Completion(text=text, input_tokens=tokens_in, output_tokens=tokens_out,
                          model=str(data.get("model") or self.model), latency_s=latency,
                          stop_reason=choices[0].get("finish_reason"), estimated=estimated,
                          attempts=attempts)
