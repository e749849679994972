"""A judged message to a stored rule: what it teaches is read, merged with the rules known
(restates, contradicts, supersedes), scored, given the status it may have, and its verdict
written on the captured message (docs/learning.md, "Merge and score")."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore import normalize
from lore.core.embedding import Embedding
from lore.core.lessons import Lessons
from lore.extract import Extractor
from lore.extract.detect import Detection, words_of
from lore.extract.merge import CHANGE_OF_MIND, contradicts, may_restate, same_rule
from lore.extract.score import confidence, status_for
from lore.extract.shapes import Extracted, names_what_was_said
from lore.extract.steer import UNRECORDED, evidence_untyped, held, own_words
from lore.extract.worthy import UNFINISHED, fragment, worthiness
from lore.ids import now
from lore.models import Evidence, Lesson
from lore.redact import redact, redact_clipped
from lore.review.queue import LIVE, decided, proposable, why_candidate
from lore.store import Store
from lore.store.rows import Correction, RuleCandidate

if TYPE_CHECKING:
    from lore.config_models import LearningConfig

MAX_MESSAGE = 4000   # stored quotes are cut here (with an ellipsis); the detector reads as much
MAX_EVIDENCE = 20    # quotes kept per rule: the oldest go first
ONE_OFF = "a one-off fix, not a standing rule"
ONE_OFF_DAYS = 90  # a correction read as one-off and not said again within this is archived

log = logging.getLogger("lore.learning")


@dataclass(slots=True)
class Outcome:
    """What happened to one message."""

    action: str                       # see the module docstring
    detection: Detection
    correction_id: int | None = None
    lesson: Lesson | None = None
    related: list[str] = field(default_factory=list)  # the rule it conflicts with or supersedes
    reason: str = ""                  # why not learned, or why kept as a candidate

    @property
    def learned(self) -> bool:
        """A rule came of it that may reach a session (proposed or active)."""
        return (self.lesson is not None and self.lesson.status in ("proposed", "active")
                and self.action in ("created", "reinforced", "conflict", "superseded"))

    def notice(self) -> str:
        """One line for a person: what was learned, or why not."""
        if self.action == "not-learned":
            return f"not learned: {self.reason}"
        if self.lesson is not None and self.lesson.status == "candidate" and self.reason:
            return (f"not learned yet: {self.reason} — kept; proposed if it comes up in another "
                    "session")
        if self.lesson is None:
            return f"not learned: {self.reason or self.detection.reason or self.action}"
        return ""

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "correction_id": self.correction_id,
                "detection": self.detection.to_dict(),
                "lesson": self.lesson.to_dict() if self.lesson else None, "related": self.related,
                "reason": self.reason, "notice": self.notice()}


def cut(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 2].rstrip() + " …"


def redact_cut(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` redacted, then cut like :func:`cut`: a secret across the cut is redacted whole,
    and the cut never keeps part of a token."""
    if len(text) <= limit:
        return redact(text)
    return redact_clipped(text, limit - 2, "").rstrip() + " …"


