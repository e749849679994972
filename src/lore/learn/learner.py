"""From a captured message to a scored rule: detect, extract, merge, score.

    from lore.learn import Learning
    learning = Learning(lore)
    outcome = learning.record("no, don't use Redis, use local file sessions instead",
                              previous="I'll add Redis for the session store.", project="/repo")
    outcome.action      # created | reinforced | conflict | superseded | duplicate | one-off | none
    outcome.lesson      # the preference lesson, with evidence

Scoring follows seed 004: 0.3, plus 0.1 per occurrence (at most 0.4), plus 0.2 for an explicit
correction or a stated rule, plus 0.1 when seen in the last ``recent_days``, minus 0.3 while it
conflicts with another rule. At ``active_threshold`` or above a rule is active (injected,
published); from ``review_threshold`` it is proposed for review; below it is a candidate kept
as evidence. Rules a person reviewed (rejected, superseded, archived, or marked reviewed) keep
their status.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from lore import normalize
from lore.api import Lore
from lore.embed import document_text
from lore.errors import InvalidInput
from lore.ids import new_id, now
from lore.learn.detect import Detection, detect, words_of
from lore.learn.extract import Extracted, extract
from lore.learn.redact import redact
from lore.models import Evidence, Lesson
from lore.store import atomic
from lore.store import learning as q

MAX_MESSAGE = 4000   # stored quotes are cut here (with an ellipsis); the detector reads as much
MAX_EVIDENCE = 20    # quotes kept per rule: the oldest go first
CHANGE_OF_MIND = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|actually|instead|any\s*more|no\s+longer|"
    r"changed\s+my\s+mind|switch(?:ed)?\s+to|moved\s+to|migrated\s+to|we\s+now\s+use|these\s+days)\b",
    re.IGNORECASE)
_FILLER = frozenset("the a an to of for in on with use using uses used our my your this that it "
                    "please always never instead rather than not no just".split())


@dataclass(slots=True)
class Outcome:
    """What happened to one message."""

    action: str                       # see the module docstring
    detection: Detection
    correction_id: int | None = None
    lesson: Lesson | None = None
    related: list[str] = field(default_factory=list)  # the rule it conflicts with or supersedes

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "correction_id": self.correction_id,
                "detection": self.detection.to_dict(),
                "lesson": self.lesson.to_dict() if self.lesson else None, "related": self.related}


def confidence(occurrences: int, explicit: bool, last_seen: str | None, conflicted: bool,
               recent_days: int, at: datetime | None = None) -> float:
    """Seed 004's formula, clamped to 0..1."""
    at = at or datetime.now(UTC)
    score = 0.3 + min(occurrences * 0.1, 0.4) + (0.2 if explicit else 0.0)
    if last_seen:
        try:
            seen = datetime.fromisoformat(last_seen.replace("Z", "+00:00"))
            if seen.tzinfo is None:
                seen = seen.replace(tzinfo=UTC)
            if (at - seen).days < recent_days:
                score += 0.1
        except ValueError:
            pass
    if conflicted:
        score -= 0.3
    return round(min(max(score, 0.0), 1.0), 2)


def cut(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 2].rstrip() + " …"


def phrase_tokens(text: str | None) -> tuple[str, ...]:
    words = re.findall(r"[a-z0-9@#+./_-]+", (text or "").lower())
    return tuple(w.strip("./-") for w in words if w.strip("./-") and w not in _FILLER)


def same_phrase(a: str | None, b: str | None) -> bool:
    """Two short phrases name the same thing ("Redis" / "a Redis cache")."""
    ta, tb = phrase_tokens(a), phrase_tokens(b)
    if not ta or not tb:
        return False
    sa, sb = set(ta), set(tb)
    if sa <= sb or sb <= sa:
        return True
    return len(sa & sb) / len(sa | sb) >= 0.6


