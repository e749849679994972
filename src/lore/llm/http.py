"""One JSON POST with a deadline, a size cap, retries and one-line errors, shared by the HTTP
providers.

Bounds, whatever the server does:

- **time**: each attempt ends within ``llm.timeout`` (connecting, sending, the reply's head and
  its whole body, not each read), and the whole call, its retries and the waits between them
  included, within :data:`CALL_FACTOR` × ``llm.timeout``. A watchdog shuts the connection's
  socket down at the attempt's deadline, so a server that trickles a byte every few seconds
  (each read well inside the timeout) is cut off all the same; a wait for a retry that would
  pass the call's deadline is not made. Only the name lookup is outside the watchdog (the
  system resolver's own timeout bounds it).
- **size**: a reply larger than :data:`MAX_REPLY_BYTES` (announced or read) is refused in one
  line, read no further;
- **shape**: the reply is parsed by :func:`lore.llm.base.loads`, which refuses JSON nested
  deeper than :data:`lore.llm.base.MAX_DEPTH` levels in one line (never a RecursionError);
- **reach**: a refused connection or an unknown host fails at once, without retries: no later
  attempt cures them within the timeout, and the message names the host and the cause.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from contextlib import suppress
from typing import Any
from urllib.parse import urlsplit

import httpx

from lore.errors import ProviderError
from lore.llm.base import ProviderSettings, Request, loads, retries_for
from lore.llm.retry import Retryable, RetryPolicy, parse_retry_after, with_retries

CALL_FACTOR = 2.0  # a call, retries and waits included, ends within this many llm.timeout
MAX_REPLY_BYTES = 4 * 1024 * 1024  # a completion's JSON is a few kB; max_tokens caps the text
ERROR_BYTES = 64 * 1024  # of an error reply, enough for its message


class _Deadline(Exception):
    """The attempt's deadline passed while the reply was being read."""


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class HTTPProvider:
    """What the HTTP providers share: the settings they keep and one POST of a request."""

    def __init__(self, settings: ProviderSettings, model: str, url: str, key_hint: str) -> None:
        self.name = settings.name
        self.model = model
        self._url = url
        self._key = settings.api_key
        self._key_hint = key_hint  # where the key comes from, for the 401/403 message
        self._timeout = settings.timeout
        self._retries = settings.max_retries

    def post(self, request: Request, body: dict[str, Any],
             headers: dict[str, str]) -> tuple[dict[str, Any], int, float]:
        """The decoded reply, the attempts it took and the seconds it took."""
        started = time.monotonic()
        data, attempts = post_json(self.name, self._url, body, headers=headers, timeout=self._timeout,
                                   policy=RetryPolicy(max_retries=retries_for(request, self._retries)),
                                   key_hint=self._key_hint)
        return data, attempts, time.monotonic() - started


def post_json(provider: str, url: str, body: dict[str, Any], *, headers: dict[str, str],
              timeout: float, policy: RetryPolicy, key_hint: str = "") -> tuple[dict[str, Any], int]:
    """POST ``body``; return the decoded JSON reply and the number of attempts it took.

    ``key_hint`` says where the key comes from, for the 401/403 message.
    """
    call_deadline = time.monotonic() + timeout * CALL_FACTOR
    host = urlsplit(url).hostname or url
    # No connection kept between attempts: each one connects anew, so the watchdog always
    # holds the socket the attempt reads from.
    limits = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(timeout=timeout, follow_redirects=False, limits=limits) as client:

        def attempt() -> dict[str, Any]:
            budget = min(timeout, call_deadline - time.monotonic())
            if budget <= 0:
                raise _late(provider, url, timeout)
            try:
                status, reply_headers, raw = _exchange(client, url, body, headers, budget)
            except _Deadline:
                raise Retryable(_late(provider, url, timeout)) from None
            except _TooLarge as exc:
                raise ProviderError(
                    f"{provider}: {url} sent a reply of more than {MAX_REPLY_BYTES:,} bytes "
                    f"({exc.size:,} read or announced); a completion is never that large: "
                    "check llm.base_url") from None
            except httpx.TimeoutException:
                raise Retryable(_late(provider, url, timeout)) from None
            except httpx.TransportError as exc:
                cause = unreachable(exc)
                if cause:
                    raise ProviderError(f"{provider}: cannot reach {host}: {cause}; is the server "
                                        "running and llm.base_url right?") from None
                raise Retryable(ProviderError(
                    f"{provider}: cannot reach {url} ({type(exc).__name__}); "
                    "is the server running and llm.base_url right?")) from None
            return _decode(provider, url, status, reply_headers, raw, key_hint)

        return with_retries(attempt, policy, deadline=call_deadline)


