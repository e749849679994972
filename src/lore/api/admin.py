"""The ``admin`` part of :class:`lore.api.Lore`: the database's health and counts, the
embedding model and its vectors, copies to another location, the scheduled runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lore.redact import redact
from lore.store.rows import NewScheduleRun, ScheduleRun

if TYPE_CHECKING:
    from lore.api.engine import Engine
    from lore.core.embedding import Progress
    from lore.core.reembed import ReembedReport
    from lore.embed import Embedder


class AdminPart:
    """Looking after one home: health, statistics, the model, backlogs, copies."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def device(self) -> str:
        """This home's device id (:func:`lore.home.device_id`)."""
        return self.engine.device

    @property
    def read_only(self) -> bool:
        """The database was opened read-only: searches answer, nothing is written."""
        return self.engine.store.read_only

    def integrity(self) -> str:
        """The store's own consistency check: 'ok' or what is wrong."""
        return self.engine.store.integrity()

    def stats(self) -> dict[str, Any]:
        """Counts: lessons by kind, status, confidence, project and source; tags, links,
        vectors, the model; searches, the top queries and the most used lessons."""
        model, dims = self.engine.embedding.stored_model()
        s = self.engine.store
        counts = s.lesson_counts()
        return {
            "database": self.engine.settings.db_shown,
            "size_bytes": s.size_bytes(),
            "schema_version": s.schema_version(),
            "lessons": s.count(),
            "by_kind": counts["kind"],
            "by_status": counts["status"],
            "by_confidence": counts["confidence"],
            "by_project": {k or "(global)": v for k, v in counts["project"].items()},
            "by_source": {k or "(none)": v for k, v in counts["source"].items()},
            "tags": len(s.tag_counts()),
            "edges": s.edge_count(),
            "vectors": s.vector_count(),
            "embedding_model": model,
            "embedding_dimensions": dims,
            "configured_model": self.engine.embedding.configured_model(),
            "searches": s.search_count(),
            # redacted again as shown: a log written before queries were redacted
            "top_queries": [{"query": redact(q), "count": n} for q, n in s.top_queries(5)],
            "most_used": [{"id": i, "title": t, "usage_count": n} for i, t, n in s.most_used(5)],
        }

    def tuning(self) -> list[dict[str, Any]]:
        """Every tuning constant with the value in use and where it comes from."""
        from lore.api.engine import tuning_constants

        return tuning_constants(self.engine.settings)

    # ---- the model and its vectors ----------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedding model (loaded on first use)."""
        return self.engine.embedding.embedder

    def configured_model(self) -> str:
        return self.engine.embedding.configured_model()

    def stored_model(self) -> tuple[str | None, int | None]:
        return self.engine.embedding.stored_model()

    def check_model(self) -> None:
        """EmbeddingMismatch when the database was embedded with another model."""
        self.engine.embedding.check_model()

    def reembed(self, *, force: bool = False, progress: Progress | None = None) -> ReembedReport:
        """Embed every lesson and conversation chunk whose vector is missing or stale, a batch
        a transaction; after a model change (or with ``force``) all of them, the old vectors
        dropped first. An interrupted run is continued by the next (lore.core.reembed)."""
        from lore.core.reembed import reembed

        return reembed(self.engine.store, self.engine.embedding, self.engine.conversations,
                       force=force, progress=progress)

    def embedding_state(self) -> dict[str, Any]:
        """Whether the vectors match the configured model, without loading it: ``state`` is
        "ok", "missing" (some rows wait for a vector), "half done" (an interrupted re-embed)
        or "needed" (the database was embedded with another model)."""
        from lore.core import reembed
        from lore.core.embedding import stored_model

        store = self.engine.store
        stored, dims = stored_model(store)
        wanted, wanted_dims = self.wanted_model()
        left = reembed.backlog(store)
        under_way = reembed.started(store)
        if reembed.differs((stored, dims), wanted, wanted_dims):
            state = "needed"
        elif under_way is not None:
            state = "half done"
        elif left["lessons"]:
            state = "missing"
        else:
            state = "ok"
        return {"state": state, "model": stored, "dimensions": dims,
                "configured_model": wanted, "missing": left, "started": under_way}

    def wanted_model(self) -> tuple[str, int | None]:
        """The configured model and dimensions; read from the plain settings when the config
        was not built (``lore status`` then imports no pydantic)."""
        engine = self.engine
        if engine.embedding_built() or engine.settings.built:
            return engine.embedding.configured_model(), engine.embedding.config.dimensions
        from lore.core.embedding import configured_name
        from lore.embed import DEFAULT_MODEL

        section = engine.settings.section("embedding")  # None: nothing set, the defaults
        if section is None:
            return configured_name("fastembed", DEFAULT_MODEL), None
        return configured_name(section["backend"], section["model"]), section["dimensions"]

    # ---- backlogs -----------------------------------------------------------------------
    def vector_backlog(self) -> int:
        """How many conversation chunks wait for a vector (the store alone: no model, no numpy)."""
        return self.engine.store.conversations.vector_backlog()

    def waiting_for_judge(self) -> dict[str, Any]:
        """How many messages wait for the judge, in how many sessions, and its last failure;
        how many it left without a verdict too often (no session end asks about them again:
        `lore learn judge` does) and why (the store alone: the learning pipeline is not loaded)."""
        store = self.engine.store
        messages, sessions = store.corrections.judging_count()
        given_up, why = store.corrections.unjudged()
        return {"messages": messages, "sessions": sessions,
                "last_error": store.meta("judge.last_error") if messages else None,
                "given_up": given_up, "given_up_reason": why}

    # ---- the scheduled runs -------------------------------------------------------------
    def record_schedule_run(self, run: NewScheduleRun) -> int:
        """Keep one scheduled analysis run (lore.schedule)."""
        store = self.engine.store
        with store.atomic():
            return store.analysis.record_schedule_run(run)

    def schedule_runs(self, limit: int = 10) -> list[ScheduleRun]:
        """The latest scheduled analysis runs, newest first."""
        return self.engine.store.analysis.schedule_runs(limit)

    # ---- copies -------------------------------------------------------------------------
    def migrate_to(self, target: str, *, force: bool = False,
                   progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Copy this whole database to another location (a file or a server URL)."""
        from lore.store.copy import copy_database, open_target

        store = open_target(target)
        try:
            return copy_database(self.engine.store, store, force=force, progress=progress)
        finally:
            store.close()