class Learning:
    """The learning pipeline over one :class:`~lore.api.Lore`."""

    def __init__(self, lore: Lore) -> None:
        self.lore = lore
        self.cfg = lore.config.learning

    # ---- capture -------------------------------------------------------------------------
    def capture(self, message: str, previous: str | None = None, *, project: str | None = None,
                session_id: str | None = None, message_uuid: str | None = None,
                proposal_uuid: str | None = None, files: Sequence[str] = (), at: str | None = None,
                origin: str = "manual", event_id: str | None = None) -> int | None:
        """Store one message (cut, secrets redacted) for the detector; None when this session
        already holds it. The hooks' events and the hand-recorded ones go through here."""
        quote = redact(cut(message.strip()))
        proposal = redact(cut(previous.strip())) if previous else None
        with atomic(self.lore.conn):
            return q.add_correction(
                self.lore.conn, event_id=event_id or new_id(), session_id=session_id,
                project=project, user_message=quote, proposal=proposal, files=list(files),
                at=at or now(), origin=origin, message_uuid=message_uuid,
                proposal_uuid=proposal_uuid)

    def record(self, message: str, previous: str | None = None, *, project: str | None = None,
               session_id: str | None = None, message_uuid: str | None = None,
               proposal_uuid: str | None = None, files: Sequence[str] = (), at: str | None = None,
               origin: str = "manual", asserted: bool = True) -> Outcome:
        """Record one message and learn from it now. ``asserted``: the caller says it is a
        correction (an agent calling the CLI or MCP tool), so the detector only types it."""
        if not message or not message.strip():
            raise InvalidInput("the correction text is empty")
        cid = self.capture(message, previous, project=project, session_id=session_id,
                           message_uuid=message_uuid, proposal_uuid=proposal_uuid, files=files,
                           at=at, origin=origin)
        if cid is None:
            return Outcome("duplicate", detect(message, previous))
        row = q.correction(self.lore.conn, cid)
        assert row is not None
        return self.learn(row, asserted=asserted, raw_message=message, raw_previous=previous)

    def process_pending(self, limit: int = 200) -> list[Outcome]:
        """Learn from the messages the hooks captured (status 'new')."""
        return [self.learn(row) for row in q.pending(self.lore.conn, limit)]

    # ---- one message ---------------------------------------------------------------------
    def learn(self, row: dict[str, Any], *, asserted: bool = False, raw_message: str | None = None,
              raw_previous: str | None = None) -> Outcome:
        message = raw_message if raw_message is not None else row["user_message"]
        previous = raw_previous if raw_previous is not None else row["assistant_proposal"]
        det = detect(message, previous, threshold=self.cfg.detector_threshold)
        if row.get("correction_type") == "silent_fix":
            det = Detection("correction", True, "silent_fix", 1.0, det.cues, "")
        elif asserted and not det.positive:
            det = Detection("correction", True, "explicit", det.probability, det.cues,
                            "recorded as a correction by the caller")
        elif asserted:
            det = Detection(det.label, True, det.type, det.probability, det.cues, det.reason)
        if not det.positive or not det.durable:
            return self._settle(row, Outcome("none" if not det.positive else "one-off", det))
        try:
            # The stored (redacted) message without client wrappers or a pasted block.
            said = words_of(row["user_message"])[0] or row["user_message"]
            ex = extract(said, row["assistant_proposal"])
        except ValueError:  # nothing left to read once redacted and cut
            return self._settle(row, Outcome("none", det))
        evidence = Evidence(quote=row["user_message"], session_id=row["session_id"],
                            message_id=row.get("message_uuid"), observed_at=row["at"],
                            source=row.get("origin") or "hook",
                            context=row["assistant_proposal"] or row.get("diff"))
        files = json.loads(row["files"] or "[]")
        return self._settle(row, self.merge(ex, det, evidence, row["project"], _file_types(files),
                                            message))

    def _settle(self, row: dict[str, Any], outcome: Outcome) -> Outcome:
        """Write the detector's verdict and what came of it on the captured message."""
        det = outcome.detection
        status = outcome.action if outcome.action in ("none", "one-off") else "learned"
        with atomic(self.lore.conn):
            q.set_verdict(self.lore.conn, row["id"], status=status, label=det.label,
                          correction_type=det.type, durable=det.durable,
                          probability=det.probability, cues=det.cues,
                          lesson_id=outcome.lesson.id if outcome.lesson else None,
                          action=outcome.action)
        outcome.correction_id = row["id"]
        return outcome

    # ---- merge ---------------------------------------------------------------------------
    def merge(self, ex: Extracted, det: Detection, evidence: Evidence, project: str | None,
              file_types: Sequence[str], message: str) -> Outcome:
        scope = None if ex.scope_hint == "global" else project
        candidates = q.rule_candidates(self.lore.conn, scope)
        explicit = det.type == "explicit" or det.label == "preference"
        # A rule that prefers what a known one rejects (or the reverse) is a conflict.
        for c in candidates:
            if _contradicts(ex, c):
                if CHANGE_OF_MIND.search(message):
                    lesson = self._create(ex, det, evidence, scope, file_types, explicit)
                    self._supersede(lesson.id, c["id"])
                    return Outcome("superseded", det, lesson=self.lore.get_lesson(lesson.id),
                                   related=[c["id"]])
                lesson = self._create(ex, det, evidence, scope, file_types, explicit,
                                      conflicts=[c["id"]])
                self._conflict(lesson.id, c["id"])
                return Outcome("conflict", det, lesson=self.lore.get_lesson(lesson.id),
                               related=[c["id"]])
        same = self._restated(ex, candidates)
        if same is not None:
            existing = self.lore.get_lesson(same)
            if any(e.quote == evidence.quote and e.session_id == evidence.session_id
                   for e in existing.evidence):
                return Outcome("duplicate", det, lesson=existing)
            return Outcome("reinforced", det,
                           lesson=self._reinforce(existing, evidence, file_types, explicit, det))
        return Outcome("created", det,
                       lesson=self._create(ex, det, evidence, scope, file_types, explicit))

    def _restated(self, ex: Extracted, candidates: list[dict[str, Any]]) -> str | None:
        if not candidates:
            return None
        title = normalize.context(ex.title)
        for c in candidates:
            if normalize.context(c["title"]) == title or _same_rule(ex, c):
                return str(c["id"])
        if self.lore.store.meta("embedding_model") is None:
            return None
        self.lore.check_model()
        vec = self.lore.embedder.embed_documents([document_text(ex.title, ex.rule)])[0]
        rows = self.lore.store.vectors_for([c["seq"] for c in candidates])
        if not rows:
            return None
        seqs = [s for s, _ in rows]
        matrix = np.stack([np.frombuffer(b, dtype=np.float32) for _, b in rows])
        sims = matrix @ vec.astype(np.float32)
        best = int(np.argmax(sims))
        if float(sims[best]) >= self.cfg.same_rule_similarity:
            by_seq = {c["seq"]: c["id"] for c in candidates}
            return str(by_seq[seqs[best]])
        return None

    def _create(self, ex: Extracted, det: Detection, evidence: Evidence, project: str | None,
                file_types: Sequence[str], explicit: bool, conflicts: Sequence[str] = ()) -> Lesson:
        seen = evidence.observed_at or now()
        meta = {"occurrences": 1, "first_seen": seen, "last_seen": seen, "explicit": explicit,
                "conflicts": list(conflicts), "types": [det.type or "explicit"], "reviewed": False}
        score = confidence(1, explicit, seen, bool(conflicts), self.cfg.recent_days)
        content = ex.rule
        if ex.reasoning and ex.reasoning.lower() not in ex.rule.lower():
            content += f"\n\nWhy: {ex.reasoning}"
        source = {"preference": "preference"}.get(det.label, "correction")
        if det.type == "silent_fix":
            source = "silent_fix"
        return self.lore.add_lesson(
            ex.title, content, kind=ex.kind, status=self.status_for(score), score=score,
            source=source, project=project,
            preference={"context": ex.context or "", "rejected": ex.rejected or "",
                        "preferred": ex.preferred or "", "reasoning": ex.reasoning or ""},
            file_types=list(file_types), tags=["learned"],
            evidence=[_evidence_dict(evidence)], metadata={"learning": meta},
            source_notes=f"learned from a {det.type or 'correction'} ({det.label})")

    def _reinforce(self, lesson: Lesson, evidence: Evidence, file_types: Sequence[str],
                   explicit: bool, det: Detection) -> Lesson:
        meta = dict(lesson.metadata.get("learning") or {})
        meta["occurrences"] = int(meta.get("occurrences", len(lesson.evidence) or 1)) + 1
        meta["last_seen"] = max(meta.get("last_seen") or "", evidence.observed_at or now())
        meta.setdefault("first_seen", lesson.created_at)
        meta["explicit"] = bool(meta.get("explicit")) or explicit
        meta["types"] = sorted({*meta.get("types", []), det.type or "explicit"})
        evidence_list = [_evidence_dict(e) for e in lesson.evidence][-(MAX_EVIDENCE - 1):]
        evidence_list.append(_evidence_dict(evidence))
        metadata = {**lesson.metadata, "learning": meta}
        changes: dict[str, Any] = {"evidence": evidence_list, "metadata": metadata,
                                   "file_types": sorted({*lesson.file_types, *file_types})}
        changes.update(self._scored(lesson, meta))
        return self.lore.update_lesson(lesson.id, **changes)

    def _conflict(self, new_id_: str, old_id: str) -> None:
        self.lore.link(new_id_, old_id, "contradicts")
        old = self.lore.get_lesson(old_id)
        meta = dict(old.metadata.get("learning") or {"occurrences": max(len(old.evidence), 1),
                                                       "explicit": True,
                                                       "last_seen": old.updated_at})
        meta["conflicts"] = sorted({*meta.get("conflicts", []), new_id_})
        self.lore.update_lesson(old_id, metadata={**old.metadata, "learning": meta},
                                **self._scored(old, meta))

    def _supersede(self, new_id_: str, old_id: str) -> None:
        self.lore.link(new_id_, old_id, "supersedes")
        self.lore.update_lesson(old_id, status="superseded")

    # ---- scores --------------------------------------------------------------------------
    def status_for(self, score: float) -> str:
        if score >= self.cfg.active_threshold:
            return "active"
        if score >= self.cfg.review_threshold:
            return "proposed"
        return "candidate"

    def _scored(self, lesson: Lesson, meta: dict[str, Any]) -> dict[str, Any]:
        score = confidence(int(meta.get("occurrences", 1)), bool(meta.get("explicit")),
                           meta.get("last_seen"), bool(meta.get("conflicts")), self.cfg.recent_days)
        out: dict[str, Any] = {"score": score,
                               "confidence": self.lore.store.confidence_for_score(score)}
        if lesson.status in ("candidate", "proposed", "active") and not meta.get("reviewed"):
            out["status"] = self.status_for(score)
        return out

    def rescore(self) -> int:
        """Recompute every learned rule's score and status (recency fades); return how many changed."""
        changed = 0
        for lid in q.learned_rule_ids(self.lore.conn):
            lesson = self.lore.get_lesson(lid)
            meta = lesson.metadata.get("learning") or {}
            live = [c for c in meta.get("conflicts", []) if self._is_live(c)]
            if live != meta.get("conflicts", []):
                meta = {**meta, "conflicts": live}
            new = self._scored(lesson, meta)
            if new["score"] != lesson.score or new.get("status", lesson.status) != lesson.status \
                    or live != (lesson.metadata.get("learning") or {}).get("conflicts", []):
                self.lore.update_lesson(lid, metadata={**lesson.metadata, "learning": meta}, **new)
                changed += 1
        return changed

    def _is_live(self, lesson_id: str) -> bool:
        try:
            return self.lore.get_lesson(lesson_id).status in ("candidate", "proposed", "active")
        except Exception:  # noqa: BLE001 - deleted since
            return False

    # ---- reading -------------------------------------------------------------------------
    def preferences(self, project: str | None = None, *, all_projects: bool = False,
                    file_type: str | None = None, statuses: Sequence[str] = ("active", "proposed"),
                    limit: int = 100) -> list[Lesson]:
        for s in statuses:
            self.lore.store.check_reference("status", s)
        ft = normalize.file_type(file_type) if file_type else None
        ids = q.preferences(self.lore.conn, project, all_projects=all_projects, file_type=ft,
                            statuses=tuple(statuses), limit=limit)
        return [self.lore.get_lesson(i) for i in ids]

    def corrections(self, project: str | None = None, *, all_projects: bool = False,
                    limit: int = 50) -> list[dict[str, Any]]:
        return q.list_corrections(self.lore.conn, project, limit, all_projects=all_projects)

    # ---- silent fixes ----------------------------------------------------------------------
    def silent_fixes(self, *, session_id: str | None = None, project: str | None = None,
                     exclude_session: str | None = None, final: bool = True,
                     commits: bool = True) -> list[Outcome]:
        """Compare the agent's unchecked edits with the files: the content of the first later
        commit that touched the file when there is one, else the file on disk. Each rewrite or
        revert becomes a ``silent_fix`` correction. ``final``: mark every compared edit as
        checked (a later session started); otherwise only the fixed ones (the session ended,
        the user may still edit)."""
        from lore.learn import silent

        edits = [e for e in q.unchecked_edits(self.lore.conn, session_id=session_id, project=project)
                 if e["session_id"] != exclude_session]
        if not edits:
            return []
        writes = [silent.AgentWrite(file_path=e["file_path"], tool=e["tool"], old_text=e["old_text"],
                                    new_text=e["new_text"], session_id=e["session_id"],
                                    message_uuid=e["message_uuid"], timestamp=e["timestamp"],
                                    edit_id=e["id"]) for e in edits]
        project_of = {e["id"]: e["project"] for e in edits}

        def read(path: str, after: str | None) -> str | None:
            if commits and after:
                committed = silent.file_at_commit_after(path, after)
                if committed is not None:
                    return committed
            return silent.read_file(path)

        fixes = []
        latest = silent.latest_writes(writes)
        for w in latest:
            fix = silent.check_write(w, read(w.file_path, w.timestamp))
            if fix is not None:
                fixes.append(fix)
        outcomes = []
        for fix in fixes:
            w = fix.write
            message = silent.summary(fix)
            with atomic(self.lore.conn):
                cid = q.add_correction(
                    self.lore.conn, event_id=f"silent-fix-{w.edit_id}", session_id=w.session_id,
                    project=project_of.get(w.edit_id or -1), user_message=redact(cut(message)),
                    proposal=redact(cut(fix.agent_text)), files=[w.file_path], at=now(),
                    origin="edit", message_uuid=w.message_uuid, diff=redact(cut(fix.diff)),
                    correction_type="silent_fix")
            if cid is None:
                continue
            row = q.correction(self.lore.conn, cid)
            assert row is not None
            outcomes.append(self._learn_silent(row, fix))
        checked = [w.edit_id for w in writes if w.edit_id is not None] if final else \
            [f.write.edit_id for f in fixes if f.write.edit_id is not None]
        with atomic(self.lore.conn):
            q.mark_edits_checked(self.lore.conn, checked, now())
        return outcomes

    def _learn_silent(self, row: dict[str, Any], fix: Any) -> Outcome:
        """A rewrite teaches 'prefer what the user wrote over what the agent wrote' for that
        file type; the lesson starts low (no words, one observation) and grows with repeats."""
        det = Detection("correction", True, "silent_fix", 1.0, (), "")
        agent_line, user_line = _first_changed_lines(fix.diff)
        path = fix.write.file_path
        where = Path(path).name
        if fix.kind == "reverted":
            title = f"Keep {where} as the user had it: they reverted the agent's change"
        elif fix.kind == "removed":
            title = f"The user removed what the agent wrote in {where}"
        else:
            title = f"In {where}, the user rewrote `{agent_line[:40]}` as `{user_line[:40]}`"
        rule = (f"The user silently {fix.kind} the agent's change to {path}. "
                f"Agent wrote: {cut(agent_line, 160)!r}; now: {cut(user_line, 160)!r}.")
        ex = Extracted(title=cut(title, 90), rule=rule, rejected=cut(agent_line, 80) or None,
                       preferred=cut(user_line, 80) or None, reasoning=None,
                       context=f"editing {where}", shape="silent_fix", kind="preference",
                       scope_hint=None)
        evidence = Evidence(quote=row["user_message"], session_id=row["session_id"],
                            message_id=row.get("message_uuid"), observed_at=row["at"],
                            source="edit", context=row.get("diff"))
        return self._settle(row, self.merge(ex, det, evidence, row["project"], _file_types([path]),
                                            ""))

    # ---- a rule suggested by an agent ----------------------------------------------------
    def suggest_rule(self, rule: str, reason: str | None = None, *, project: str | None = None,
                     file_types: Sequence[str] = ()) -> Outcome:
        """An agent proposes a rule it inferred: it enters for review, never active by itself."""
        text = " ".join((rule or "").split())
        if not text:
            raise InvalidInput("the rule text is empty")
        ex = extract(redact(cut(text, 1000)))
        if reason:
            ex = Extracted(ex.title, ex.rule, ex.rejected, ex.preferred,
                           redact(cut(" ".join(reason.split()), 500)), ex.context, ex.shape, ex.kind,
                           ex.scope_hint)
        det = Detection("preference", True, "suggested", 1.0, (), "suggested by an agent")
        evidence = Evidence(quote=redact(cut(text)), observed_at=now(), source="agent suggestion",
                            context=reason)
        outcome = self.merge(ex, det, evidence, project, [normalize.file_type(f) for f in file_types],
                             text)
        if outcome.action == "created" and outcome.lesson is not None \
                and outcome.lesson.status == "candidate":
            outcome.lesson = self.lore.update_lesson(outcome.lesson.id, status="proposed")
        return outcome


