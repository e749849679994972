"""One JSON POST with timeouts, retries and one-line errors, shared by the HTTP providers."""

from __future__ import annotations

from typing import Any

import httpx

from lore.errors import ProviderError
from lore.llm.retry import Retryable, RetryPolicy, parse_retry_after, with_retries


def post_json(provider: str, url: str, body: dict[str, Any], *, headers: dict[str, str],
              timeout: float, policy: RetryPolicy, key_hint: str = "") -> tuple[dict[str, Any], int]:
    """POST ``body``; return the decoded JSON reply and the number of attempts it took.

    ``key_hint`` says where the key comes from, for the 401/403 message.
    """
    with httpx.Client(timeout=timeout, follow_redirects=False) as client:

        def attempt() -> dict[str, Any]:
            try:
                response = client.post(url, json=body, headers=headers)
            except httpx.TimeoutException:
                raise Retryable(ProviderError(
                    f"{provider}: no reply from {url} within {timeout:g} s; "
                    "raise llm.timeout or check the server")) from None
            except httpx.TransportError as exc:
                raise Retryable(ProviderError(
                    f"{provider}: cannot reach {url} ({type(exc).__name__}); "
                    "is the server running and llm.base_url right?")) from None
            return _decode(provider, url, response, key_hint)

        return with_retries(attempt, policy)


def _decode(provider: str, url: str, response: httpx.Response, key_hint: str) -> dict[str, Any]:
    status = response.status_code
    if status < 400:
        try:
            data = response.json()
        except ValueError:
            raise ProviderError(f"{provider}: {url} replied HTTP {status} with something that is not "
                                "JSON; is llm.base_url the API's address?") from None
        if not isinstance(data, dict):
            raise ProviderError(f"{provider}: {url} replied with JSON that is not an object")
        return data
    detail = _error_detail(response)
    error = ProviderError(f"{provider}: HTTP {status}{detail}; {_advice(status, key_hint)}")
    if status == 429 or status >= 500:
        raise Retryable(error, parse_retry_after(response.headers.get("retry-after")))
    raise error


def _error_detail(response: httpx.Response) -> str:
    """The server's own explanation, on one line: Anthropic and OpenAI nest it, others do not."""
    try:
        data = response.json()
    except ValueError:
        text = response.text
    else:
        err = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(err, dict):
            text = str(err.get("message") or err.get("type") or err)
        else:
            text = str(err)
    text = " ".join(text.split())[:200]
    return f" ({text})" if text else ""


def _advice(status: int, key_hint: str) -> str:
    if status in (401, 403):
        return f"check the API key{' in ' + key_hint if key_hint else ''}"
    if status == 404:
        return "check llm.base_url and llm.model"
    if status == 429:
        return "rate limited: wait, or lower how often Lore calls the model"
    if status >= 500:
        return "the server failed; try again later"
    return "the request was refused; check llm.model and the server's documentation"
