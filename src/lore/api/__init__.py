"""The core facade. Every interface (CLI, MCP, hooks, worker, web) is a thin layer over :class:`Lore`.

    from lore.api import Lore
    from lore.config import load_config

    with Lore.open(load_config()) as lore:
        lesson = lore.lessons.add("Use file sessions, not Redis", "The user ...", tags=["auth"])
        for hit in lore.search.query("where do sessions live?"):
            print(hit.title, hit.score)

``Lore`` opens one store and holds the parts, each a small object with one job (docs/python-api.md):
``lessons``, ``search``, ``learning``, ``analysis``, ``conversations``, ``sessions``, ``review``,
``checks``, ``apply``, ``sync``, ``tokens`` and ``admin``. The faces call the parts and nothing
else of it (tests/faces/test_architecture.py); nothing above the facade touches the store or SQL.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from lore.api.admin import AdminPart
from lore.api.apply import ApplyPart
from lore.api.engine import Engine, tuning_constants
from lore.api.lessons import LessonsPart
from lore.api.search import SearchPart
from lore.api.sessions import ContextLoadView, SessionsPart, ToldLesson
from lore.config import Settings
from lore.core.embedding import Progress
from lore.core.lessons import content_hash, require_id
from lore.embed import Embedder
from lore.home import check_device
from lore.private import home_notice
from lore.review.part import Review
from lore.store import Store, open_store, storage_error
from lore.store.rows import ScheduleRun

if TYPE_CHECKING:
    from lore.config_models import Config
    from lore.core.analyzer import Analyzer
    from lore.core.checks import Checks
    from lore.core.conversations import Conversations
    from lore.core.learner import Learner
    from lore.core.sync import Sync
    from lore.core.tokens import Tokens

__all__ = ["Lore", "Progress", "content_hash", "require_id", "storage_error",
           "tuning_constants", "ContextLoadView", "ScheduleRun", "ToldLesson"]

# What a face may use of a Lore (tests/faces/test_architecture.py): these parts, and
# construction (open, close, config, settings).
PARTS = ("lessons", "search", "learning", "analysis", "conversations", "sessions", "review",
         "checks", "apply", "sync", "tokens", "admin")


class Lore:
    """One database and its parts."""

    def __init__(self, settings: Settings, store: Store, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.store = store
        self.engine = Engine(settings, store, embedder)
        self.lessons = LessonsPart(self.engine)
        self.search = SearchPart(self.engine)
        self.sessions = SessionsPart(self.engine)
        self.review = Review(self.engine)
        self.apply = ApplyPart(self.engine)
        self.admin = AdminPart(self.engine)

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
        store.set_identity(settings.user, lore.engine.device)
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
    def config(self) -> Config:
        """The validated config (built on first access when nothing was configured: the
        commands that read no setting never build it)."""
        return self.settings.config

    # ---- the core's parts, built on first use ---------------------------------------------
    @property
    def learning(self) -> Learner:
        """Learning from corrections: captured messages to scored rules (record, capture,
        process_pending, judge_waiting, silent_fixes, backfill, rescore, suggest_rule)."""
        return self.engine.learner

    @property
    def analysis(self) -> Analyzer:
        """Learning from the work itself: git changes and session transcripts to proposed lessons."""
        return self.engine.analyzer

    @property
    def conversations(self) -> Conversations:
        """Conversation memory: imported transcripts, their search, the agent's edits."""
        return self.engine.conversations

    @property
    def checks(self) -> Checks:
        """Checks on rules: what the PreToolUse and PostToolUse hooks hold (docs/apply.md)."""
        return self.engine.checks

    @property
    def sync(self) -> Sync:
        """Push and pull between devices through `lore serve`, and the server's side of both."""
        return self.engine.sync

    @property
    def tokens(self) -> Tokens:
        """Access tokens of the web server (`lore serve`)."""
        return self.engine.tokens


def _on_terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):  # a replaced or closed stream
        return False