def _evidence_dict(e: Evidence) -> dict[str, Any]:
    return {k: v for k, v in e.to_dict().items() if v is not None}


def _first_changed_lines(diff: str) -> tuple[str, str]:
    minus = next((ln[1:].strip() for ln in diff.splitlines()
                  if ln.startswith("-") and not ln.startswith("---") and ln[1:].strip()), "")
    plus = next((ln[1:].strip() for ln in diff.splitlines()
                 if ln.startswith("+") and not ln.startswith("+++") and ln[1:].strip()), "")
    return minus, plus


def _file_types(files: Sequence[str]) -> list[str]:
    out: list[str] = []
    for f in files:
        ext = Path(f).suffix.lstrip(".").lower()
        if ext and ext not in out and len(ext) <= 10:
            out.append(ext)
    return out[:5]


def _contradicts(ex: Extracted, c: dict[str, Any]) -> bool:
    """The new rule prefers what the known one rejects, or rejects what it prefers."""
    crossed = (same_phrase(ex.preferred, c["pref_rejected"])
               or same_phrase(ex.rejected, c["pref_preferred"]))
    agrees = same_phrase(ex.preferred, c["pref_preferred"]) or same_phrase(ex.rejected,
                                                                           c["pref_rejected"])
    return crossed and not agrees


def _same_rule(ex: Extracted, c: dict[str, Any]) -> bool:
    """Both name what to use (and agree on it), or both name what to avoid (and agree)."""
    pref_ok = same_phrase(ex.preferred, c["pref_preferred"])
    rej_ok = same_phrase(ex.rejected, c["pref_rejected"])
    if ex.preferred and c["pref_preferred"] and pref_ok:
        return not (ex.rejected and c["pref_rejected"]) or rej_ok
    if ex.rejected and c["pref_rejected"] and rej_ok:
        return not (ex.preferred and c["pref_preferred"])
    return False
