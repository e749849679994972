"""Access tokens for the web server (`lore serve`): made, listed, revoked and checked.

A token reads ``lore_<id>_<secret>``. The id finds the row; only a SHA-256 of a per-token
salt and the secret is stored, so a copied database gives no usable token. The secret is
returned once, when the token is made.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

from lore.errors import InvalidInput, NotFound, StoreBusy
from lore.ids import new_id, now
from lore.store import Store
from lore.store.rows import NewToken, Token

SCOPES = ("read", "write")
_TOKEN = re.compile(r"^lore_([0-9A-HJKMNP-TV-Z]{26})_([A-Za-z0-9_-]{43})$")
_NAME_MAX = 100


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token as listed: never its secret."""

    id: str
    name: str
    scope: str
    created_at: str
    last_used_at: str | None
    revoked_at: str | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "scope": self.scope,
                "created_at": self.created_at, "last_used_at": self.last_used_at,
                "revoked_at": self.revoked_at, "active": self.active}


def _info(row: Token) -> TokenInfo:
    return TokenInfo(row["id"], row["name"], row["scope"], row["created_at"],
                     row["last_used_at"], row["revoked_at"])


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode("ascii")).hexdigest()


class Tokens:
    """The facade's part for server tokens."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def create(self, scope: str, name: str | None = None) -> tuple[TokenInfo, str]:
        """Make a token; return it and its full text, which is never shown again."""
        if scope not in SCOPES:
            raise InvalidInput(f"invalid scope '{scope}'; valid: {', '.join(SCOPES)}")
        name = (name or "").strip() or f"{scope} token"
        if len(name) > _NAME_MAX:
            raise InvalidInput(f"a token name has at most {_NAME_MAX} characters")
        token_id, secret, salt = new_id(), secrets.token_urlsafe(32), secrets.token_hex(16)
        row: NewToken = {"id": token_id, "name": name, "scope": scope, "salt": salt,
               "secret_hash": _digest(salt, secret), "created_at": now()}
        with self.store.atomic():
            self.store.tokens.insert_token(row)
        return _info({**row, "last_used_at": None, "revoked_at": None}), f"lore_{token_id}_{secret}"

    def list(self) -> list[TokenInfo]:
        return [_info(r) for r in self.store.tokens.list_tokens()]

    def revoke(self, token_id: str) -> TokenInfo:
        row = self.store.tokens.token(token_id.strip().upper())
        if row is None:
            raise NotFound(f"no token '{token_id}'; `lore serve token list` shows them")
        if row["revoked_at"] is None:
            with self.store.atomic():
                self.store.tokens.revoke_token(row["id"], now())
            row = self.store.tokens.token(row["id"]) or row
        return _info(row)

    def active_count(self) -> int:
        return sum(1 for t in self.list() if t.active)

    def verify(self, text: str) -> TokenInfo | None:
        """The active token this text is, or None (malformed, unknown, wrong secret, revoked)."""
        m = _TOKEN.match(text.strip())
        if m is None:
            return None
        row = self.store.tokens.token(m.group(1))
        if row is None or row["revoked_at"] is not None:
            return None
        if not hmac.compare_digest(row["secret_hash"], _digest(row["salt"], m.group(2))):
            return None
        stamp = now()
        if (row["last_used_at"] or "")[:16] != stamp[:16] and not self.store.read_only:
            try:  # at most one write a minute per token; a busy writer must not refuse a request
                with self.store.atomic():
                    self.store.tokens.touch_token(row["id"], stamp)
                row = {**row, "last_used_at": stamp}
            except StoreBusy:
                pass
        return _info(row)
