"""Who may do what. On loopback without tokens, anyone on this machine may read and write, as
with the CLI; otherwise every request carries a token (`Authorization: Bearer` for the API, a
cookie set by the login form for the pages) and a read token cannot write.

The pages' forms carry a CSRF token: a random value in a SameSite=Strict cookie, repeated in a
hidden field, compared in constant time (double submit). A loopback server without tokens
answers only requests whose Host is a loopback name, so a web page cannot reach it through a
name that resolves to 127.0.0.1 (DNS rebinding)."""

from __future__ import annotations

import hmac
import secrets
from typing import TYPE_CHECKING

from lore.web.errors import HTTPProblem
from lore.web.state import LOOPBACK_HOSTS

if TYPE_CHECKING:
    from lore.core.tokens import TokenInfo
    from lore.web.state import ServerState

TOKEN_COOKIE = "lore_token"
CSRF_COOKIE = "lore_csrf"
LOCAL = "local"  # the caller on a loopback server without tokens


def host_name(host_header: str) -> str:
    """The name in a Host header, without the port."""
    if host_header.startswith("["):
        return host_header.split("]")[0] + "]"
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def check_host(state: ServerState, host_header: str | None) -> None:
    if not state.require_token and host_name(host_header or "") not in LOOPBACK_HOSTS:
        raise HTTPProblem(400, "this server answers loopback names only (localhost, 127.0.0.1); "
                          "serve with --require-token to be reached by other names")


def bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def authorize(state: ServerState, token: str | None, *, write: bool) -> TokenInfo | str:
    """The token the request acts with (or LOCAL); 401 without a valid one, 403 for a read
    token that tries to write."""
    if not state.require_token:
        return LOCAL
    info = state.verify(token)
    if info is None:
        raise HTTPProblem(401, "a valid token is required: send `Authorization: Bearer TOKEN` "
                          "(make one with `lore serve token create`)")
    if write and info.scope != "write":
        raise HTTPProblem(403, f"token '{info.name}' may only read; use a write token to change "
                          "lessons")
    return info


def new_csrf() -> str:
    return secrets.token_urlsafe(32)


def check_csrf(cookie: str | None, field: str | None) -> None:
    if not cookie or not field or not hmac.compare_digest(cookie.encode(), field.encode()):
        raise HTTPProblem(403, "the form is missing its CSRF token or it does not match; reload "
                          "the page and submit again", code="csrf")
