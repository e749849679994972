"""Re-embedding a database with the configured model: one batch a transaction, resumable.

A model change (or ``--force``) starts a new generation only after the configured model has
answered a probe, in one transaction: every lesson and conversation-chunk vector of the old
model is deleted and the new model recorded, with a ``reembed_started`` mark in ``meta``. From
then on the vectors all come from one model: a search finds the rows re-embedded so far by
meaning and the rest by their keywords, and never compares a query of one model with vectors
of another. Lessons, then chunks, are embedded a batch at a time, each batch in its own
transaction, so an interrupted run (Ctrl-C, SIGTERM, a killed process) keeps every batch it
finished, and the next run embeds only what is still missing. The mark is removed when
nothing is left; until then ``lore doctor`` and ``lore status`` report the re-embed as half
done.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lore.core.embedding import Embedding, Progress
from lore.embed import document_text
from lore.store import Store

if TYPE_CHECKING:
    from lore.core.conversations import Conversations

STARTED = "reembed_started"  # meta: {"from", "to", "at"} of a generation not yet complete
BATCH = 64  # texts a transaction: an interruption loses at most one batch of work


@dataclass(slots=True)
class ReembedReport:
    lessons: int = 0  # lessons embedded by this run
    chunks: int = 0  # conversation chunks embedded by this run
    restarted: bool = False  # the old vectors were dropped (a model change, or force)
    resumed: bool = False  # this run continued one that was interrupted
    left: dict[str, int] = field(default_factory=dict)  # still missing: {"lessons", "chunks"}

    @property
    def total(self) -> int:
        return self.lessons + self.chunks

    @property
    def complete(self) -> bool:
        return not any(self.left.values())


def model_changed(embedding: Embedding) -> bool:
    """The database holds vectors of a model other than the configured one."""
    stored, dims = embedding.stored_model()
    if stored is None:
        return False
    wanted = embedding.config.dimensions
    return stored != embedding.configured_model() or (
        wanted is not None and dims is not None and dims != wanted)


def started(store: Store) -> dict[str, Any] | None:
    """The re-embed under way ({"from", "to", "at"}), or None when none is half done."""
    raw = store.meta(STARTED)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    return data if isinstance(data, dict) else {"from": None, "to": None, "at": None}


def backlog(store: Store) -> dict[str, int]:
    """How many lessons and chunks have no up-to-date vector (reads the store only)."""
    return {"lessons": len(store.lessons_needing_vectors()),
            "chunks": store.conversations.vector_backlog()}


def reembed(store: Store, embedding: Embedding, conversations: Conversations, *,
            force: bool = False, progress: Progress | None = None,
            batch: int = BATCH) -> ReembedReport:
    """Embed every lesson and chunk whose vector is missing or stale; everything, from a clean
    slate, when the model changed or ``force`` is given. ``progress`` hears (done, total)
    after each stored batch."""
    report = ReembedReport(resumed=started(store) is not None)
    if force or model_changed(embedding):
        _restart(store, embedding)
        report.restarted, report.resumed = True, False
    lessons = store.lessons_needing_vectors()
    total = len(lessons) + conversations.backlog()
    for i in range(0, len(lessons), batch):
        part = lessons[i : i + batch]
        if i == 0:
            embedding.check_model()
        vectors = embedding.embed([document_text(t, c) for _, t, c, _ in part], batch=batch)
        embedding.store_vectors([(seq, h, v) for (seq, _, _, h), v
                                 in zip(part, vectors, strict=True)])
        report.lessons += len(part)
        if progress:
            progress(report.lessons, total)

    def chunk_progress(done: int, _: int) -> None:
        report.chunks = done
        if progress:
            progress(report.lessons + done, total)

    report.chunks = conversations.embed_pending(chunk_progress, batch=batch)
    report.left = backlog(store)
    if report.complete and store.meta(STARTED) is not None:
        store.delete_meta(STARTED)
    return report


def _restart(store: Store, embedding: Embedding) -> None:
    """Drop every vector and record the configured model, once it has answered a probe (a
    model that cannot load leaves the old vectors as they were)."""
    probe = embedding.query("dimension probe")
    old, _ = embedding.stored_model()
    with store.atomic():
        store.drop_vectors()
        store.conversations.drop_vectors()
        embedding.forget_model()
        embedding.record_model(int(probe.shape[0]))
        store.set_meta(STARTED, json.dumps({
            "from": old, "to": embedding.configured_model(),
            "at": datetime.now(UTC).isoformat(timespec="seconds")}))
