"""What every request passes before any of it is parsed: the body's size, the token of a
request that changes something, and where a browser's request came from.

An ASGI layer in front of the routes, so a client without a token cannot make the server read,
hold or parse a body (a 400 MB POST is refused from its Content-Length, or as soon as a
chunked body passes the bound), and a web page cannot make a loopback server change anything:

- The body of a request is at most ``MAX_BODY`` bytes (``sync.MAX_BODY`` for /api/v1/sync);
  a larger Content-Length is refused at once, a streamed body as soon as it passes the bound
  (the body is read here, bounded, after the token was checked, and handed on whole).
- A request that changes something (any method but GET, HEAD, OPTIONS) on a server that
  requires tokens carries a valid one (the bearer token for the API, the cookie for the
  pages; a read token cannot write) before its body is read. Signing in and out are the exceptions.
- A request that changes something without a bearer token (a loopback server without tokens,
  the dashboard's forms) must come from the server's own pages: a browser's ``Sec-Fetch-Site``
  must say same-origin (or none: typed by the user), else its ``Origin`` (or ``Referer``) must
  name the host the request was sent to. A request with none of these headers is not a
  browser's, and a page cannot make a browser leave them out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import urlsplit

import anyio

from lore.errors import LoreError
from lore.web.auth import TOKEN_COOKIE, authorize, bearer
from lore.web.errors import HTTPProblem, translate

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 2 * 1024 * 1024  # bytes in a request body outside sync (a lesson is at most ~1 MB)
SYNC_PREFIX = "/api/v1/sync/"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
NO_TOKEN_NEEDED = ("/login", "/logout")  # the forms that set and clear the token cookie


def body_limit(path: str) -> int:
    if path.startswith(SYNC_PREFIX):
        from lore.web.sync import MAX_BODY as SYNC_MAX

        return SYNC_MAX
    return MAX_BODY


def too_large(limit: int) -> HTTPProblem:
    return HTTPProblem(413, f"the request body may be at most {limit // 1024 // 1024} MB; send "
                       "less (sync: fewer records per batch, sync.batch_size)", code="too_large")


class Gate:
    """The ASGI layer; ``respond(scope, problem)`` makes the answer (JSON or a page)."""

    def __init__(self, app: ASGIApp, respond: Callable[[Scope, HTTPProblem], Any]) -> None:
        self.app = app
        self.respond = respond

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", ())}
        path: str = scope.get("path", "")
        limit = body_limit(path)
        try:
            declared = headers.get("content-length")
            if declared is not None and (not declared.strip().isdigit()
                                         or int(declared) > limit):
                raise too_large(limit) if declared.strip().isdigit() else HTTPProblem(
                    400, "Content-Length must be a number of bytes")
            if scope.get("method", "GET") not in SAFE_METHODS:
                await self.check_writer(scope, headers, path)
        except HTTPProblem as exc:
            await self.refuse(scope, receive, send, exc)
            return
        except LoreError as exc:  # the token store could not be read
            status, code = translate(exc)
            await self.refuse(scope, receive, send, HTTPProblem(status, str(exc), code=code))
            return
        if scope.get("method", "GET") in SAFE_METHODS:  # no route reads their body
            await self.app(scope, receive, send)
            return
        body: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            part = message.get("body", b"")
            seen += len(part)
            if seen > limit:
                await self.refuse(scope, receive, send, too_large(limit))
                return
            body.append(part)
            if not message.get("more_body", False):
                break
        await self.app(scope, replay(b"".join(body), receive), send)

    async def check_writer(self, scope: Scope, headers: dict[str, str], path: str) -> None:
        state = scope["app"].state.lore
        token = bearer(headers.get("authorization")) if path.startswith("/api/") else None
        if state.require_token and path not in NO_TOKEN_NEEDED:
            given = token if path.startswith("/api/") else cookie(headers, TOKEN_COOKIE)
            await anyio.to_thread.run_sync(lambda: authorize(state, given, write=True))
        if not (state.require_token and token):
            same_origin(headers)

    async def refuse(self, scope: Scope, receive: Receive, send: Send,
                     problem: HTTPProblem) -> None:
        response = await anyio.to_thread.run_sync(self.respond, scope, problem)
        response.headers["Connection"] = "close"  # the unread body is not waited for
        await response(scope, receive, send)


def replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that gives the body read already, then waits as the server's would."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def cookie(headers: dict[str, str], name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def same_origin(headers: dict[str, str]) -> None:
    """Refuse a browser's request that another site's page made."""
    host = headers.get("host", "").strip().lower()
    site = headers.get("sec-fetch-site", "").strip().lower()
    if site:
        if site in ("same-origin", "none"):
            return
        raise cross_site(f"Sec-Fetch-Site: {site}")
    origin = headers.get("origin")
    if origin is not None:
        if origin.strip().lower() == "null" or netloc(origin) != host:
            raise cross_site(f"Origin: {origin.strip()[:100]}")
        return
    referer = headers.get("referer")
    if referer is not None and netloc(referer) != host:
        raise cross_site(f"Referer from {netloc(referer)[:100]}")


def netloc(url: str) -> str:
    try:
        return urlsplit(url.strip()).netloc.lower()
    except ValueError:
        return ""


def cross_site(seen: str) -> HTTPProblem:
    return HTTPProblem(403, f"a change must come from this server's own pages or carry a token "
                       f"({seen}); use the dashboard or `lore`", code="cross_site")