class RuleMerge:
    """Rules from judged messages, merged and scored in one store (``Learner.rules``)."""

    def __init__(self, store: Store, lessons: Lessons, embedding: Embedding,
                 cfg: LearningConfig, extractor: Extractor, *, same_rule_similarity: float,
                 recent_days: int) -> None:
        self.store = store
        self.captured = store.corrections  # the captured messages
        self.lessons = lessons
        self.embedding = embedding
        self.cfg = cfg
        self.extractor = extractor
        self.same_rule_similarity = same_rule_similarity
        self.recent_days = recent_days
        self.log: logging.Logger = log  # the worker passes its own

    def learn_rule(self, row: Correction, det: Detection, message: str, rule_text: str | None,
                    *, confirmed: bool, force: bool = False, judged: bool = False,
                    restates: str | None = None) -> Outcome:
        """Learn the rule of a message judged a correction or preference. One judged one-off
        is kept as a hidden candidate: if the user says it again in another session, the
        repeat is the proof it was not one-off, and it is proposed with both messages."""
        if not det.positive:
            return self.settle(row, Outcome("none", det, reason=det.reason))
        one_off = not det.durable
        # The stored (redacted) message without client wrappers or a pasted block.
        said = words_of(row["user_message"])[0] or row["user_message"]
        ex = None
        if rule_text and names_what_was_said(rule_text, own_words(said)[0] if judged else said):
            line = redact_cut(" ".join(rule_text.split()), 1000)
            ex = self.extractor.extract(line, row["assistant_proposal"])
            if ex is not None and judged:  # the judge's line is the rule, worded as it wrote it
                ex = replace(ex, rule=line)
        if ex is None:
            ex = self.extractor.extract(said, row["assistant_proposal"])
        if ex is None:  # nothing left to read once redacted and cut
            return self.settle(row, Outcome("one-off" if one_off else "none", det,
                                             reason=det.reason or "no rule could be read from it"))
        broken = "" if force else fragment(ex.title)
        if broken and broken != UNFINISHED:  # "Now", "1", "The pages should be:": no rule
            return self.settle(row, Outcome("one-off" if one_off else "none", det,
                                             reason="no rule could be read from it "
                                             f"(it would read as {broken})"))
        worth = worthiness(said, det)
        if one_off and not (worth.specific and worth.directive):
            # "revert that": nothing a repeat could turn into a rule worth keeping
            return self.settle(row, Outcome("one-off", det, reason=det.reason or ONE_OFF))
        # A rule whose words stop mid-way waits as a candidate, never proposed as it reads.
        gate = {"gate": worth.reason or (f"the rule read from it is {broken}" if broken else ""),
                "forced": force, "confirmed": confirmed, "one_off": one_off}
        if one_off and not gate["gate"]:
            gate["gate"] = ONE_OFF
        evidence = Evidence(quote=row["user_message"], session_id=row["session_id"],
                            message_id=row.get("message_uuid"), observed_at=row["at"],
                            source=row.get("origin") or "hook",
                            context=row["assistant_proposal"] or row.get("diff"))
        files = [*json.loads(row["files"] or "[]"), *ex.globs]  # "in Python files": *.py
        if restates is not None and self._is_live(restates):
            # The judge read it as a known rule or an earlier correction said again.
            lesson = self.lessons.get(restates)
            if any(e.quote == evidence.quote and e.session_id == evidence.session_id
                   for e in lesson.evidence):
                return self.settle(row, Outcome("duplicate", det, lesson=lesson))
            explicit = det.type == "explicit" or det.label == "preference"
            lesson = self._reinforce(lesson, evidence, file_types_of(files), explicit, det, gate)
            return self.settle(row, Outcome("reinforced", det, lesson=lesson,
                                             reason=why_candidate(lesson)))
        return self.settle(row, self.merge(ex, det, evidence, row["project"], file_types_of(files),
                                            message, gate))


    def settle(self, row: Correction, outcome: Outcome) -> Outcome:
        """Write the detector's verdict and what came of it on the captured message."""
        det = outcome.detection
        status = {"none": "none", "one-off": "one-off", "not-learned": "none"}.get(
            outcome.action, "learned")
        with self.store.atomic():
            self.captured.set_verdict(row["id"], status=status, label=det.label,
                          correction_type=det.type, durable=det.durable,
                          probability=det.probability, cues=det.cues,
                          lesson_id=outcome.lesson.id if outcome.lesson else None,
                          action=outcome.action)
        outcome.correction_id = row["id"]
        return outcome

    # ---- merge ----------------------------------------------------------------------------
    def merge(self, ex: Extracted, det: Detection, evidence: Evidence, project: str | None,
              file_types: Sequence[str], message: str,
              gate: dict[str, Any] | None = None) -> Outcome:
        """``gate``: what :mod:`lore.extract.worthy` said (``gate`` — why it may not be proposed
        on its own, ``forced``, ``confirmed``); None: no gate (suggested rules, silent fixes)."""
        gate = {**(gate or {}), "untyped": evidence_untyped(evidence.source, evidence.quote)}
        scope = None if ex.scope_hint == "global" else project
        everything = self.captured.rule_candidates(scope, (*LIVE, "rejected"))
        rejected = [c for c in everything if c["status"] == "rejected"]
        candidates = [c for c in everything if c["status"] != "rejected"]
        explicit = det.type == "explicit" or det.label == "preference"
        # A rule that prefers what a known one rejects (or the reverse) is a conflict.
        for c in candidates:
            if contradicts(ex, c):
                if gate.get("one_off"):  # a one-off remark against a known rule decides nothing
                    return Outcome("one-off", det, reason=det.reason or ONE_OFF)
                if CHANGE_OF_MIND.search(message):
                    lesson = self._create(ex, det, evidence, scope, file_types, explicit, gate)
                    self._supersede(lesson.id, c["id"])
                    return Outcome("superseded", det, lesson=self.lessons.get(lesson.id),
                                   related=[c["id"]])
                lesson = self._create(ex, det, evidence, scope, file_types, explicit, gate,
                                      conflicts=[c["id"]])
                self._conflict(lesson.id, c["id"])
                return Outcome("conflict", det, lesson=self.lessons.get(lesson.id),
                               related=[c["id"]])
        same = self._restated(ex, candidates) or self._restated(ex, rejected)
        if same is not None:
            existing = self.lessons.get(same)
            if any(e.quote == evidence.quote and e.session_id == evidence.session_id
                   for e in existing.evidence):
                return Outcome("duplicate", det, lesson=existing)
            action = "recorrection" if existing.status == "rejected" else "reinforced"
            lesson = self._reinforce(existing, evidence, file_types, explicit, det, gate)
            return Outcome(action, det, lesson=lesson,
                           reason=why_candidate(lesson) or (
                               "rejected before: kept rejected" if action == "recorrection" else ""))
        lesson = self._create(ex, det, evidence, scope, file_types, explicit, gate)
        return Outcome("created", det, lesson=lesson, reason=why_candidate(lesson))

    def _restated(self, ex: Extracted, candidates: list[RuleCandidate]) -> str | None:
        candidates = [c for c in candidates if may_restate(ex, c)]  # other names: another rule
        if not candidates:
            return None
        title = normalize.context(ex.title)
        for c in candidates:
            if normalize.context(c["title"]) == title or same_rule(ex, c):
                return str(c["id"])
        if not self.embedding.in_use():
            return None
        found = self.embedding.closest(ex.title, ex.rule, [c["seq"] for c in candidates])
        if found is not None and found[1] >= self.same_rule_similarity:
            return next(str(c["id"]) for c in candidates if c["seq"] == found[0])
        return None

    def _create(self, ex: Extracted, det: Detection, evidence: Evidence, project: str | None,
                file_types: Sequence[str], explicit: bool, gate: dict[str, Any],
                conflicts: Sequence[str] = ()) -> Lesson:
        seen = evidence.observed_at or now()
        meta = {"occurrences": 1, "first_seen": seen, "last_seen": seen, "explicit": explicit,
                "conflicts": list(conflicts), "types": [det.type or "explicit"], "reviewed": False,
                "sessions": [_session_key(evidence)], "gate": gate.get("gate", ""),
                "forced": bool(gate.get("forced")), "confirmed": bool(gate.get("confirmed")),
                "one_off": bool(gate.get("one_off")),
                "untyped": gate.get("untyped", "")}
        score = confidence(1, explicit, seen, bool(conflicts), self.recent_days)
        content = ex.rule
        if ex.reasoning and ex.reasoning.lower() not in ex.rule.lower():
            content += f"\n\nWhy: {ex.reasoning}"
        text = " ".join((ex.title, content, ex.preferred or ""))
        source = {"preference": "preference"}.get(det.label, "correction")
        if det.type == "silent_fix":
            source = "silent_fix"
        return self.lessons.add(
            ex.title, content, kind=ex.kind, status=self.gated_status(score, meta, text),
            score=score,
            source=source, project=project,
            preference={"context": ex.context or "", "rejected": ex.rejected or "",
                        "preferred": ex.preferred or "", "reasoning": ex.reasoning or ""},
            file_types=list(file_types), tags=["learned"],
            evidence=[_evidence_dict(evidence)], metadata={"learning": meta},
            source_notes="learned from " + (f"an explicit {det.label}" if det.type == "explicit"
                                            else f"a {det.label} refining the agent's answer"))

    def _reinforce(self, lesson: Lesson, evidence: Evidence, file_types: Sequence[str],
                   explicit: bool, det: Detection, gate: dict[str, Any]) -> Lesson:
        meta = dict(lesson.metadata.get("learning") or {})
        if "learning" not in lesson.metadata:
            meta["by_hand"] = True  # added by a person (or imported): their status stands
        if lesson.status == "rejected":
            meta["recorrections"] = int(meta.get("recorrections", 0)) + 1
        sessions = list(meta.get("sessions") or [])
        key = _session_key(evidence)
        if key not in sessions:
            sessions.append(key)
        meta["sessions"] = sessions[-MAX_EVIDENCE:]
        if "gate" in meta and not gate.get("gate"):
            meta["gate"] = ""  # a restatement that is specific enough lifts the gate
        meta["forced"] = bool(meta.get("forced")) or bool(gate.get("forced"))
        meta["confirmed"] = bool(meta.get("confirmed")) or bool(gate.get("confirmed"))
        if meta.get("one_off") and (not gate.get("one_off") or len(meta["sessions"]) >= 2):
            meta["one_off"] = False  # said again (or said to last): no longer hidden
            meta["repeated"] = True
        # Every piece of evidence must be the user's typing: the first that is not is kept.
        meta["untyped"] = _untyped(lesson, meta) or gate.get("untyped", "")
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
        return self.lessons.update(lesson.id, **changes)

    def _conflict(self, new_id_: str, old_id: str) -> None:
        self.lessons.link(new_id_, old_id, "contradicts")
        old = self.lessons.get(old_id)
        meta = dict(old.metadata.get("learning") or {"occurrences": max(len(old.evidence), 1),
                                                       "explicit": True,
                                                       "last_seen": old.updated_at,
                                                       "by_hand": True})
        meta["conflicts"] = sorted({*meta.get("conflicts", []), new_id_})
        self.lessons.update(old_id, metadata={**old.metadata, "learning": meta},
                                **self._scored(old, meta))

    def _supersede(self, new_id_: str, old_id: str) -> None:
        self.lessons.link(new_id_, old_id, "supersedes")
        self.lessons.update(old_id, status="superseded")

    # ---- scores --------------------------------------------------------------------------
    def status_for(self, score: float) -> str:
        return status_for(score, self.cfg)

    def gated_status(self, score: float, meta: dict[str, Any], text: str = "") -> str:
        """The score's status, held at candidate until the rule may be trusted: specific and
        durable, seen in two sessions, confirmed by the second opinion, or forced; and held at
        proposed (a person decides) unless all its evidence is the user's typing and its
        ``text`` asks the agent to run, fetch or send nothing (:mod:`lore.extract.steer`)."""
        status = self.status_for(score)
        if status != "candidate" and not proposable(meta):
            return "candidate"
        if status == "active" and held(meta, text):
            return "proposed"
        return status

    def _scored(self, lesson: Lesson, meta: dict[str, Any]) -> dict[str, Any]:
        score = confidence(int(meta.get("occurrences", 1)), bool(meta.get("explicit")),
                           meta.get("last_seen"), bool(meta.get("conflicts")), self.recent_days)
        out: dict[str, Any] = {"score": score,
                               "confidence": self.store.confidence_for_score(score)}
        if lesson.status in LIVE and not decided(meta):
            if meta.get("untyped") is None:  # learned before the evidence was checked
                meta["untyped"] = _untyped(lesson, meta)
            out["status"] = self.gated_status(score, meta, _rule_text(lesson))
        return out

    def rescore(self) -> int:
        """Recompute every learned rule's score and status (recency fades); return how many changed."""
        changed = 0
        for lid in self.captured.learned_rule_ids():
            lesson = self.lessons.get(lid)
            meta = lesson.metadata.get("learning") or {}
            if lesson.status == "candidate" and meta.get("one_off") and _older_than(
                    meta.get("last_seen") or lesson.updated_at, ONE_OFF_DAYS):
                # Not said again in ONE_OFF_DAYS: it was one-off after all.
                self.lessons.update(lid, status="archived")
                changed += 1
                continue
            live = [c for c in meta.get("conflicts", []) if self._is_live(c)]
            unchecked = "untyped" not in meta
            meta = {**meta, "conflicts": live}
            new = self._scored(lesson, meta)
            if new["score"] != lesson.score or new.get("status", lesson.status) != lesson.status \
                    or live != (lesson.metadata.get("learning") or {}).get("conflicts", []) \
                    or unchecked and "untyped" in meta:
                self.lessons.update(lid, metadata={**lesson.metadata, "learning": meta}, **new)
                changed += 1
        return changed

    def _is_live(self, lesson_id: str) -> bool:
        try:
            return self.lessons.get(lesson_id).status in ("candidate", "proposed", "active")
        except Exception:  # noqa: BLE001 - deleted since
            return False

    # ---- reading -------------------------------------------------------------------------
