"""Import of JSON Lines exports: validate every line first, then write all or nothing.

Idempotent by id: a lesson already present is left alone unless the incoming
copy is newer (``updated_at``), so importing two machines' exports into one
database gives their union. Edges are merged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import ValidationError

from lore.core.embedding import Embedding, Progress
from lore.core.lessons import Lessons
from lore.embed import document_text
from lore.errors import InvalidInput
from lore.ids import is_id, now
from lore.models import Edge, ImportReport
from lore.normalize import json_value
from lore.store import LessonRow
from lore.validation import LessonFields, LessonRecord, describe


def import_records(lessons: Lessons, embedding: Embedding, lines: Iterable[str], *,
                   skip_invalid: bool, progress: Progress | None,
                   force: bool = False) -> ImportReport:
    """Validate every line, then write all or nothing. ``force`` writes a line even when the
    stored copy is as new (sync decided the winner already, ties included)."""
    store = lessons.store
    report = ImportReport()
    parsed, errors = parse_lines(lines)
    rows: dict[int, tuple[LessonRecord, LessonRow]] = {}
    for number, rec in parsed:
        try:
            rows[number] = (rec, lessons.row(rec.id, _fields(rec), existing=None,
                                           times=(rec.created_at or now(),
                                                  rec.updated_at or now())))
        except InvalidInput as exc:
            errors.append((number, str(exc)))

    # The same lesson twice (two exports concatenated): the newest copy wins.
    newest: dict[str, int] = {}
    for number, (rec, _) in rows.items():
        best = newest.get(rec.id)
        if best is None or (rec.updated_at or "") >= (rows[best][0].updated_at or ""):
            newest[rec.id] = number
    duplicates = len(rows) - len(newest)
    rows = {n: rows[n] for n in newest.values()}

    # Edges may point at lessons later in the file or already in the database. A line
    # dropped for an edge can orphan edges of other lines, so repeat until stable.
    targets = {e.to_id for rec, _ in rows.values() for e in rec.edges}
    in_db = store.existing_ids(targets)
    while True:
        known = in_db | {rec.id for rec, _ in rows.values()}
        broken = {
            n: next(e.to_id for e in rec.edges if e.to_id not in known)
            for n, (rec, _) in rows.items()
            if any(e.to_id not in known for e in rec.edges)
        }
        if not broken:
            break
        for n, target in broken.items():
            errors.append((n, f"edge to missing lesson {target}"))
            del rows[n]
    valid = [(n, rec, row) for n, (rec, row) in sorted(rows.items())]
    errors.sort()
    if not skip_invalid:
        refuse(errors)
    report.skipped = errors
    report.unchanged += duplicates
    if valid:
        embedding.check_model()

    existing = {
        lid: store.get(lid) for lid in store.existing_ids(rec.id for _, rec, _ in valid)
    }
    writes = []
    for _, rec, row in valid:
        old = existing.get(rec.id)
        if old is not None and not force and (old.updated_at or "") >= (rec.updated_at or ""):
            report.unchanged += 1
            continue
        writes.append((rec, row, old))
    # Embed before writing, so a model failure leaves the database untouched.
    need = [(rec, row) for rec, row, old in writes
            if old is None or old.content_hash != row.values["content_hash"]]
    vectors = embedding.embed(
        [document_text(row.values["title"], row.values["content"]) for _, row in need], progress
    )
    by_id = {rec.id: v for (rec, _), v in zip(need, vectors, strict=True)}
    with store.atomic():
        fresh = []
        for rec, row, old in writes:
            if old is None:
                seq = store.insert(row)
                report.added += 1
            else:
                seq = store.seq_of(rec.id)
                store.replace(seq, row)
                report.updated += 1
            store.merge_usage(seq, rec.usage_count, rec.last_used)
            if rec.id in by_id:
                fresh.append((seq, row.values["content_hash"], by_id[rec.id]))
        embedding.store_vectors(fresh)
        for _, rec, _ in valid:
            for e in rec.edges:
                if store.add_edge(Edge(rec.id, e.to_id, e.relation.strip(),
                                            e.created_at or now())):
                    report.edges += 1
    return report


def parse_lines(lines: Iterable[str]) -> tuple[list[tuple[int, LessonRecord]],
                                                list[tuple[int, str]]]:
    """The export lines read as records, without a store: (line number, record) of those
    that are lessons, and (line number, reason) of those that are not. Blank lines are
    neither."""
    parsed: list[tuple[int, LessonRecord]] = []
    errors: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            parsed.append((number, _parse(line)))
        except InvalidInput as exc:
            errors.append((number, str(exc)))
    return parsed, errors


def refuse(errors: list[tuple[int, str]]) -> None:
    """An import with invalid lines is refused whole: the first line's reason, and how many
    more there are."""
    if not errors:
        return
    number, reason = errors[0]
    more = f" (and {len(errors) - 1} more invalid lines)" if len(errors) > 1 else ""
    raise InvalidInput(
        f"line {number}: {reason}{more}; nothing imported (--skip-invalid imports the rest)"
    )


def read_lines(data: bytes) -> list[str]:
    """The lines of a JSON Lines file: invalid UTF-8 becomes U+FFFD (the rest of the line is
    kept), and only a newline ends a line; U+2028 and other separators that ``splitlines``
    would cut at can stand raw inside a JSON string (an export writes them so)."""
    return [line.removesuffix("\r") for line in data.decode("utf-8", "replace").split("\n")]


def _parse(line: str) -> LessonRecord:
    try:
        data = json_value(line)  # lone surrogates and NULs become U+FFFD
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise InvalidInput(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InvalidInput("each line must be a JSON object (one lesson)")
    try:
        rec = LessonRecord.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(describe(exc)) from None
    if not is_id(rec.id):
        raise InvalidInput(f"id '{rec.id}' is not a ULID")
    for e in rec.edges:
        if e.from_id != rec.id:
            raise InvalidInput(f"edge from {e.from_id} listed under lesson {rec.id}")
        if e.to_id == rec.id:
            raise InvalidInput("a lesson cannot be linked to itself")
        if not e.relation.strip():
            raise InvalidInput("edge relation must not be empty")
    return rec


def _fields(rec: LessonRecord) -> LessonFields:
    """The settable fields of an export line (identity, history and edges are handled apart)."""
    return LessonFields.model_validate(
        rec.model_dump(include=set(LessonFields.model_fields), exclude_none=True))
