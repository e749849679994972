"""The values every provider shares: a request, a completion, and the Provider protocol.

A provider turns one :class:`Request` into one :class:`Completion`. It talks to its
model and nothing else: redaction, cutting, the budget and the log happen in
:mod:`lore.llm.limits`, retries in :mod:`lore.llm.retry`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["user", "assistant"]

# About four characters per token for English prose and code with the tokenizers of
# current models (Claude, GPT-4-class, Llama 3). It only has to be cheap and rarely low:
# it sizes the input cut and the budget check, never a bill.
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Request:
    messages: tuple[Message, ...]
    system: str = ""
    max_tokens: int = 1024
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    purpose: str = "other"  # written to the log: which feature made the call
    # At most this many retries for this call (None: the provider's llm.max_retries): a caller
    # someone is waiting on gives up sooner.
    max_retries: int | None = None

    @classmethod
    def ask(cls, text: str, *, system: str = "", **kwargs: object) -> Request:
        """A request of one user message."""
        return cls(messages=(Message("user", text),), system=system, **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    model: str
    latency_s: float
    stop_reason: str | None = None
    estimated: bool = False  # token counts estimated: the server did not report them
    cost_usd: float | None = None  # as reported by the provider (claude -p does)
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """What a backend's factory receives: resolved values, no config file, no key names."""

    name: str
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None  # named in error messages only
    timeout: float = 60.0
    max_retries: int = 3
    home: Path | None = None  # Lore's home: where a provider that runs a program runs it


@runtime_checkable
class Provider(Protocol):
    """A language model behind one call. ``name`` is the provider, ``model`` the model id."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    def complete(self, request: Request) -> Completion: ...


def retries_for(request: Request, configured: int) -> int:
    """The retries a provider allows ``request``: its own bound, never above the configured."""
    return configured if request.max_retries is None else max(0, min(configured, request.max_retries))


def estimate_tokens(text: str) -> int:
    """A cheap upper-leaning token estimate (:data:`CHARS_PER_TOKEN` characters a token)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def request_tokens(request: Request) -> int:
    return estimate_tokens(request.system) + sum(estimate_tokens(m.content) for m in request.messages)


MAX_DEPTH = 100  # a reply's JSON nested deeper than this is refused (a few levels are real)


class TooDeep(ValueError):
    """JSON nested deeper than :data:`MAX_DEPTH`."""


def loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads``, nesting-safe: JSON nested deeper than ``max_depth`` levels raises
    :class:`TooDeep` (a ValueError, one line) instead of a RecursionError from the parser or
    from whatever walks the value later. Other bad JSON raises ValueError as json does."""
    import json

    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"the JSON is nested deeper than {max_depth} levels") from None
    if depth_over(value, max_depth):
        raise TooDeep(f"the JSON is nested deeper than {max_depth} levels")
    return value


def depth_over(value: Any, max_depth: int) -> bool:
    """Whether ``value`` (lists and dicts) nests deeper than ``max_depth``; no recursion."""
    level: list[Any] = [value]
    depth = 0
    while level:
        children = [v for item in level if isinstance(item, (list, dict))
                    for v in (item.values() if isinstance(item, dict) else item)]
        if not children and not any(isinstance(item, (list, dict)) for item in level):
            return False
        depth += 1
        if depth > max_depth:
            return True
        level = children
    return False


def claimed_tokens(value: object) -> int:
    """A token count a provider reports, as an int; -1 when it is no count (missing is 0;
    text, a negative number, not finite, or past any real count is -1): LimitedProvider then
    counts its own estimate instead."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return -1
    if value != value or value < 0 or value > 10**12:  # NaN, negative, inf and beyond
        return -1
    return int(value)


def cut_middle(text: str, cap: int) -> str:
    """``text`` cut to about ``cap`` characters: its first two thirds and its end, joined by a
    mark (where a message's request and its conclusion usually sit)."""
    if len(text) <= cap:
        return text
    head = cap * 2 // 3
    return text[:head].rstrip() + " […] " + text[len(text) - (cap - head):].lstrip()


def tag_pattern(*tags: str) -> re.Pattern[str]:
    """What opens or closes one of a request's own tags (for :func:`neutral`)."""
    return re.compile(r"</?(" + "|".join(tags) + r")\b", re.IGNORECASE)


def neutral(text: str, tags: re.Pattern[str]) -> str:
    """``text`` that cannot open or close one of the request's ``tags``: a quoted "<tag" gets
    a look-alike bracket."""
    return tags.sub(lambda m: m.group(0).replace("<", "‹"), text)


SYSTEM_HEADER = "===== SYSTEM ====="
USER_HEADER = "===== USER ====="


def as_file(request: Request) -> str:
    """A request as one file, for a person or another model to answer: the system part, then
    the user part, each under a header."""
    return f"{SYSTEM_HEADER}\n{request.system.rstrip()}\n\n{USER_HEADER}\n" + "".join(
        m.content for m in request.messages).rstrip() + "\n"


@dataclass(frozen=True, slots=True)
class Built:
    """A request a task built, with what its reply refers to (in the subclasses' fields)."""

    request: Request

    @property
    def input_tokens(self) -> int:
        return request_tokens(self.request)

    def text(self) -> str:
        """The request as one file (:func:`as_file`)."""
        return as_file(self.request)