def _untyped(lesson: Lesson, meta: dict[str, Any]) -> str:
    """Why a learned rule's evidence so far is not all the user's typing ('' when it is);
    read from its evidence when the rule was learned before this was recorded."""
    known = meta.get("untyped")
    if known is not None:
        return str(known)
    for e in lesson.evidence:
        why = evidence_untyped(e.source, e.quote)
        if why:
            return why
    return "" if lesson.evidence else UNRECORDED


def _rule_text(lesson: Lesson) -> str:
    return " ".join((lesson.title, lesson.content,
                     lesson.preference.preferred if lesson.preference else ""))



def _older_than(at: str | None, days: int) -> bool:
    from datetime import UTC, datetime, timedelta

    from lore.ids import parse_time

    try:
        when = parse_time(at) if at else None
    except ValueError:
        return False
    if when is None:
        return False
    return datetime.now(UTC) - (when if when.tzinfo else when.replace(tzinfo=UTC)) \
        > timedelta(days=days)


def _session_key(e: Evidence) -> str:
    # Evidence without a session (recorded by hand) counts as its own sighting.
    return e.session_id or f"at:{e.observed_at}"


def _evidence_dict(e: Evidence) -> dict[str, Any]:
    return {k: v for k, v in e.to_dict().items() if v is not None}


def file_types_of(files: Sequence[str]) -> list[str]:
    out: list[str] = []
    for f in files:
        ext = Path(f).suffix.lstrip(".").lower()
        if ext and ext not in out and len(ext) <= 10:
            out.append(ext)
    return out[:5]
