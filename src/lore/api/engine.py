"""What the facade's parts share: one store, its settings, and the core's objects built on first
use (the embedding model, the lesson writer, the learner, the checks, the analysis, sync, the
web server's tokens). The faces never reach it: they call the parts of :class:`lore.api.Lore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from lore.config import Settings
from lore.core.embedding import Embedding
from lore.core.lessons import Lessons, require_id
from lore.embed import Embedder
from lore.errors import InvalidInput, NotFound
from lore.ids import CROCKFORD, ID_PREFIX, is_id
from lore.store import Store

if TYPE_CHECKING:
    from lore.core.analyzer import Analyzer
    from lore.core.checks import Checks
    from lore.core.conversations import Conversations
    from lore.core.learner import Learner
    from lore.core.sync import Sync
    from lore.core.tokens import Tokens
    from lore.models import Lesson
    from lore.recall import MemoryIndex

T = TypeVar("T")


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


class Engine:
    """One database, its config and (lazily) its embedding model and the core's objects."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.store = store
        self.given_embedder = embedder
        self._embedding: Embedding | None = None
        self._lessons: Lessons | None = None
        self._vectors: MemoryIndex | None = None
        self._conversations: Conversations | None = None
        self._learner: Learner | None = None
        self._analyzer: Analyzer | None = None
        self._tokens: Tokens | None = None
        self._sync: Sync | None = None
        self._device: str | None = None
        self._checks: Checks | None = None

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

    def tuned(self, default: T) -> T:
        """A room's tuning constants (:mod:`lore.tuning`): ``default``, the code's, with the
        overrides in ``settings.tuning`` that name its fields (a measurement's). ConfigError,
        one line, when one does not fit."""
        from lore.tuning import tuned

        overrides = self.settings.tuning
        return tuned(default, overrides) if overrides else default

    def embedding_built(self) -> bool:
        """Whether the model's part exists or was given (then reading the config is free)."""
        return self._embedding is not None or self.given_embedder is not None

    @property
    def embedding(self) -> Embedding:
        """The embedding model and the stored vectors' bookkeeping (the model loads lazily)."""
        if self._embedding is None:
            self._embedding = Embedding(self.store, self.settings.config.embedding, self.given_embedder)
        return self._embedding

    @property
    def lessons(self) -> Lessons:
        """The lesson writer: validated fields to stored, indexed and embedded rows."""
        if self._lessons is None:
            self._lessons = Lessons(self.store, self.embedding, self.settings.config)
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

            self._conversations = Conversations(self.store, self.embedding, self.settings.config,
                                                self.tuned(CONVERSATIONS), self.language_model())
        return self._conversations

    @property
    def learner(self) -> Learner:
        """Learning from corrections: captured messages to scored rules."""
        if self._learner is None:
            from lore.core.learner import LEARNING, Learner

            self._learner = Learner(self.store, self.lessons, self.embedding, self.settings.config.learning,
                                    self._opinion(), self.language_model(),
                                    self.settings.config.llm.max_input_tokens, self.tuned(LEARNING))
        return self._learner

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
    def checks(self) -> Checks:
        """Checks on rules: what the PreToolUse and PostToolUse hooks hold (docs/apply.md)."""
        if self._checks is None:
            from lore.core.checks import Checks

            proposer = self._model_checks()
            self._checks = Checks(self.store, self.settings.home,
                                  model_proposers=[proposer] if proposer is not None else [])
        return self._checks

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

    def language_model(self) -> Any:
        """Opens the configured provider (within its limits: redacted, cut, budgeted, logged); None when
        no language model is configured."""
        if not self.settings.llm_provider:
            return None
        from lore.llm import open_provider

        cfg, home = self.settings.config.llm, self.settings.home
        return lambda: open_provider(cfg, home)

    def _opinion(self) -> Any:
        """The second opinion on unsure messages, when a language model is configured."""
        if not self.settings.llm_provider:
            return None
        from lore.llm import open_provider, second_opinion

        cfg, home = self.settings.config.llm, self.settings.home
        provider: Any = None

        def ask(message: str, agent_turn: str | None) -> Any:
            nonlocal provider
            if provider is None:
                provider = open_provider(cfg, home)
            return second_opinion(provider, message, agent_turn)

        return ask

    def _model_checks(self) -> Any:
        """With a language model configured (and the judge on), it proposes checks for an
        approved rule beside the shapes; each waits for review. A provider error or a spent
        budget proposes nothing: the rule's approval never fails for it."""
        if not self.settings.llm_provider or not self.settings.config.learning.judge:
            return None
        from lore.apply.check_shapes import Proposal
        from lore.errors import LoreError
        from lore.llm import open_provider
        from lore.llm.checks import propose, rule_text

        cfg, home = self.settings.config.llm, self.settings.home
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
        self.checks.rule_changed(lesson_id)

    # ---- ids a person gives -----------------------------------------------------------
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
        found = [*self.store.ids_with_prefix(prefix),
                 *self.store.guards.check_ids_with_prefix(prefix)]
        if len(found) > 1:
            raise InvalidInput(f"'{text}' starts more than one id ({', '.join(found[:2])} …); "
                               "give more characters")
        if not found:
            raise NotFound(f"no lesson or check id starts with '{text}'; `lore review` and "
                           "`lore search` show ids")
        return found[0]

    def shown(self, lesson_id: str) -> str:
        """``lesson_id`` when its lesson may be shown to this user; else NotFound, the same
        error as for an id that names nothing (a hidden lesson is not confirmed to exist).
        A unique prefix of 6+ characters stands for the id (:meth:`resolve_id`)."""
        lesson_id = self.resolve_id(lesson_id)
        if not self.store.visible_ids([lesson_id]):
            raise NotFound(f"no lesson with id {lesson_id}; `lore search` finds ids")
        return lesson_id

    def get(self, lesson_id: str) -> Lesson:
        """One lesson; another user's personal lesson is not found, as in every read."""
        return self.store.get(self.shown(lesson_id))
