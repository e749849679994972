"""The ``search`` part of :class:`lore.api.Lore`: hybrid lesson search, the rules that hold in
a project, and the graph of links between lessons."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from lore import normalize
from lore.errors import InvalidInput, StoreBusy
from lore.ids import now
from lore.models import Filters, Lesson, RelatedLesson, SearchResult
from lore.redact import redact, redact_value

if TYPE_CHECKING:
    from lore.api.engine import Engine
    from lore.recall import graph as graph_ops
    from lore.recall import hybrid


def resolve_filters(engine: Engine, f: Filters) -> Filters:
    """Normalise and check filter values; unknown reference values list the valid ones."""
    store = engine.store
    if f.min_confidence:
        store.check_reference("confidence", f.min_confidence)
    for s in f.sources:
        store.check_reference("source", s)
    for k in f.kinds:
        store.check_reference("kind", k)
    for s in f.statuses:
        store.check_reference("status", s)
    return Filters(
        tags=normalize.tags(f.tags, engine.lessons.tag_aliases()),
        contexts=normalize.unique(f.contexts, normalize.context),
        min_confidence=f.min_confidence,
        sources=tuple(f.sources),
        kinds=tuple(f.kinds),
        statuses=tuple(f.statuses),
        project=f.project,
        file_types=normalize.unique(f.file_types, normalize.file_type),
    )


class SearchPart:
    """Find lessons: by meaning and keywords, by project, by their links."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def query(
        self,
        query: str,
        filters: Filters | None = None,
        limit: int | None = None,
        *,
        mode: hybrid.Mode = "hybrid",
        track: bool = True,
        interface: str = "api",
        include_superseded: bool = True,
    ) -> list[SearchResult]:
        """Hybrid search. Usage stats are bumped for the results returned; the query is logged.
        A lesson an active lesson supersedes ranks below its successor, or is left out with
        ``include_superseded=False``."""
        engine, store = self.engine, self.engine.store
        started = time.perf_counter()
        filters = resolve_filters(engine, filters or Filters())
        config = engine.settings.config.search
        limit = limit or config.default_limit
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1 (got {limit})")
        embed = engine.embedding.query_function() if mode != "keyword" else None
        from lore.recall import hybrid

        if embed is not None and mode == "hybrid" and query.strip():
            from lore.embed import prefetch

            embed = prefetch(embed, query)  # embedded while the keyword stage runs
        results = hybrid.search(store, query, filters, limit, config, embed, engine.vectors,
                                mode, include_superseded, engine.tuned(hybrid.SEARCH))
        if track:
            took = (time.perf_counter() - started) * 1000
            ids = [r.id for r in results]
            stamp = now()
            try:
                with store.atomic():
                    if config.track_usage:
                        store.record_usage(ids, stamp)
                    # The log is shown to any reader (stats): a pasted key must not reach it.
                    shown = cast("dict[str, Any]", redact_value(filters.to_dict()))
                    store.log_search(stamp, redact(query), shown, ids, took, interface)
            except StoreBusy:
                pass  # statistics are best-effort: a busy writer must not fail a search
        return results

    def resolve_filters(self, f: Filters) -> Filters:
        """Normalise and check filter values; unknown reference values list the valid ones."""
        return resolve_filters(self.engine, f)

    def warm(self) -> None:
        """Load the model and the vectors now (long-running processes: MCP server, worker)."""
        embedding = self.engine.embedding
        if embedding.in_use():
            embedding.check_model()
            embedding.query("warm up")
            self.engine.vectors.sync(self.engine.store)

    def preferences(self, project: str | None = None, *, all_projects: bool = False,
                    file_type: str | None = None,
                    statuses: Sequence[str] = ("active", "proposed"),
                    limit: int = 100) -> list[Lesson]:
        """Preferences and rules for ``project`` and global ones (or every project), most
        confident first; read from the store alone, without loading the learning pipeline."""
        store = self.engine.store
        for s in statuses:
            store.check_reference("status", s)
        ft = normalize.file_type(file_type) if file_type else None
        ids = store.corrections.preferences(normalize.project_root(project),
                                            all_projects=all_projects, file_type=ft,
                                            statuses=tuple(statuses), limit=limit)
        return [store.get(i) for i in ids]  # no config, no model: a read

    # ---- the graph ----------------------------------------------------------------------
    def related(self, lesson_id: str, depth: int = 1, relations: Sequence[str] = (),
                direction: str = "both") -> list[RelatedLesson]:
        from lore.recall import graph as graph_ops

        return graph_ops.related(self.engine.store, self.engine.shown(lesson_id), depth,
                                 relations, direction)

    def path(self, start: str, goal: str, max_depth: int = 6, relations: Sequence[str] = (),
             directed: bool = False) -> list[graph_ops.PathStep]:
        from lore.recall import graph as graph_ops

        return graph_ops.shortest_path(self.engine.store, self.engine.shown(start),
                                       self.engine.shown(goal), max_depth, relations, directed)

    def subgraph(self, lesson_id: str, depth: int = 1, relations: Sequence[str] = (),
                 direction: str = "both") -> graph_ops.Subgraph:
        from lore.recall import graph as graph_ops

        return graph_ops.subgraph(self.engine.store, self.engine.shown(lesson_id), depth,
                                  relations, direction)
