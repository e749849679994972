"""What the worker does with each queued event (:class:`Events`): import the transcript,
record a correction and learn from it, record edits, snapshots, the context a session was
given and check matches, judge a session's messages and analyse its work. The loop, the lock
and the retries are :class:`lore.worker.Worker`'s."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lore.llm.own import CALL_FOLDER

if TYPE_CHECKING:
    from lore.api import Lore
    from lore.capture.queue import Event
    from lore.config import Settings

TRANSCRIPT_EVENTS = ("SessionEnd", "Stop", "SubagentStop", "PreCompact")
# Payload fields the worker reads as text; one of another type (a hand-edited or foreign
# event) is dropped rather than bound into SQL.
TEXT_FIELDS = ("session_id", "cwd", "transcript_path", "tool_name", "trigger", "prompt")


class Owner(Protocol):
    """What the handlers need of their worker."""

    settings: Settings

    @property
    def lore(self) -> Lore: ...


class Events:
    """The handlers of one worker: they use its facade (opened on first use) and settings."""

    def __init__(self, worker: Owner) -> None:
        self.worker = worker

    @property
    def lore(self) -> Lore:
        return self.worker.lore

    @property
    def settings(self) -> Settings:
        return self.worker.settings

    def outcome(self, event: Event) -> str:
        """What handling ``event`` did, in a few words; raises on failure."""
        event.payload = typed_payload(event.payload)
        cwd = event.payload.get("cwd")
        if isinstance(cwd, str) and Path(cwd).name == CALL_FOLDER:
            return "Lore's own model call: nothing learned from it"
        outcome = "kept"
        path = event.payload.get("transcript_path")
        if event.kind in TRANSCRIPT_EVENTS and isinstance(path, str) and os.path.isfile(path):
            report = self.lore.conversations.ingest([Path(path)], embed=False)
            outcome = f"imported {report.messages} messages"
        signals = event.payload.get("lore_signals") or {}
        if signals.get("correction") and signals.get("user_message"):
            outcome += "; " + self.record_correction(event, signals)
        if event.kind == "PostToolUse":
            outcome = self.record_edits(event)
        if event.payload.get("lore_guard"):
            outcome += f"; {self.lore.checks.record(event.id, event.payload, iso(event.at))} check matches"
        if event.kind == "PreCompact":
            outcome += "; " + self.record_snapshot(event)
        if event.kind == "SessionStart":  # rules and checks changed elsewhere (a shared database)
            outcome += f"; {self.lore.checks.compile()} checks compiled"
        if event.kind == "SessionStart" and isinstance(event.payload.get("lore_context"), dict):
            outcome += "; " + self.record_context_load(event)
        if event.kind in ("SessionStart", "SessionEnd") and self.settings.config.learning.silent_fixes:
            outcome += "; " + self.check_silent_fixes(event)
        judged = False
        if event.kind == "SessionEnd":
            said, judged = self.judge_session(event)
            outcome += "; " + said
        if event.kind in ("SessionStart", "SessionEnd"):
            outcome += "; " + self.learn_from_work(event, model_called=judged)
        return outcome

    def judge_session(self, event: Event) -> tuple[str, bool]:
        """With a language model configured, the judge reads the session's waiting messages
        (then those of earlier sessions a failure left waiting). A provider error or a spent
        budget leaves them waiting, shown by `lore worker status`; the event still succeeds.
        Returns what it did and whether the model was asked about this session."""
        learner = self.lore.learning
        if learner.judge is None:
            return "no judge", False
        session_id = event.payload.get("session_id")
        report = learner.judge_waiting(session_id=session_id) if isinstance(session_id, str) \
            and session_id else None
        asked = bool(report and report.asked)
        if report is None or report.error is None:  # earlier sessions' (this one's was asked)
            earlier = learner.judge_waiting(exclude_session=session_id if isinstance(session_id, str)
                                            else None)
            report = earlier if report is None else report
            if earlier.error:
                report.error = earlier.error
        if report.error:
            return (f"judge unavailable, {self.lore.admin.waiting_for_judge()['messages']} messages waiting",
                    asked)
        return f"judged {report.messages} messages", asked

    def learn_from_work(self, event: Event, *, model_called: bool = False) -> str:
        """SessionStart records when the session began; SessionEnd scores the session's changes
        since then (with its corrections), analyses them above the threshold and proposes what
        its transcript shows (docs/analysis.md)."""
        p = event.payload
        session_id, project = p.get("session_id"), project_of(p)
        if not isinstance(session_id, str) or not session_id:
            return "no session id"
        if event.kind == "SessionStart":
            git = p.get("lore_git")
            self.lore.analysis.session_started(session_id, project, iso(event.at),
                                               git if isinstance(git, dict) else None)
            return "session start recorded"
        path = p.get("transcript_path")
        report = self.lore.analysis.session_ended(
            session_id, project, path if isinstance(path, str) else None, iso(event.at), event_id=event.id,
            model_called=model_called)
        return (f"analysis {report.outcome}" + (f" ({report.reason})" if report.reason else "")
                + f", {report.created} lessons proposed, {report.reinforced} reinforced")

    def record_correction(self, event: Event, signals: dict[str, Any]) -> str:
        """Store the message with the proposal it answers, its session, project and files
        (secrets redacted), then let the detector decide and learn from it."""
        session_id = event.payload.get("session_id")
        proposal = signals.get("assistant_proposal")
        learner = self.lore.learning
        stored = learner.capture(
            str(signals["user_message"]), str(proposal) if proposal else None,
            project=project_of(event.payload), session_id=session_id,
            files=self.lore.sessions.files(session_id), at=iso(event.at),
            origin="hook", event_id=event.id)
        if stored is None:
            return "message already seen"
        outcomes = learner.process_pending()
        return ", ".join(f"message {o.correction_id}: {o.action}" for o in outcomes) or "recorded"

    def check_silent_fixes(self, event: Event) -> str:
        """Compare what the agent wrote with the files now (or a later commit). SessionEnd
        checks this session; SessionStart checks earlier sessions of the project."""
        p = event.payload
        session_id = p.get("session_id")
        if event.kind == "SessionEnd":
            outcomes = self.lore.learning.silent_fixes(session_id=session_id, final=False)
        else:
            outcomes = self.lore.learning.silent_fixes(project=project_of(p), exclude_session=session_id,
                                                  final=True)
        return f"{len(outcomes)} silent fixes"

    def record_edits(self, event: Event) -> str:
        """What the agent wrote (file, old and new text), for silent-fix detection later."""
        from lore.capture.claude_code import file_edits

        p = event.payload
        tool, raw = p.get("tool_name"), p.get("tool_input")
        session_id = p.get("session_id")
        if not isinstance(tool, str) or not isinstance(raw, dict) or not session_id:
            return "kept"
        edits = file_edits(tool, raw, str(session_id), event.id, iso(event.at))
        n = self.lore.conversations.record_edits(str(session_id), project_of(p),
                                                 p.get("transcript_path"), edits)
        return f"{n} edits recorded"

    def record_snapshot(self, event: Event) -> str:
        """The state to resume from after compaction: tasks, files in progress, last request."""
        from lore.capture.tail import last_exchange, last_todos

        p = event.payload
        session_id = p.get("session_id")
        data: dict[str, Any] = {"trigger": p.get("trigger"),
                                "custom_instructions": p.get("custom_instructions")}
        path = p.get("transcript_path")
        if isinstance(path, str) and os.path.isfile(path):
            data["last_request"], _ = last_exchange(Path(path))
            data["current_tasks"] = last_todos(Path(path))
        stored = self.lore.sessions.record_snapshot(event.id, session_id, project_of(p), iso(event.at), data)
        return "snapshot recorded" if stored else "snapshot already recorded"

    def record_context_load(self, event: Event) -> str:
        """What the SessionStart hook gave the session, as it reported it."""
        p = event.payload
        data = p["lore_context"]
        at = data.get("at")
        stored = self.lore.sessions.record_context_load(
            event.id, p.get("session_id"), project_of(p),
            iso(float(at)) if isinstance(at, (int, float)) else iso(event.at), data)
        return "context recorded" if stored else "context already recorded"


def typed_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with every field the worker reads of the type it expects: text fields that
    are not text are dropped, signals that are not an object are dropped."""
    p = {k: v for k, v in payload.items() if k not in TEXT_FIELDS or isinstance(v, str)}
    signals = p.get("lore_signals")
    if isinstance(signals, dict):
        p["lore_signals"] = {k: v for k, v in signals.items()
                             if k not in ("user_message", "assistant_proposal") or isinstance(v, str)}
    else:
        p.pop("lore_signals", None)
    return p


def project_of(payload: dict[str, Any]) -> str | None:
    """The project of a hook event: its cwd's git top level, else the cwd (None without one)."""
    from lore.normalize import project_root

    cwd = payload.get("cwd")
    return project_root(cwd) if isinstance(cwd, str) and cwd else None


def iso(at: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")