def _late(provider: str, url: str, timeout: float) -> ProviderError:
    return ProviderError(f"{provider}: no reply from {url} within {timeout:g} s; "
                         "raise llm.timeout or check the server")


def _exchange(client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str],
              budget: float) -> tuple[int, httpx.Headers, bytes]:
    """One request, read whole within ``budget`` seconds and :data:`MAX_REPLY_BYTES`."""
    sockets: list[socket.socket] = []
    late = threading.Event()

    def trace(event: str, info: dict[str, Any]) -> None:
        if event not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        try:
            sock = info["return_value"].get_extra_info("socket")
        except Exception:  # noqa: BLE001 - a transport without one: the read checks remain
            return
        if isinstance(sock, socket.socket):
            sockets.append(sock)

    def cut() -> None:
        late.set()
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a read blocked in another thread

    deadline = time.monotonic() + budget
    watchdog = threading.Timer(budget, cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        # Uncompressed: the size cap counts what is read (a server that compresses anyway is
        # unpacked up to the cap, see _decoded).
        with client.stream("POST", url, json=body, headers={"accept-encoding": "identity", **headers},
                           timeout=httpx.Timeout(budget), extensions={"trace": trace}) as response:
            cap = MAX_REPLY_BYTES if response.status_code < 400 else ERROR_BYTES
            announced = response.headers.get("content-length", "")
            if announced.isdigit() and int(announced) > MAX_REPLY_BYTES:
                raise _TooLarge(int(announced))
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_raw():
                size += len(chunk)
                if size > cap:
                    if cap == MAX_REPLY_BYTES:
                        raise _TooLarge(size)
                    chunks.append(chunk[:cap - (size - len(chunk))])
                    break  # an error's first bytes say enough
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise _Deadline
            raw = b"".join(chunks)
            try:
                raw = _decoded(raw, response.headers.get("content-encoding", ""), cap)
            except ValueError:
                raw = b""
            return response.status_code, response.headers, raw
    except httpx.TransportError:
        if late.is_set():
            raise _Deadline from None
        raise
    finally:
        watchdog.cancel()


def _decoded(raw: bytes, encoding: str, cap: int) -> bytes:
    """``raw`` as sent with ``Content-Encoding`` undone (gzip, deflate), at most ``cap`` bytes
    unpacked: a small compressed body must not unpack into a huge one."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    import zlib

    if encoding not in ("gzip", "deflate", "x-gzip"):
        raise ValueError(f"content-encoding {encoding}")
    unpack = zlib.decompressobj(wbits=47)  # gzip or zlib, told by the header
    out = unpack.decompress(raw, cap + 1)
    if len(out) > cap:
        raise _TooLarge(len(out))
    return out


def unreachable(exc: BaseException) -> str | None:
    """"connection refused" or "unknown host" when that is why ``exc`` (an httpx transport
    error) happened, found in its chain of causes; None otherwise."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == \
                errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "unknown host"
        cause = cause.__cause__ or cause.__context__
    text = str(exc)
    if "Connection refused" in text:
        return "connection refused"
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return None


def _decode(provider: str, url: str, status: int, headers: httpx.Headers, raw: bytes,
            key_hint: str) -> dict[str, Any]:
    if status < 400:
        try:
            data = loads(raw)
        except ValueError as exc:
            why = str(exc) if "nested" in str(exc) else "something that is not JSON"
            raise ProviderError(f"{provider}: {url} replied HTTP {status} with {why}; is "
                                "llm.base_url the API's address?") from None
        if not isinstance(data, dict):
            raise ProviderError(f"{provider}: {url} replied with JSON that is not an object")
        return data
    detail = _error_detail(raw)
    error = ProviderError(f"{provider}: HTTP {status}{detail}; {_advice(status, key_hint)}")
    if status == 429 or status >= 500:
        raise Retryable(error, parse_retry_after(headers.get("retry-after")))
    raise error


def _error_detail(raw: bytes) -> str:
    """The server's own explanation, on one line: Anthropic and OpenAI nest it, others do not."""
    try:
        data = loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace")
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
