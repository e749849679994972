"""What is received and merged: lessons from other devices meet this home's versions. The
later ``updated_at`` wins, a tie goes to the greater device id, a deletion is a version like any
other, and the version that lost is kept in ``lesson_history``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lore.core.embedding import Embedding
from lore.core.lessons import Lessons
from lore.core.sync.records import (
    MergeReport,
    redacted,
    sane,
    tombstone,
    trust_gate,
    written_by,
)
from lore.core.transfer import import_records
from lore.errors import InvalidInput
from lore.ids import now
from lore.store import Store


def merge(store: Store, lessons: Lessons, embedding: Embedding, own: str,
          items: Sequence[tuple[str, Any]]) -> MergeReport:
    """Lessons from other devices, (device, exported lesson) each. The later
    ``updated_at`` wins, a tie goes to the greater device id; the version that lost is
    kept in the history. All are validated before anything is written."""
    report = MergeReport()
    newest: dict[str, tuple[tuple[str, str], dict[str, Any]]] = {}
    for device, data in items:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise InvalidInput("a lesson record needs its exported fields with an id")
        if not device or not isinstance(data.get("updated_at"), str):
            raise InvalidInput(f"lesson {data['id']}: a synced lesson needs its device and "
                               "updated_at")
        if not sane(data["updated_at"]):  # a far-future date would win every conflict
            report.refused += 1
            continue
        key = (data["updated_at"], device)
        if data["id"] not in newest or key > newest[data["id"]][0]:
            newest[data["id"]] = (key, data)
    if not newest:
        return report
    existing = store.existing_ids(newest)
    origins = store.sync.origins(list(existing))
    deleted = store.sync.deletions([i for i in newest if i not in existing])
    winners: list[tuple[tuple[str, str], dict[str, Any]]] = []
    removals: list[tuple[tuple[str, str], str]] = []
    at = now()
    for lid, (key, data) in newest.items():
        if lid in existing:
            old = store.get(lid)
            old_device = written_by(old, origins, own)
            # A stored date that is not believable (written before the server refused
            # them) loses to any real edit.
            local: tuple[tuple[str, str], dict[str, Any]] = (
                (old.updated_at if sane(old.updated_at) else "", old_device), old.to_dict())
        elif lid in deleted:  # deleted here, or a deletion sync brought before
            gone_at, by = deleted[lid]
            local = ((gone_at if sane(gone_at) else "", by), tombstone(lid, gone_at))
        else:
            local = (("", ""), {})
        if key == local[0] or (data.get("deleted") and local[1].get("deleted")):
            report.unchanged += 1
            continue
        win = key > local[0]
        if local[1] and local[0][1] != key[1]:  # two devices changed it: keep the loser
            report.conflicts += 1
            loser = local if win else (key, data)
            store.sync.add_history({
                "lesson_id": lid, "device": loser[0][1], "updated_at": loser[0][0], "at": at,
                "outcome": "replaced" if win else "refused",
                "winner_device": max(key, local[0])[1],
                "winner_updated_at": max(key, local[0])[0], "data": loser[1]})
        if not win:
            report.unchanged += 1
        elif data.get("deleted"):
            removals.append((key, lid))
        else:
            winners.append((key, data))
    with store.atomic():
        for (deleted_at, device), lid in removals:
            if lid in existing:
                lessons.delete(lid)
                report.deleted += 1
            store.sync.record_deletion(lid, deleted_at, device)
    known = store.existing_ids({str(e.get("to")) for _, d in winners
                                     for e in d.get("edges") or [] if isinstance(e, dict)})
    known |= {d["id"] for _, d in winners}
    lines = []
    for _, data in winners:
        data = trust_gate(redacted("lesson", data))
        data["edges"] = [e for e in data.get("edges") or []
                         if isinstance(e, dict) and e.get("to") in known]
        lines.append(json.dumps(data, ensure_ascii=False))
    with store.atomic():
        result = import_records(lessons, embedding, lines, skip_invalid=False,
                                progress=None, force=True)
        for (updated_at, device), data in winners:
            store.sync.set_origin(data["id"], device, updated_at)
    report.added += result.added
    report.updated += result.updated
    return report
