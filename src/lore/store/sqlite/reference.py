"""Meta values and the reference tables (confidence levels, sources, kinds, statuses, relations)."""

from __future__ import annotations

from lore.errors import InvalidInput
from lore.models import RefItem
from lore.store.sqlite.db import Tables

REF_TABLES = {
    "confidence": ("confidence_levels", "confidence level"),
    "source": ("source_types", "source"),
    "kind": ("lesson_kinds", "kind"),
    "status": ("lesson_statuses", "status"),
}


class ReferenceTables(Tables):
    """The ``meta`` key-value table and the reference tables a lesson's fields point into."""

    # ---- meta -------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def analyze(self) -> None:
        self.conn.execute("ANALYZE")

    def optimize(self) -> None:
        # SQLite's advice for every connection: cheap, and re-runs ANALYZE only where the
        # statistics are stale, so filters keep using their selective indexes as data grows.
        self.conn.execute("PRAGMA optimize")

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    # ---- reference tables -------------------------------------------------------------
    def reference(self, field: str) -> list[RefItem]:
        if field == "confidence":
            rows = self.conn.execute(
                "SELECT name, ordinal, description FROM confidence_levels ORDER BY ordinal"
            )
            return [RefItem(r[0], r[2], ordinal=r[1]) for r in rows]
        if field == "source":
            rows = self.conn.execute(
                "SELECT name, description, typical_confidence FROM source_types ORDER BY name"
            )
            return [RefItem(r[0], r[1], typical_confidence=r[2]) for r in rows]
        table = {"kind": "lesson_kinds", "status": "lesson_statuses", "relation": "relation_types"}[
            field
        ]
        rows = self.conn.execute(f"SELECT name, description FROM {table} ORDER BY name")
        return [RefItem(r[0], r[1]) for r in rows]

    def check_reference(self, field: str, value: str) -> None:
        """Raise InvalidInput listing the valid values when ``value`` is not one of them."""
        table, label = REF_TABLES[field]
        if self.conn.execute(f"SELECT 1 FROM {table} WHERE name = ?", (value,)).fetchone():
            return
        valid = ", ".join(item.name for item in self.reference(field))
        raise InvalidInput(f"invalid {label} '{value}'; valid: {valid}")

    def confidence_for_score(self, score: float) -> str:
        row = self.conn.execute(
            "SELECT name FROM confidence_levels WHERE min_score <= ? "
            "ORDER BY min_score DESC, ordinal DESC LIMIT 1",
            (score,),
        ).fetchone()
        return row[0] if row else "very-low"

    def max_confidence_ordinal(self) -> int:
        return int(self.conn.execute("SELECT max(ordinal) FROM confidence_levels").fetchone()[0])

