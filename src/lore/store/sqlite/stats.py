"""Usage counts, the search log and the counts ``lore stats --counts`` shows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lore.store.sqlite.db import Tables, atomic


def redact_search_log(conn: Any, rewrite: bool = False) -> int:
    """Redact the queries (and filter values) of a search log written before queries were
    redacted; shared by both backends' migrations. Returns how many rows changed.

    ``rewrite`` (SQLite, with ``secure_delete`` on): every row is deleted and written again,
    so no page keeps the old text in its free space (an update leaves it in a table's root
    page once the table has grown past one page)."""
    from lore.redact import redact, redact_value

    cur = conn.execute("SELECT * FROM search_log ORDER BY id")
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    changed = 0
    for row in rows:
        query, filters = row["query"], row["filters"]
        if isinstance(query, str):
            row["query"] = redact(query)
        if isinstance(filters, str):
            try:
                value = json.loads(filters)
            except ValueError:
                value = None
            if value is not None and (r := redact_value(value)) != value:
                row["filters"] = json.dumps(r)
        if (row["query"], row["filters"]) != (query, filters):
            changed += 1
            if not rewrite:
                conn.execute("UPDATE search_log SET query = ?, filters = ? WHERE id = ?",
                             (row["query"], row["filters"], row["id"]))
    if rewrite and changed:
        conn.execute("DELETE FROM search_log")
        conn.executemany(
            f"INSERT INTO search_log ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
            [tuple(row[n] for n in names) for row in rows])
    return changed


class UsageTables(Tables):
    """Usage columns of ``lessons``, ``search_log`` and grouped counts."""

    # ---- usage and the search log -----------------------------------------------------
    def merge_usage(self, seq: int, usage_count: int, last_used: str | None) -> None:
        """Keep the larger usage count and the later last-used time (import of another copy)."""
        self.conn.execute(
            "UPDATE lessons SET usage_count = max(usage_count, ?), "
            "last_used = coalesce(max(last_used, ?), last_used, ?) WHERE seq = ?",
            (usage_count, last_used, last_used, seq),
        )

    def record_usage(self, ids: Sequence[str], at: str) -> None:
        if not ids:
            return
        with atomic(self.conn):
            self.conn.executemany(
                "UPDATE lessons SET usage_count = usage_count + 1, last_used = ? WHERE id = ?",
                [(at, i) for i in ids],
            )

    def log_search(
        self, at: str, query: str, filters: dict[str, Any], ids: Sequence[str], took_ms: float,
        interface: str,
    ) -> None:
        with atomic(self.conn):
            self.conn.execute(
                "INSERT INTO search_log (at, query, filters, result_ids, took_ms, interface, "
                "author, device) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (at, query, json.dumps(filters), json.dumps(list(ids)), took_ms, interface,
                 *self.who),
            )

    # ---- statistics -------------------------------------------------------------------
    def lesson_counts(self) -> dict[str, dict[str | None, int]]:
        """Lessons counted by kind, status, confidence, project and source, most first."""
        return {column: {r[0]: r[1] for r in self.conn.execute(
            f"SELECT {column}, count(*) FROM lessons GROUP BY {column} ORDER BY count(*) DESC")}
            for column in ("kind", "status", "confidence", "project", "source")}

    def edge_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM edges").fetchone()[0])

    def search_count(self) -> int:
        """Searches logged (``search_log``)."""
        return int(self.conn.execute("SELECT count(*) FROM search_log").fetchone()[0])

    def top_queries(self, limit: int) -> list[tuple[str, int]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT query, count(*) FROM search_log GROUP BY query ORDER BY count(*) DESC, "
                "query LIMIT ?",
                (limit,),
            )
        ]

    def most_used(self, limit: int) -> list[tuple[str, str, int]]:
        return [
            (r[0], r[1], r[2])
            for r in self.conn.execute(
                "SELECT id, title, usage_count FROM lessons WHERE usage_count > 0 "
                "ORDER BY usage_count DESC, id LIMIT ?",
                (limit,),
            )
        ]


