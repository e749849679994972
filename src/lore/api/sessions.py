"""The ``sessions`` part of :class:`lore.api.Lore`: what happened in the agent's sessions, as
the hooks recorded it (edits, snapshots, what SessionStart told), and the learning it led to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from lore.store.rows import (
    ContextLoadData,
    LearnedCorrection,
    LessonActivity,
    LessonsAdded,
    SessionSpan,
)

if TYPE_CHECKING:
    from lore.api.engine import Engine


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


class SessionsPart:
    """The sessions seen: their edits, snapshots and starts; the corrections learned in them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def files(self, session_id: str | None, limit: int = 20) -> list[str]:
        """Files the agent edited in a session, latest first."""
        return self.engine.store.sessions.session_files(session_id, limit)

    def record_snapshot(self, event_id: str, session_id: str | None, project: str | None,
                        at: str, data: dict[str, Any]) -> bool:
        """The state to resume from after compaction, with the files in progress; False when
        this event was recorded before."""
        store = self.engine.store
        with store.atomic():
            data = {**data, "files_in_progress": self.files(session_id)}
            return store.sessions.insert_snapshot(event_id, session_id, project, at, data)

    def record_context_load(self, event_id: str, session_id: str | None, project: str | None,
                            at: str, data: dict[str, Any]) -> bool:
        """What a SessionStart gave the session (ids shown and left out, sizes); False when
        this event was recorded before."""
        load: ContextLoadData = {
            "shown": list(data.get("shown") or []), "dropped": list(data.get("dropped") or []),
            "chars": int(data.get("chars") or 0), "dropped_chars": int(data.get("dropped_chars") or 0),
            "in_files": list(data.get("in_files") or [])}
        return self.engine.store.sessions.insert_context_load(event_id, session_id, project, at,
                                                              load)

    def context_loads(self, session_id: str | None = None, limit: int = 20
                      ) -> list[ContextLoadView]:
        """Recorded session starts, latest first, each with the titles of its lessons."""
        store = self.engine.store
        loads = store.sessions.context_loads(session_id, limit)
        titles = store.titles([i for load in loads for i in load["shown"] + load["dropped"]])

        def told(ids: list[str]) -> list[ToldLesson]:
            return [{"id": i, "title": titles.get(i, ("(deleted)", ""))[0],
                     "kind": titles.get(i, ("", ""))[1]} for i in ids]

        return [{**load, "shown": told(load["shown"]), "dropped": told(load["dropped"])}
                for load in loads]

    def spans(self) -> list[SessionSpan]:
        """Every session seen: id, project, first moment, file types edited; oldest first."""
        return self.engine.store.corrections.session_spans()

    def mentioning(self, term: str) -> set[str]:
        """The sessions whose captured messages mention ``term``."""
        return self.engine.store.corrections.sessions_mentioning(term)

    def learned_corrections(self) -> list[LearnedCorrection]:
        """Messages the learner merged into a rule (action created, reinforced …), oldest first."""
        return self.engine.store.corrections.learned_corrections()

    def lesson_activity(self, since: str) -> list[LessonActivity]:
        """Learned rules created or reviewed at or after ``since`` (ISO text), oldest first."""
        return self.engine.store.analysis.lesson_activity(since)

    def lessons_added(self, since: str) -> list[LessonsAdded]:
        """Lessons created since ``since``: ``{"day", "project", "count"}`` rows."""
        return self.engine.store.analysis.lessons_added(since)
