"""A store's tables read back through its copy protocol (``CopyStore``): what the tests check
of rows no read of the core returns, such as the versions sync kept in ``lesson_history``."""

from __future__ import annotations

import json
from typing import Any


def rows_of(store: Any, table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` as a dict, in the order the store exports them."""
    columns = store.copy_columns(table)
    return [dict(zip(columns, r, strict=True)) for batch in store.export_rows(table, 1000)
            for r in batch]


def history(store: Any, lesson_id: str) -> list[dict[str, Any]]:
    """The versions sync kept of ``lesson_id`` (``lesson_history``), oldest first, with their
    data decoded."""
    found = sorted((r for r in rows_of(store, "lesson_history") if r["lesson_id"] == lesson_id),
                   key=lambda r: r["id"])
    return [{**r, "data": json.loads(r["data"])} for r in found]
