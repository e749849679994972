"""Seeding of the demo lessons (library side of `lore demo`)."""

from __future__ import annotations

from typing import Any

from lore.api import Lore
from lore.demo.data import LESSONS, LINKS


def seed(lore: Lore) -> dict[str, str]:
    """Add the demo lessons and links; return key -> lesson id."""
    ids: dict[str, str] = {}
    for spec in LESSONS:
        fields: dict[str, Any] = {k: v for k, v in spec.items() if k != "key"}
        lesson = lore.lessons.add(**fields)
        ids[spec["key"]] = lesson.id
    for a, b, relation in LINKS:
        lore.lessons.link(ids[a], ids[b], relation)
    return ids
