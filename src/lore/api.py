"""The core facade. Every interface (CLI, MCP, hooks, worker, web) is a thin layer over :class:`Lore`.

    from lore.api import Lore
    from lore.config import load_config

    with Lore.open(load_config()) as lore:
        lesson = lore.add_lesson("Use file sessions, not Redis", "The user ...", tags=["auth"])
        for hit in lore.recall("where do sessions live?"):
            print(hit.title, hit.score)

The facade owns one store (the :class:`~lore.store.protocol.Store` protocol, SQLite today)
and the parts in :mod:`lore.core`: ``embedding``, ``lessons``, ``conversations``,
``learner`` and ``transfer``. Nothing above it touches the store or SQL.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

from lore import normalize
from lore.config import Settings
from lore.core.embedding import Embedding, Progress
from lore.core.lessons import Lessons, content_hash, require_id
from lore.embed import Embedder
from lore.errors import InvalidInput, NotFound, StoreBusy
from lore.home import check_device
from lore.ids import CROCKFORD, ID_PREFIX, is_id, now
from lore.models import (
    RULE_KINDS,
    Edge,
    Filters,
    ImportReport,
    Lesson,
    RefItem,
    RelatedLesson,
    SearchResult,
)
from lore.private import home_notice
from lore.redact import redact, redact_value
from lore.store import Store, open_store, storage_error
from lore.store.rows import (
    ContextLoadData,
    LearnedCorrection,
    LessonActivity,
    LessonsAdded,
    NewScheduleRun,
    ScheduleRun,
    SessionSpan,
)

if TYPE_CHECKING:
    from pathlib import Path

    from lore.apply.files import Plan
    from lore.capture.transcripts import FileEdit
    from lore.config_models import Config
    from lore.core.analyzer import Analyzer
    from lore.core.conversations import Conversations
    from lore.core.guards import Guards
    from lore.core.learner import Learner
    from lore.core.reembed import ReembedReport
    from lore.core.sync import Sync
    from lore.core.tokens import Tokens
    from lore.recall import MemoryIndex, hybrid
    from lore.recall import graph as graph_ops

def tuning_constants(settings: Settings) -> list[dict[str, Any]]:
    """Every tuning constant (:mod:`lore.tuning`) with the value in use, its source (default,
    or "tuning": a measurement's override), where it lives and the benchmark that chose it.
    ConfigError (one line) when an override does not fit."""
    from lore.apply.session_context import CONTEXT
    from lore.apply.skills import SKILLS
    from lore.core.analyzer import ANALYSIS
    from lore.core.learner import LEARNING
    from lore.recall.conversations import CONVERSATIONS
    from lore.recall.hybrid import SEARCH
    from lore.tuning import described

    return [row for default in (SEARCH, CONVERSATIONS, LEARNING, CONTEXT, SKILLS, ANALYSIS)
            for row in described(default, settings.tuning)]


def approved(lesson: Lesson) -> bool:
    """Active, and a person's decision: a learned rule only once reviewed (or set active by
    hand) — a rule that scored its way to active is not written where the agent obeys —, any
    other lesson because a person (or an import of theirs) added it."""
    from lore.core.review import decided

    if lesson.status != "active":
        return False
    meta = lesson.metadata.get("learning")
    return not isinstance(meta, dict) or decided(meta)


def holds(lesson: Lesson) -> bool:
    """Active and allowed to steer the agent: approved by a person (:func:`approved`), or
    active by repetition within the bounds — every piece of its evidence typed by the user,
    and it asks the agent to run, fetch or send nothing (:mod:`lore.extract.steer`)."""
    from lore.core.review import needs_person

    return lesson.status == "active" and not needs_person(lesson)


class ToldLesson(TypedDict):
    """A lesson a SessionStart context showed or left out, by its title."""

    id: str
    title: str  # "(deleted)" for a lesson deleted since
    kind: str


class ContextLoadView(TypedDict):
    """A recorded SessionStart context (:class:`~lore.store.rows.ContextLoad`) with the
    titles of its lessons."""

    event_id: str
    session_id: str | None
    project: str | None
    at: str
    shown: list[ToldLesson]
    dropped: list[ToldLesson]
    chars: int
    dropped_chars: int


__all__ = ["Lore", "approved", "holds", "Progress", "content_hash", "require_id", "storage_error",
           "ContextLoadView", "ScheduleRun", "ToldLesson"]  # rows the facade returns

T = TypeVar("T")


class Lore:
    """One database, its config and (lazily) its embedding model."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.store = store
        self._embedder = embedder
        self._embedding: Embedding | None = None
        self._lessons: Lessons | None = None
        self._vectors: MemoryIndex | None = None
        self._conversations: Conversations | None = None
        self._learner: Learner | None = None
        self._analyzer: Analyzer | None = None
        self._tokens: Tokens | None = None
        self._sync: Sync | None = None
        self._device: str | None = None
        self._guards: Guards | None = None

    @classmethod
    def open(cls, settings: Settings, *, embedder: Embedder | None = None,
             create: bool = True) -> Lore:
        if os.environ.get("LORE_DEVICE"):  # refused before a database is made or opened
            check_device(os.environ["LORE_DEVICE"])
        if settings.tuning:  # every override checked before anything is opened or made
            tuning_constants(settings)
        # A home others can read is pointed out once, to a person: on a terminal only (not in
        # a pipe, a log or an MCP client), so the one time is not spent where nobody reads it.
        said = home_notice(settings.home) if _on_terminal(sys.stderr) else None
        if said:
            print(said, file=sys.stderr)
        store = open_store(settings.db_location, create=create)
        lore = cls(settings, store, embedder)
        store.set_identity(settings.user, lore.device)
        return lore

    def close(self) -> None:
        try:
            self.store.optimize()
        except Exception:  # noqa: BLE001 - an optimisation; a locked or read-only file skips it
            pass
        self.store.close()

    def __enter__(self) -> Lore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def device(self) -> str:
        """This home's device id (:func:`lore.home.device_id`): a home that synced before the id
        had its file keeps the one its SQLite database held; a shared database holds none."""
        if self._device is None:
            from lore.home import device_id, is_url

            store = self.store
            kept = None if is_url(str(self.settings.db_location)) else (
                lambda: store.meta("sync.device"))
            self._device = device_id(self.settings.home, kept)
        return self._device

    @property
    def config(self) -> Config:
        """The validated config (built on first access when nothing was configured: the
        commands that read no setting never build it)."""
        return self.settings.config

    def tuned(self, default: T) -> T:
        """A room's tuning constants (:mod:`lore.tuning`): ``default``, the code's, with the
        overrides in ``settings.tuning`` that name its fields (a measurement's). ConfigError,
        one line, when one does not fit."""
        from lore.tuning import tuned

        overrides = self.settings.tuning
        return tuned(default, overrides) if overrides else default

    @property
    def embedding(self) -> Embedding:
        """The embedding model and the stored vectors' bookkeeping (the model loads lazily)."""
        if self._embedding is None:
            self._embedding = Embedding(self.store, self.config.embedding, self._embedder)
        return self._embedding

    @property
    def lessons(self) -> Lessons:
        """Lessons: add, edit, find, merge."""
        if self._lessons is None:
            self._lessons = Lessons(self.store, self.embedding, self.config)
            self._lessons.on_change = self._lesson_changed
        return self._lessons

    @property
    def vectors(self) -> MemoryIndex:
        """The lesson vectors in memory: loaded on first use, refreshed incrementally (numpy
        is imported only by the commands that search)."""
        if self._vectors is None:
            from lore.recall import MemoryIndex

            self._vectors = MemoryIndex()
        return self._vectors

    @property
    def conversations(self) -> Conversations:
        """Conversation memory: imported transcripts and their search."""
        if self._conversations is None:
            from lore.core.conversations import Conversations
            from lore.recall.conversations import CONVERSATIONS

            self._conversations = Conversations(self.store, self.embedding, self.config,
                                                self.tuned(CONVERSATIONS), self._language_model())
        return self._conversations

    @property
    def learner(self) -> Learner:
        """Learning from corrections: captured messages to scored rules."""
        if self._learner is None:
            from lore.core.learner import LEARNING, Learner

            self._learner = Learner(self.store, self.lessons, self.embedding, self.config.learning,
                                    self._opinion(), self._judge(), self.config.llm.max_input_tokens,
                                    self.tuned(LEARNING))
        return self._learner

    def _opinion(self) -> Any:
        """The second opinion on unsure messages, when a language model is configured."""
        if not self.settings.llm_provider:
            return None
        from lore.llm import open_provider, second_opinion

        cfg, home = self.config.llm, self.settings.home
        provider: Any = None

        def ask(message: str, agent_turn: str | None) -> Any:
            nonlocal provider
            if provider is None:
                provider = open_provider(cfg, home)
            return second_opinion(provider, message, agent_turn)

        return ask

    def _judge(self) -> Any:
        """Opens the judge's provider (guarded: redacted, cut, budgeted, logged), when a
        language model is configured."""
        return self._language_model()

    def _language_model(self) -> Any:
        """Opens the configured provider (guarded: redacted, cut, budgeted, logged); None when
        no language model is configured."""
        if not self.settings.llm_provider:
            return None
        from lore.llm import open_provider

        cfg, home = self.config.llm, self.settings.home
        return lambda: open_provider(cfg, home)

    @property
    def analyzer(self) -> Analyzer:
        """Learning from the work itself: git changes and session transcripts to proposed lessons."""
        if self._analyzer is None:
            from lore.core.analyzer import ANALYSIS, Analyzer
            from lore.core.learner import LEARNING

            self._analyzer = Analyzer(self.store, self.lessons, self.embedding, self.settings,
                                      self.tuned(ANALYSIS), self.tuned(LEARNING))
        return self._analyzer

    @property
    def guards(self) -> Guards:
        """Checks on rules: what the PreToolUse and PostToolUse hooks hold (docs/apply.md)."""
        if self._guards is None:
            from lore.core.guards import Guards

            proposer = self._model_checks()
            self._guards = Guards(self.store, self.settings.home,
                                  model_proposers=[proposer] if proposer is not None else [])
        return self._guards

    def _model_checks(self) -> Any:
        """With a language model configured (and the judge on), it proposes checks for an
        approved rule beside the shapes; each waits for review. A provider error or a spent
        budget proposes nothing: the rule's approval never fails for it."""
        if not self.settings.llm_provider or not self.config.learning.judge:
            return None
        from lore.apply.guard_shapes import Proposal
        from lore.errors import LoreError
        from lore.llm import open_provider
        from lore.llm.checks import propose, rule_text

        cfg, home = self.config.llm, self.settings.home
        provider: Any = None

        def proposer(rule: Lesson) -> list[Proposal]:
            nonlocal provider
            pref = rule.preference
            text = rule_text(rule.title, content=rule.content, file_types=tuple(rule.file_types),
                             reasoning=pref.reasoning if pref else "",
                             preferred=pref.preferred if pref else "",
                             rejected=pref.rejected if pref else "")
            try:
                if provider is None:
                    provider = open_provider(cfg, home)
                found = propose(provider, text)
            except LoreError:
                return []
            return [Proposal(fields={k: v for k, v in c.items() if k != "why"}, origin="judge",
                             note=c["why"] or "proposed by the language model") for c in found]

        return proposer

    def _lesson_changed(self, lesson_id: str) -> None:
        # The hooks' file follows a checked rule's changes (approval, edits, archiving).
        self.guards.rule_changed(lesson_id)

    @property
    def tokens(self) -> Tokens:
        """Access tokens of the web server (`lore serve`)."""
        if self._tokens is None:
            from lore.core.tokens import Tokens

            self._tokens = Tokens(self.store)
        return self._tokens

    @property
    def sync(self) -> Sync:
        """Sync across devices through `lore serve`: this home's device id, cursors, pushes and
        pulls, and the server's side of both (docs/server.md)."""
        if self._sync is None:
            from lore.core.sync import Sync
            from lore.recall.conversations import CONVERSATIONS

            self._sync = Sync(self.store, self.lessons, self.embedding,
                              self.tuned(CONVERSATIONS).context_turns, self.device)
        return self._sync

    # ---- embeddings -------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        return self.embedding.embedder

    def configured_model(self) -> str:
        return self.embedding.configured_model()

    def stored_model(self) -> tuple[str | None, int | None]:
        return self.embedding.stored_model()

    def check_model(self) -> None:
        self.embedding.check_model()

    def warm(self) -> None:
        """Load the model and the vectors now (long-running processes: MCP server, worker)."""
        if self.embedding.in_use():
            self.embedding.check_model()
            self.embedding.query("warm up")
            self.vectors.sync(self.store)

    # ---- lessons ----------------------------------------------------------------------
    def add_lesson(self, title: str, content: str = "", **fields: Any) -> Lesson:
        """Validate, store, index and embed a new lesson; return it."""
        return self.lessons.add(title, content, **fields)

    def get_lesson(self, lesson_id: str) -> Lesson:
        """One lesson; another user's personal lesson is not found, as in every read."""
        return self.store.get(self.shown(lesson_id))

    def resolve_id(self, value: str) -> str:
        """The full id a person means: an id in any case, or a unique prefix of at least
        ``ID_PREFIX`` characters of a lesson's or a check's id. An ambiguous prefix is bad
        input (it says how many ids it starts), an unknown one NotFound."""
        text = value.strip()
        if is_id(text) or len(text) < ID_PREFIX or len(text) >= 26:
            return require_id(text).upper()
        prefix = text.upper()
        if any(c not in CROCKFORD for c in prefix):
            raise InvalidInput(f"'{text}' is not an id or the start of one (ids look like "
                               "01JD8X3Q5M0000000000000000; 6 characters are enough)")
        found = [*self.store.ids_with_prefix(prefix), *self.store.guards.check_ids_with_prefix(prefix)]
        if len(found) > 1:
            raise InvalidInput(f"'{text}' starts more than one id ({', '.join(found[:2])} …); "
                               "give more characters")
        if not found:
            raise NotFound(f"no lesson or check id starts with '{text}'; `lore review` and "
                           "`lore recall search` show ids")
        return found[0]

    def shown(self, lesson_id: str) -> str:
        """``lesson_id`` when its lesson may be shown to this user; else NotFound, the same
        error as for an id that names nothing (a hidden lesson is not confirmed to exist).
        A unique prefix of 6+ characters stands for the id (:meth:`resolve_id`)."""
        lesson_id = self.resolve_id(lesson_id)
        if not self.store.visible_ids([lesson_id]):
            raise NotFound(f"no lesson with id {lesson_id}; `lore recall search` finds ids")
        return lesson_id

    def update_lesson(self, lesson_id: str, **changes: Any) -> Lesson:
        """Change the given fields; lists replace the old list. Re-embeds only changed text.
        A status set here is a person's decision: rescoring never changes it afterwards."""
        lesson = self.lessons.update(self.shown(lesson_id), **changes)
        if changes.get("status") is not None and "learning" in lesson.metadata:
            self.learner.decided_by_hand(lesson.id)
            lesson = self.get_lesson(lesson.id)
        return lesson

    def delete_lesson(self, lesson_id: str) -> Lesson:
        return self.lessons.delete(self.shown(lesson_id))

    def list_lessons(self, filters: Filters | None = None, limit: int = 50,
                     offset: int = 0) -> tuple[int, list[dict[str, Any]]]:
        """Lessons matching the filters, newest first: (how many match, one page of briefs with
        id, title, kind, confidence, usage_count and updated_at)."""
        if limit < 1 or offset < 0:
            raise InvalidInput(f"limit must be at least 1 and offset at least 0 (got {limit}, {offset})")
        seqs = sorted(self.store.allowed_seqs(self.resolve_filters(filters or Filters())),
                      reverse=True)
        page = seqs[offset:offset + limit]
        briefs = self.store.brief(page)
        rows = [briefs[s] for s in page if s in briefs]
        return len(seqs), [{k: r[k] for k in ("id", "title", "kind", "confidence", "usage_count",
                                              "updated_at")} for r in rows]

    def lesson_count(self) -> int:
        return self.store.count()

    def edge_count(self) -> int:
        return self.store.edge_count()

    def titles(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """(title, kind) of each lesson id that exists."""
        return self.store.titles(ids)

    def tag_aliases(self) -> dict[str, str]:
        return self.lessons.tag_aliases()

    # ---- recall -----------------------------------------------------------------------
    def recall(
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
        started = time.perf_counter()
        filters = self.resolve_filters(filters or Filters())
        limit = limit or self.config.search.default_limit
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1 (got {limit})")
        embed = self.embedding.query_function() if mode != "keyword" else None
        from lore.recall import hybrid

        if embed is not None and mode == "hybrid" and query.strip():
            from lore.embed import prefetch

            embed = prefetch(embed, query)  # embedded while the keyword stage runs
        results = hybrid.search(self.store, query, filters, limit, self.config.search, embed,
                                self.vectors, mode, include_superseded, self.tuned(hybrid.SEARCH))
        if track:
            took = (time.perf_counter() - started) * 1000
            ids = [r.id for r in results]
            stamp = now()
            try:
                with self.store.atomic():
                    if self.config.search.track_usage:
                        self.store.record_usage(ids, stamp)
                    # The log is shown to any reader (stats): a pasted key must not reach it.
                    shown = cast("dict[str, Any]", redact_value(filters.to_dict()))
                    self.store.log_search(stamp, redact(query), shown, ids, took, interface)
            except StoreBusy:
                pass  # statistics are best-effort: a busy writer must not fail a search
        return results

    def resolve_filters(self, f: Filters) -> Filters:
        """Normalise and check filter values; unknown reference values list the valid ones."""
        if f.min_confidence:
            self.store.check_reference("confidence", f.min_confidence)
        for s in f.sources:
            self.store.check_reference("source", s)
        for k in f.kinds:
            self.store.check_reference("kind", k)
        for s in f.statuses:
            self.store.check_reference("status", s)
        return Filters(
            tags=normalize.tags(f.tags, self.tag_aliases()),
            contexts=normalize.unique(f.contexts, normalize.context),
            min_confidence=f.min_confidence,
            sources=tuple(f.sources),
            kinds=tuple(f.kinds),
            statuses=tuple(f.statuses),
            project=f.project,
            file_types=normalize.unique(f.file_types, normalize.file_type),
        )

    # ---- graph ------------------------------------------------------------------------
    def link(self, from_id: str, to_id: str, relation: str = "related_to") -> Edge:
        return self.lessons.link(require_id(from_id), require_id(to_id), relation)

    def unlink(self, from_id: str, to_id: str, relation: str | None = None) -> int:
        return self.lessons.unlink(require_id(from_id), require_id(to_id), relation)

    def related(self, lesson_id: str, depth: int = 1, relations: Sequence[str] = (),
                direction: str = "both") -> list[RelatedLesson]:
        from lore.recall import graph as graph_ops

        return graph_ops.related(self.store, self.shown(lesson_id), depth, relations, direction)

    def path(self, start: str, goal: str, max_depth: int = 6, relations: Sequence[str] = (),
             directed: bool = False) -> list[graph_ops.PathStep]:
        from lore.recall import graph as graph_ops

        return graph_ops.shortest_path(self.store, self.shown(start), self.shown(goal), max_depth,
                                       relations, directed)

    def subgraph(self, lesson_id: str, depth: int = 1, relations: Sequence[str] = (),
                 direction: str = "both") -> graph_ops.Subgraph:
        from lore.recall import graph as graph_ops

        return graph_ops.subgraph(self.store, self.shown(lesson_id), depth, relations, direction)

    # ---- reference data and tags ------------------------------------------------------
    def list_confidence_levels(self) -> list[RefItem]:
        return self.store.reference("confidence")

    def list_sources(self) -> list[RefItem]:
        return self.store.reference("source")

    def list_kinds(self) -> list[RefItem]:
        return self.store.reference("kind")

    def list_statuses(self) -> list[RefItem]:
        return self.store.reference("status")

    def list_relations(self) -> list[RefItem]:
        return self.store.reference("relation")

    def list_tags(self) -> list[tuple[str, int]]:
        return self.store.tag_counts()

    def unknown_tags(self, tags: Iterable[str]) -> list[str]:
        """Tags not in config ``known_tags`` (empty when known_tags is not configured)."""
        known = {normalize.tag(t) for t in self.config.known_tags}
        if not known:
            return []
        return [t for t in normalize.tags(tags, self.tag_aliases()) if t not in known]

    def merge_tags(self, old: str, new: str) -> int:
        old_n, new_n = normalize.tag(old), normalize.tag(new)
        if not old_n or not new_n:
            raise InvalidInput("both tags must be non-empty")
        if old_n == new_n:
            raise InvalidInput(f"'{old}' and '{new}' are the same tag")
        if not any(t == old_n for t, _ in self.store.tag_counts()):
            raise NotFound(f"no lesson is tagged '{old_n}'; `lore recall tags` lists the tags")
        return len(self.store.merge_tag(old_n, new_n))

    def set_visibility(self, lesson_id: str, visibility: str) -> None:
        """Who finds a lesson: personal (its author), project or team (docs/storage.md)."""
        self.store.set_visibility(require_id(lesson_id), visibility)

    def migrate_to(self, target: str, *, force: bool = False,
                   progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Copy this whole database to another location (a file or a server URL)."""
        from lore.store.copy import copy_database, open_target

        store = open_target(target)
        try:
            return copy_database(self.store, store, force=force, progress=progress)
        finally:
            store.close()

    # ---- statistics -------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        model, dims = self.stored_model()
        s = self.store
        counts = s.lesson_counts()
        return {
            "database": self.settings.db_shown,
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
            "configured_model": self.configured_model(),
            "searches": s.search_count(),
            # redacted again as shown: a log written before queries were redacted
            "top_queries": [{"query": redact(q), "count": n} for q, n in s.top_queries(5)],
            "most_used": [{"id": i, "title": t, "usage_count": n} for i, t, n in s.most_used(5)],
        }

    # ---- export / import --------------------------------------------------------------
    def export(self) -> Iterator[dict[str, Any]]:
        """One dict per lesson, with only its outgoing edges (so each edge appears once)."""
        for lesson in self.store.iter_lessons():
            data = lesson.to_dict()
            data["edges"] = [e for e in data["edges"] if e["from"] == lesson.id]
            yield data

    def import_lines(self, lines: Iterable[str], *, skip_invalid: bool = False,
                     progress: Progress | None = None) -> ImportReport:
        from lore.core.transfer import import_records

        report = import_records(self.lessons, self.embedding, lines, skip_invalid=skip_invalid,
                                progress=progress)
        if report.added + report.updated:
            self.store.analyze()  # fresh statistics: the planner picks selective indexes
        return report

    def reembed(self, *, force: bool = False, progress: Progress | None = None) -> ReembedReport:
        """Embed every lesson and conversation chunk whose vector is missing or stale, a batch
        a transaction; after a model change (or with ``force``) all of them, the old vectors
        dropped first. An interrupted run is continued by the next (lore.core.reembed)."""
        from lore.core.reembed import reembed

        return reembed(self.store, self.embedding, self.conversations, force=force,
                       progress=progress)

    def embedding_state(self) -> dict[str, Any]:
        """Whether the vectors match the configured model, without loading it: ``state`` is
        "ok", "missing" (some rows wait for a vector), "half done" (an interrupted re-embed)
        or "needed" (the database was embedded with another model)."""
        from lore.core import reembed
        from lore.core.embedding import stored_model

        stored, dims = stored_model(self.store)
        wanted, wanted_dims = self._wanted_model()
        left = reembed.backlog(self.store)
        under_way = reembed.started(self.store)
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

    def _wanted_model(self) -> tuple[str, int | None]:
        """The configured model and dimensions; read from the plain settings when the config
        was not built (``lore status`` then imports no pydantic)."""
        if self._embedding is not None or self._embedder is not None or self.settings.built:
            return self.embedding.configured_model(), self.embedding.config.dimensions
        from lore.core.embedding import configured_name
        from lore.embed import DEFAULT_MODEL

        section = self.settings.section("embedding")  # None: nothing set, the defaults
        if section is None:
            return configured_name("fastembed", DEFAULT_MODEL), None
        return configured_name(section["backend"], section["model"]), section["dimensions"]

    # ---- sessions (the hooks' events, through the worker) ------------------------------
    def session_files(self, session_id: str | None, limit: int = 20) -> list[str]:
        """Files the agent edited in a session, latest first."""
        return self.store.sessions.session_files(session_id, limit)

    def record_edits(self, session_id: str, project: str | None, transcript: str | None,
                     edits: Sequence[FileEdit]) -> int:
        """What the agent wrote, as a hook saw it, for silent-fix detection later."""
        return self.conversations.record_edits(session_id, project, transcript, edits)

    def record_snapshot(self, event_id: str, session_id: str | None, project: str | None,
                        at: str, data: dict[str, Any]) -> bool:
        """The state to resume from after compaction, with the files in progress; False when
        this event was recorded before."""
        with self.store.atomic():
            data = {**data, "files_in_progress": self.session_files(session_id)}
            return self.store.sessions.insert_snapshot(event_id, session_id, project, at, data)

    def record_context_load(self, event_id: str, session_id: str | None, project: str | None,
                            at: str, data: dict[str, Any]) -> bool:
        """What a SessionStart gave the session (ids shown and left out, sizes); False when
        this event was recorded before."""
        load: ContextLoadData = {
            "shown": list(data.get("shown") or []), "dropped": list(data.get("dropped") or []),
            "chars": int(data.get("chars") or 0), "dropped_chars": int(data.get("dropped_chars") or 0),
            "in_files": list(data.get("in_files") or [])}
        return self.store.sessions.insert_context_load(event_id, session_id, project, at, load)

    def context_loads(self, session_id: str | None = None, limit: int = 20
                      ) -> list[ContextLoadView]:
        """Recorded session starts, latest first, each with the titles of its lessons."""
        loads = self.store.sessions.context_loads(session_id, limit)
        titles = self.titles([i for load in loads for i in load["shown"] + load["dropped"]])

        def told(ids: list[str]) -> list[ToldLesson]:
            return [{"id": i, "title": titles.get(i, ("(deleted)", ""))[0],
                     "kind": titles.get(i, ("", ""))[1]} for i in ids]

        return [{**load, "shown": told(load["shown"]), "dropped": told(load["dropped"])}
                for load in loads]

    def lesson_activity(self, since: str) -> list[LessonActivity]:
        """Learned rules created or reviewed at or after ``since`` (ISO text), oldest first."""
        return self.store.analysis.lesson_activity(since)

    def lessons_added(self, since: str) -> list[LessonsAdded]:
        """Lessons created since ``since``: ``{"day", "project", "count"}`` rows."""
        return self.store.analysis.lessons_added(since)

    def record_schedule_run(self, run: NewScheduleRun) -> int:
        """Keep one scheduled analysis run (lore.schedule)."""
        with self.store.atomic():
            return self.store.analysis.record_schedule_run(run)

    def schedule_runs(self, limit: int = 10) -> list[ScheduleRun]:
        """The latest scheduled analysis runs, newest first."""
        return self.store.analysis.schedule_runs(limit)

    def session_context(self, project: str | None, max_chars: int | None = None,
                        max_items: int | None = None) -> str:
        """What SessionStart tells a new session in ``project`` (empty when nothing applies):
        rules the project's instruction files already state are not repeated."""
        from pathlib import Path as _Path

        from lore.apply.session_context import CONTEXT, build, carried_lines
        from lore.normalize import project_root

        ctx = self.config.context
        project = project_root(project)
        return build(self.store.sessions, project, max_chars or ctx.max_chars,
                     max_items or ctx.max_items, self.tuned(CONTEXT).inject_proposed_min_seen,
                     carried_lines(project, _Path.home()))

    def import_claude_memory(self, claude_home: Path, *, dry_run: bool = False) -> Any:
        """Claude Code's auto-memory entries as proposed lessons for review, each once; its
        files are only read."""
        from lore.core.claude_memory import import_memory

        return import_memory(self.store, self.lessons, claude_home, dry_run=dry_run)

    def vector_backlog(self) -> int:
        """How many conversation chunks wait for a vector (the store alone: no model, no numpy)."""
        return self.store.conversations.vector_backlog()

    def waiting_for_judge(self) -> dict[str, Any]:
        """How many messages wait for the judge, in how many sessions, and its last failure;
        how many it left without a verdict too often (no session end asks about them again:
        `lore learn judge` does) and why (the store alone: the learning pipeline is not loaded)."""
        messages, sessions = self.store.corrections.judging_count()
        given_up, why = self.store.corrections.unjudged()
        return {"messages": messages, "sessions": sessions,
                "last_error": self.store.meta("judge.last_error") if messages else None,
                "given_up": given_up, "given_up_reason": why}

    def preferences(self, project: str | None = None, *, all_projects: bool = False,
                    file_type: str | None = None,
                    statuses: Sequence[str] = ("active", "proposed"),
                    limit: int = 100) -> list[Lesson]:
        """Preferences and rules for ``project`` and global ones (or every project), most
        confident first; read from the store alone, without loading the learning pipeline."""
        for s in statuses:
            self.store.check_reference("status", s)
        ft = normalize.file_type(file_type) if file_type else None
        ids = self.store.corrections.preferences(normalize.project_root(project),
                                                 all_projects=all_projects, file_type=ft,
                                                 statuses=tuple(statuses), limit=limit)
        return [self.store.get(i) for i in ids]  # no config, no model: a read

    # ---- apply: approved rules into the files agents read ------------------------------
    def approved_rules(self, project: str | None) -> list[Lesson]:
        """The rules that hold in ``project`` (its own and global ones), most confident first:
        approved by a person, or active by repetition within the bounds of :func:`holds`.
        Every caller goes through here (or ``approved_lessons``)."""
        from lore.normalize import project_root

        ids = self.store.corrections.preferences(project_root(project), all_projects=False,
                                                 file_type=None, statuses=("active",),
                                                 limit=1_000_000)
        rules = [x for x in (self.store.get(i) for i in ids) if holds(x)]
        # A rule an active lesson supersedes is not written, as the session context leaves it out.
        seqs = {self.store.seq_of(x.id): x for x in rules}
        replaced = self.store.successors(list(seqs))
        return [x for seq, x in seqs.items() if seq not in replaced]

    def apply_left_out(self, project: str | None, *,
                       include_global: bool | None = None) -> list[dict[str, Any]]:
        """The approved rules ``lore apply`` in ``project`` does not write, each with why:
        another project's rule (``lore learn scope`` moves it), or a global rule while the
        global file is off, or a rule a newer active one supersedes. Rules a target file
        already states are the plan's skips."""
        from lore.normalize import project_root

        include_global = self.config.apply.global_file if include_global is None \
            else include_global
        here = {x.id for x in self.approved_rules(project)}
        out = []
        for lesson in self.approved_lessons():
            if lesson.kind not in RULE_KINDS:
                continue
            if lesson.id in here and (lesson.project is not None or include_global):
                continue
            if lesson.project == project_root(project) or (lesson.project is None
                                                           and include_global):
                reason = ("superseded by a newer active rule (`lore recall related "
                          f"{lesson.id} --relation supersedes` shows it)")
            elif lesson.project is None:
                reason = ("a global rule, and the global file is off (--global or "
                          "apply.global_file writes ~/.claude/CLAUDE.md)")
            else:
                reason = (f"a rule of another project ({lesson.project}); `lore learn scope "
                          f"{lesson.id} --project {project_root(project) or '.'}` or --global "
                          "moves it")
            out.append({"id": lesson.id, "title": lesson.title, "project": lesson.project,
                        "reason": reason})
        return out

    def why(self, lesson_id: str) -> dict[str, Any]:
        """Where a rule came from and what it did: the user's words (evidence), the decision
        on it, the session starts that told it, its checks and what they blocked."""
        import json as _json

        lesson = self.get_lesson(lesson_id)
        meta = (lesson.metadata.get("learning") or lesson.metadata.get("analysis") or {})
        review = meta.get("review") or {}
        told = []
        for load in self.guards.loads():
            try:  # told by the context, or held by a file the session read at start
                shown = [*_json.loads(load["shown"] or "[]"),
                         *_json.loads(load.get("in_files") or "[]")]
            except (TypeError, ValueError):
                continue
            if lesson.id in shown:
                told.append(load["at"])
        events = self.guards.matches(lesson.id)
        outcomes: dict[str, int] = {}
        for e in events:
            outcomes[e["outcome"]] = outcomes.get(e["outcome"], 0) + 1
        return {"id": lesson.id, "title": lesson.title, "status": lesson.status,
                "scope": lesson.project or "global", "created_at": lesson.created_at,
                "evidence": [{"said": e.quote, "session": e.session_id, "date": e.observed_at,
                              "source": e.source} for e in lesson.evidence],
                "decision": {"action": review.get("action"), "at": review.get("at"),
                             "reason": review.get("reason"), "via": review.get("via")}
                if review else None,
                "approved_at": self.approved_at(lesson) if approved(lesson) else None,
                "told": {"sessions": len(told), "last": max(told) if told else None},
                "checks": [{"id": c["id"], "status": c["status"], "mode": c["mode"],
                            "words": c["words"]} for c in self.guards.checks(lesson.id)],
                "matches": outcomes,
                "last_blocked": max((e["at"] for e in events if e["outcome"] == "blocked"),
                                    default=None)}

    @staticmethod
    def approved_at(lesson: Lesson) -> str:
        """When a person approved the rule: ``metadata.approved_at`` when set, else the time
        of the review that approved it, else the lesson's creation."""
        at = lesson.metadata.get("approved_at")
        if isinstance(at, str) and at:
            return at
        review = (lesson.metadata.get("learning") or {}).get("review") or {}
        if review.get("action") in ("approve", "edit", "status") and review.get("at"):
            return str(review["at"])
        return lesson.created_at or ""

    def learned_corrections(self) -> list[LearnedCorrection]:
        """Messages the learner merged into a rule (action created, reinforced …), oldest first."""
        return self.store.corrections.learned_corrections()

    def session_spans(self) -> list[SessionSpan]:
        """Every session seen: id, project, first moment, file types edited; oldest first."""
        return self.store.corrections.session_spans()

    def sessions_mentioning(self, term: str) -> set[str]:
        return self.store.corrections.sessions_mentioning(term)

    # ---- review ----------------------------------------------------------------------
    def waiting(self, project: str | None = None, *, all_projects: bool = True,
                limit: int = 100) -> list[dict[str, Any]]:
        """Learned rules waiting for a person's review, with their evidence; read from the
        store alone, without loading the learning pipeline (``lore review`` lists fast)."""
        from lore.core.review import waiting
        from lore.normalize import project_root

        return waiting(self.store, project_root(project), all_projects=all_projects,
                       limit=limit)

    def review_export(self, folder: Path | None = None) -> dict[str, Any]:
        """Write the markdown review folder (``review.folder`` unless given): a file per
        waiting rule, the approved rules, the decided ones, an index (docs/learning.md)."""
        from lore.core.review_sync import ReviewSync

        return ReviewSync(self.learner, self.guards).export(folder or self.settings.review_folder,
                                               self.approved_lessons())

    def review_import(self, folder: Path | None = None, *, create: bool = False) -> dict[str, Any]:
        """Apply the decisions ticked or written in the review folder's files."""
        from lore.core.review_sync import ReviewSync

        return ReviewSync(self.learner, self.guards).import_(folder or self.settings.review_folder,
                                                create=create)

    def review_sync(self, folder: Path | None = None) -> dict[str, Any]:
        """Import the folder's decisions (none the first time), then export it afresh."""
        imported = self.review_import(folder, create=True)
        return {"imported": imported, "exported": self.review_export(folder)}

    def approved_lessons(self) -> list[Lesson]:
        """Every lesson a person approved (any kind) that this user may see, as
        ``approved_rules``."""
        found = [x for x in self.store.iter_lessons() if approved(x)]
        visible = self.store.visible_ids(x.id for x in found)
        return [x for x in found if x.id in visible]

    def skill_proposals(self) -> list[Any]:
        """Groups of approved lessons worth a skill (``apply.skill_proposals.Proposal``), largest first."""
        from lore.apply.skill_proposals import propose
        from lore.apply.skills import SKILLS

        return propose(self.store, self.approved_lessons(), self.tuned(SKILLS))

    def skill_plan(self, choice: str, home: Path, *, to_global: bool = False) -> tuple[Any, Plan]:
        """The proposal numbered or named ``choice``: (skill, plan of its files). Reads only."""
        from lore.apply.skill_proposals import choose, plan_write

        return plan_write(choose(self.skill_proposals(), choice), home, to_global=to_global)

    def apply_plan(self, project: str | None, home: Path, *, local: bool | None = None,
                   agents_md: bool | None = None, include_global: bool | None = None) -> Plan:
        """What ``lore apply`` would change: approved rules as Lore's block in CLAUDE.md (or
        CLAUDE.local.md), ``.claude/rules`` files, AGENTS.md and ``~/.claude/CLAUDE.md``.
        Reads only; ``plan.write()`` writes. Options left None come from ``apply`` config.
        Without the global file, global rules and ``~/.claude/CLAUDE.md`` are left alone."""
        from pathlib import Path as _Path

        from lore.apply.approved import applied_rule
        from lore.apply.files import Plan as _Plan
        from lore.apply.targets import Targets, plan

        cfg = self.config.apply
        local = cfg.project_file == "CLAUDE.local.md" if local is None else local
        agents_md = cfg.agents_md if agents_md is None else agents_md
        include_global = cfg.global_file if include_global is None else include_global
        rules = [applied_rule(lesson) for lesson in self.approved_rules(project)]
        if not include_global:
            rules = [r for r in rules if r.scope != "global"]
        targets = Targets(home=home, project=_Path(project) if project else None, local=local,
                          agents_md=agents_md)
        result = plan(rules, targets)
        if include_global:
            return result
        home_md = home / ".claude" / "CLAUDE.md"

        def without_home(made: _Plan) -> _Plan:
            return _Plan(tuple(c for c in made.changes if c.path != home_md))

        again = result.replan
        return _Plan(without_home(result).changes,
                     replan=None if again is None else lambda: without_home(again()))

    # ---- health -----------------------------------------------------------------------
    @property
    def read_only(self) -> bool:
        """The database was opened read-only: searches answer, nothing is written."""
        return self.store.read_only

    def integrity(self) -> str:
        """The store's own consistency check: 'ok' or what is wrong."""
        return self.store.integrity()

    def lessons_without_vectors(self) -> int:
        return len(self.store.lessons_needing_vectors())


def _on_terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):  # a replaced or closed stream
        return False
