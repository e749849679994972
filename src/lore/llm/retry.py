"""Retries with exponential backoff and jitter, honouring a server's Retry-After.

Only failures a later attempt can cure are retried: 429, 5xx, a refused or dropped
connection, a timeout. Any other 4xx is the caller's mistake and fails at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

from lore.errors import ProviderError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    base_s: float = 0.5  # first backoff; doubles each attempt
    cap_s: float = 20.0  # longest backoff we choose ourselves
    max_wait_s: float = 60.0  # a longer Retry-After is reported instead of slept through


class Retryable(Exception):
    """Raised inside an attempt: ``error`` if no attempt is left, else wait and try again."""

    def __init__(self, error: ProviderError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def backoff(attempt: int, policy: RetryPolicy, rng: Callable[[], float] = random.random) -> float:
    """Equal jitter: half the exponential step fixed, half random, so clients spread out."""
    step = min(policy.cap_s, policy.base_s * 2**attempt)
    return step / 2 + rng() * step / 2


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After in seconds: either delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def with_retries(attempt: Callable[[], T], policy: RetryPolicy,
                 sleep: Callable[[float], None] = time.sleep,
                 deadline: float | None = None) -> tuple[T, int]:
    """Run ``attempt`` until it returns; give back its result and how many attempts it took.
    ``deadline`` (``time.monotonic()``): no wait for another attempt that would end past it;
    the last error is raised instead."""
    tries = 0
    while True:
        tries += 1
        try:
            return attempt(), tries
        except ProviderError as exc:
            exc.attempts = tries
            raise
        except Retryable as exc:
            wait = exc.retry_after if exc.retry_after is not None else backoff(tries - 1, policy)
            exc.error.attempts = tries
            if tries > policy.max_retries:
                raise exc.error from None
            if wait > policy.max_wait_s:
                raise ProviderError(f"{exc.error} (the server asks to wait {wait:.0f} s; try again later)") \
                    from None
            if deadline is not None and time.monotonic() + wait >= deadline:
                raise exc.error from None
            sleep(wait)
