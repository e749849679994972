"""Access tokens for `lore serve`: only a salted hash of each secret is kept."""

from __future__ import annotations

from typing import cast

from lore.store.rows import NewToken, Token
from lore.store.sqlite.db import Tables

_COLUMNS = "id, name, scope, salt, secret_hash, created_at, last_used_at, revoked_at"


class TokenTables(Tables):
    """The ``server_tokens`` table."""

    def insert_token(self, row: NewToken) -> None:
        self.conn.execute(
            f"INSERT INTO server_tokens ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
            (row["id"], row["name"], row["scope"], row["salt"], row["secret_hash"],
             row["created_at"]))

    def token(self, token_id: str) -> Token | None:
        r = self.conn.execute(f"SELECT {_COLUMNS} FROM server_tokens WHERE id = ?",
                              (token_id,)).fetchone()
        return cast(Token, dict(r)) if r else None

    def list_tokens(self) -> list[Token]:
        return [cast(Token, dict(r)) for r in self.conn.execute(
            f"SELECT {_COLUMNS} FROM server_tokens ORDER BY created_at, id")]

    def revoke_token(self, token_id: str, at: str) -> bool:
        cur = self.conn.execute(
            "UPDATE server_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            (at, token_id))
        return cur.rowcount > 0

    def touch_token(self, token_id: str, at: str) -> None:
        self.conn.execute("UPDATE server_tokens SET last_used_at = ? WHERE id = ?", (at, token_id))
