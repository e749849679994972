"""Checks on rules: add, propose, review, allow, compile for the hooks, replay over the
recorded tool calls, and the matches the hooks reported (docs/apply.md, "Checks").

A check holds at the moment of action only when both it and its rule are approved; the
hooks read the compiled file (``$LORE_HOME/guards.json``), written again whenever a check
or a checked rule changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lore.apply import check_hook, checks
from lore.apply.check_shapes import Proposal, propose
from lore.errors import InvalidInput, NotFound
from lore.ids import new_id, now
from lore.models import RULE_KINDS, Lesson
from lore.review.queue import approved
from lore.store import Store
from lore.store.rows import CheckChanges, CheckEvent, LoadedSession, NewCheck

# A model (the judge) proposes more checks with the same answer as the shapes.
Proposer = Callable[[Lesson], Sequence[Proposal]]
REVIEW_ACTIONS = ("approve", "reject")
REFUSED = ("doesn't want to proceed", "tool use was rejected", "was interrupted",
           "user rejected", "permission to use")
WHY_CHARS, SAID_CHARS = 300, 240


@dataclass(frozen=True, slots=True)
class Replay:
    """What a check would have matched in the recorded tool calls."""

    check: dict[str, Any]
    calls: int  # tool calls looked at
    sessions: int
    matched: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accepted(self) -> list[dict[str, Any]]:
        """Matches on calls the user let run without complaint: the check would have stopped
        something the user was content with."""
        return [m for m in self.matched if m["accepted"]]

    def to_dict(self, examples: int = 5) -> dict[str, Any]:
        return {"check": self.check, "calls": self.calls, "sessions": self.sessions,
                "matched": len(self.matched), "accepted": len(self.accepted),
                "flagged": bool(self.accepted),
                "examples": self.matched[:examples],
                "accepted_examples": self.accepted[:examples]}


class Checks:
    """The checks of one store, and the compiled file beside it."""

    def __init__(self, store: Store, home: Path, proposers: Iterable[Proposer] = (),
                 model_proposers: Iterable[Proposer] = ()) -> None:
        self.store = store
        self.path = check_hook.compiled_path(str(home))
        self.proposers: list[Proposer] = [propose, *proposers]
        # A language model's proposals cost a request: asked only when a person asks for
        # proposals (``lore guard propose``), never on every change of a rule.
        self.model_proposers: list[Proposer] = list(model_proposers)

    # ---- checks ----------------------------------------------------------------------
    def get(self, check_id: str) -> dict[str, Any]:
        row = self.store.guards.check(check_id.strip())
        if row is None:
            raise NotFound(f"no check with id {check_id}; `lore guard` lists them")
        return self.view(row)

    def view(self, row: NewCheck, lesson: Lesson | None = None) -> dict[str, Any]:
        """A check as shown: its fields, the rule's title and the check in words."""
        out: dict[str, Any] = {**row, "allowed_until": row.get("allowed_until")}  # a new one: None
        if lesson is None:
            titles = self.store.titles([row["lesson_id"]])
            out["rule"] = titles.get(row["lesson_id"], ("(deleted rule)", ""))[0]
        else:
            out["rule"] = lesson.title
        out["words"] = checks.describe(row)
        return out

    def checks(self, lesson_id: str | None = None, statuses: Sequence[str] | None = None
             ) -> list[dict[str, Any]]:
        rows = self.store.guards.checks([lesson_id] if lesson_id else None, statuses)
        titles = self.store.titles(sorted({r["lesson_id"] for r in rows}))
        return [{**r, "rule": titles.get(r["lesson_id"], ("(deleted rule)", ""))[0],
                 "words": checks.describe(r)} for r in rows]

    def waiting(self, project: str | None = None, examples: int = 3) -> list[dict[str, Any]]:
        """Proposed checks (of ``project``'s rules and global ones; every one when None),
        each in words with what it would have matched in the recorded tool calls."""
        out = []
        rows = self.checks(statuses=("proposed",))
        rules = {x.id: x for x in self.store.get_many(sorted({r["lesson_id"] for r in rows}))}
        for row in rows:
            if row["lesson_id"] not in rules:
                continue  # its rule was deleted: it holds nothing and waits for no one
            rule_project = rules[row["lesson_id"]].project
            if project is not None and rule_project not in (None, project):
                continue
            out.append({**row, "scope": rule_project or "global",
                        "replay": self.test(row["id"]).to_dict(examples)})
        return out

    def is_check(self, any_id: str) -> bool:
        """Whether an id names a check (review verbs take rule and check ids alike)."""
        return self.store.guards.check(any_id.strip()) is not None

    def add(self, lesson_id: str, fields: dict[str, Any], *, origin: str = "user",
            status: str = "proposed", note: str = "") -> dict[str, Any]:
        """A new check on a rule (validated; a bad pattern changes nothing)."""
        lesson = self.store.get(lesson_id.strip())
        try:
            clean = checks.validate(fields)
        except checks.CheckError as exc:
            raise InvalidInput(str(exc)) from None
        if status not in checks.STATUSES:
            raise InvalidInput(f"unknown status {status!r}; valid: {', '.join(checks.STATUSES)}")
        at = now()
        row: NewCheck = {"id": new_id(), "lesson_id": lesson.id, "command": clean.get("command"),
                         "path": clean.get("path"), "content": clean.get("content"),
                         "tool": clean.get("tool"), "mode": clean["mode"], "status": status,
                         "origin": origin, "note": note, "created_at": at, "updated_at": at,
                         "reviewed_at": at if status != "proposed" else None}
        with self.store.atomic():
            self.store.guards.insert_check(row)
        self.compile()
        return self.view(row, lesson)

    def propose(self, lesson_id: str | None = None, *, ask_model: bool = False
                ) -> list[dict[str, Any]]:
        """Checks proposed for one rule (any status) or for every approved rule, once each:
        a check a rule already has (proposed, approved or rejected) is not proposed again.
        ``ask_model``: the language model proposes too, when one is configured."""
        if lesson_id:
            rules = [self.store.get(lesson_id.strip())]
        else:
            rules = [x for x in self.store.iter_lessons() if x.kind in RULE_KINDS and approved(x)]
        made = []
        for rule in rules:
            have = {self._key(r) for r in self.store.guards.checks([rule.id])}
            for proposer in [*self.proposers, *(self.model_proposers if ask_model else [])]:
                for p in proposer(rule):
                    try:
                        clean = checks.validate(p.fields)
                    except checks.CheckError:
                        continue  # a model's bad pattern is not proposed
                    if self._key(clean) in have:
                        continue
                    have.add(self._key(clean))
                    made.append(self.add(rule.id, clean, origin=p.origin, note=p.note))
        return made

    @staticmethod
    def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row.get(k) or None for k in checks.FIELDS)

    def review(self, check_id: str, action: str, *, mode: str | None = None) -> dict[str, Any]:
        """Approve (optionally in another mode) or reject a check."""
        if action not in REVIEW_ACTIONS:
            raise InvalidInput(f"unknown action {action!r}; valid: {', '.join(REVIEW_ACTIONS)}")
        row = self.get(check_id)
        changes: CheckChanges = {"status": "active" if action == "approve" else "rejected",
                                 "updated_at": now(), "reviewed_at": now()}
        if mode is not None:
            if mode not in checks.MODES:
                raise InvalidInput(f"unknown mode {mode!r}; valid: {', '.join(checks.MODES)}")
            changes["mode"] = mode
        with self.store.atomic():
            self.store.guards.update_check(row["id"], changes)
        self.compile()
        return self.get(row["id"])

    def set_mode(self, check_id: str, mode: str) -> dict[str, Any]:
        row = self.get(check_id)
        if mode not in checks.MODES:
            raise InvalidInput(f"unknown mode {mode!r}; valid: {', '.join(checks.MODES)}")
        with self.store.atomic():
            self.store.guards.update_check(row["id"], {"mode": mode, "updated_at": now()})
        self.compile()
        return self.get(row["id"])

    def allow(self, check_id: str, minutes: float = 30) -> dict[str, Any]:
        """Let a blocking check's calls through for ``minutes`` (0: block again); the calls
        let through are counted as allowed by the user."""
        if not 0 <= minutes <= 7 * 24 * 60:
            raise InvalidInput("--minutes must be between 0 and 10080 (a week)")
        row = self.get(check_id)
        until = (datetime.now(UTC) + timedelta(minutes=minutes)).isoformat() if minutes else None
        with self.store.atomic():
            self.store.guards.update_check(row["id"], {"allowed_until": until, "updated_at": now()})
        self.compile()
        return self.get(row["id"])

    def remove(self, check_id: str) -> dict[str, Any]:
        row = self.get(check_id)
        with self.store.atomic():
            self.store.guards.delete_check(row["id"])
        self.compile()
        return row

    def remove_of(self, lesson_id: str) -> int:
        """Delete every check of a rule (the rule is being deleted); returns how many."""
        rows = self.store.guards.checks([lesson_id], None)
        if rows:
            with self.store.atomic():
                for row in rows:
                    self.store.guards.delete_check(row["id"])
            self.compile()
        return len(rows)

    # ---- the compiled file ---------------------------------------------------------------
    def entries(self) -> list[dict[str, Any]]:
        """The approved checks of approved rules, each with what its reason tells the agent."""
        rows = self.store.guards.checks(statuses=("active",))
        lessons = {x.id: x for x in self.store.get_many(sorted({r["lesson_id"] for r in rows}))}
        out = []
        for r in rows:
            rule = lessons.get(r["lesson_id"])
            if rule is None or not approved(rule):
                continue
            fields: Mapping[str, Any] = r
            entry = {k: fields[k] for k in ("id", "lesson_id", "mode", *checks.FIELDS) if fields[k]}
            entry.update(project=rule.project, rule=rule.title, why=_why(rule))
            needles = {k: n for k in checks.FIELDS if fields[k] and (n := checks.needle(k, fields[k]))}
            if needles:
                entry["needles"] = needles
            if rule.evidence:
                ev = rule.evidence[0]
                entry["said"] = _clip(ev.quote, SAID_CHARS)
                if ev.observed_at:
                    entry["said_at"] = ev.observed_at
            if r["allowed_until"]:
                entry["allowed_until"] = _epoch(r["allowed_until"])
            out.append(entry)
        return out

    def compile(self) -> int:
        """Write the file the hooks read; returns how many checks it holds. With none, the
        file is removed: the hook then returns before importing anything."""
        entries = self.entries()
        if entries:
            check_hook.write_compiled(self.path, entries, now())
        else:
            Path(self.path).unlink(missing_ok=True)
        return len(entries)

    def refused(self) -> str | None:
        """Why the hooks would not read the compiled file (another user's, in a home others
        can write: :mod:`lore.trusted`), in one line; None when they would."""
        return check_hook.refused(self.path)

    def rule_changed(self, lesson_id: str) -> None:
        """A rule was changed or deleted: its checks' entries change with it, and a rule just
        approved gets the checks its words call for, proposed for review (once each)."""
        try:
            lesson = self.store.get(lesson_id)
        except NotFound:
            lesson = None
        if lesson is not None and lesson.kind in RULE_KINDS and approved(lesson):
            if self.propose(lesson.id):
                return  # each proposal compiled the file
        if lesson_id in self.store.guards.checked_lessons():
            self.compile()

    # ---- matches the hooks reported ------------------------------------------------------------
    def record(self, event_id: str, payload: dict[str, Any], at: str) -> int:
        """Store the matches a PreToolUse or PostToolUse event carries (once each)."""
        found = payload.get("lore_guard")
        if not isinstance(found, list):
            return 0
        rows: list[CheckEvent] = []
        for m in found:
            if not isinstance(m, dict) or not m.get("check_id") or not m.get("outcome"):
                continue
            rows.append({"event_id": f"{event_id}:{m['check_id']}", "check_id": str(m["check_id"]),
                         "lesson_id": str(m.get("lesson_id") or ""),
                         "session_id": payload.get("session_id"), "project": payload.get("cwd"),
                         "at": at, "tool": payload.get("tool_name"),
                         "outcome": str(m["outcome"]), "matched": str(m.get("matched") or "")[:300]})
        with self.store.atomic():
            return self.store.guards.add_events(rows)

    def matches(self, lesson_id: str | None = None) -> list[CheckEvent]:
        """Every match the hooks reported, oldest first."""
        return self.store.guards.events(lesson_id)

    def loads(self) -> list[LoadedSession]:
        """Each session start with the lesson ids it told (compliance: sessions that loaded
        a rule)."""
        return self.store.guards.loaded_sessions()

    def active_per_rule(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.store.guards.checks(statuses=("active",)):
            out[c["lesson_id"]] = out.get(c["lesson_id"], 0) + 1
        return out

    # ---- replay -------------------------------------------------------------------------------
    def test(self, check: str | dict[str, Any], *, project: str | None = None,
             since: str | None = None, every_project: bool = False) -> Replay:
        """Run a check (an id, or fields) over the recorded tool calls: of its rule's project
        (every project for a global rule or ``every_project``), since ``since``."""
        if isinstance(check, str):
            row = self.get(check)
            if project is None and not every_project:
                project = self.store.get(row["lesson_id"]).project
        else:
            try:
                row = checks.validate(check)
            except checks.CheckError as exc:
                raise InvalidInput(str(exc)) from None
        if since is not None:
            since = _since(since)
        rows = self.store.guards.tool_calls(None if every_project else project, since)
        matched, sessions, calls = [], set(), 0
        for r in rows:
            sessions.add(r["session_id"])
            try:
                listed = json.loads(r["tool_calls"])
            except ValueError:
                continue
            for call in listed if isinstance(listed, list) else []:
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    continue
                calls += 1
                seen = _replayed(row, call["name"], call.get("input"), r["project"])
                if seen is None:
                    continue
                refused, complaint = self._reaction(r["session_id"], r["seq"])
                matched.append({"session_id": r["session_id"], "at": r["timestamp"],
                                "tool": call["name"], "matched": seen, "refused": refused,
                                "complaint": complaint,
                                "accepted": not refused and complaint is None})
        # What the hooks recorded of sessions whose transcript was not imported.
        for e in self.store.guards.hook_edits(None if every_project else project, since):
            sessions.add(e["session_id"])
            calls += 1
            name = e["tool"] if e["tool"] in checks.FILE_TOOLS else "Edit"
            text = e["new_text"] or ""
            args = {"file_path": e["file_path"], "new_string": text, "content": text}
            seen = _replayed(row, name, args, e["project"])
            if seen is None:
                continue
            refused = e["succeeded"] == 0
            complaint = self.store.guards.corrected_after(e["session_id"], e["timestamp"])
            matched.append({"session_id": e["session_id"], "at": e["timestamp"], "tool": name,
                            "matched": seen, "refused": refused, "complaint": complaint,
                            "accepted": not refused and complaint is None})
        return Replay(row, calls, len(sessions), matched)

    def _reaction(self, session_id: str, seq: int) -> tuple[bool, str | None]:
        """Whether the user refused the call, and the correction they typed next (if any)."""
        from lore.extract.detect import detect

        refused = False
        for turn in self.store.guards.turns_after(session_id, seq, 12):
            text = turn["text"] or ""
            if turn["role"] == "assistant":
                if refused:
                    continue
                break  # the agent went on before the user said anything
            if turn["is_meta"] or turn["injected"]:
                continue
            if text.startswith("[tool_result "):
                refused = refused or any(s in text for s in REFUSED)
                continue
            detection = detect(text)
            return refused, (text[:200] if detection.positive else None)
        return refused, None


def _replayed(check: Mapping[str, Any], tool: str, tool_input: Any, cwd: str | None) -> str | None:
    """What a check matches in a recorded call; a pattern past its time bound matches nothing
    (as at the moment of action)."""
    try:
        return checks.match(dict(check), tool, tool_input, cwd)
    except checks.Slow:
        return None


_GLUE = frozenset({"instead", "of", "rather", "than", "not", "no", "use", "the", "a", "an", "and",
                   "to", "in", "for", "with"})


def _words(text: str) -> set[str]:
    import re

    return {w for w in re.findall(r"[\w.@/+-]+", text.lower()) if w not in _GLUE}


def _why(rule: Lesson) -> str:
    """Why the rule holds: its reasoning, else its text when that says more than its title."""
    pref = rule.preference
    if pref and pref.reasoning:
        return _clip(pref.reasoning, WHY_CHARS)
    content = (rule.content or "").strip()
    if not content or _words(content.rstrip(".")) <= _words(rule.title):
        return ""  # the text only restates the rule ("Use pnpm instead of npm.")
    return _clip(content, WHY_CHARS)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _epoch(iso: str) -> float:
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _since(text: str) -> str:
    """``--since`` as an ISO moment: a date, a moment, or a number of days (``30d``)."""
    t = text.strip()
    if t.endswith("d") and t[:-1].isdigit():
        d = datetime.now(UTC) - timedelta(days=int(t[:-1]))
    else:
        try:
            d = datetime.fromisoformat(t.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"--since {text!r}: give a date (2026-11-01), a moment or a "
                               "number of days (30d)") from None
    d = d if d.tzinfo else d.replace(tzinfo=UTC)
    return d.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
