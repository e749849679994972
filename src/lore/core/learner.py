"""From a captured message to a scored rule: detect, extract, merge, score, store.

    outcome = lore.learner.record("no, don't use Redis, use local file sessions instead",
                                  previous="I'll add Redis for the session store.", project="/repo")
    outcome.action      # created | reinforced | recorrection | conflict | superseded | duplicate
                        # | one-off | none | not-learned
    outcome.lesson      # the preference lesson, with evidence
    outcome.reason      # why nothing was learned, or why the rule stays a candidate

With a language model configured, the judge (:mod:`lore.llm.judge`) decides: the detector
only passes it the messages at or above its filter threshold, which wait (status 'judging')
until their session ends; then one request holds the session's candidates and the judge's
label, durable flag and rule line are learned from (:meth:`Learner.judge_waiting`). A
provider error or a spent budget leaves them waiting. Without a model the detector decides.

A rule is proposed only when it may be trusted (:mod:`lore.extract.worthy`): durable and
specific, seen in two sessions, confirmed by the judge or the second opinion (a language
model asked only when the detector is unsure), or recorded with ``force``. Anything else is a
candidate, kept as evidence for review (:meth:`Learner.waiting`, :meth:`Learner.review`).

The text work is in :mod:`lore.extract` (detector, rule shapes, redaction, silent fixes,
merge rules, the confidence score); this module stores what it finds through the store's
correction tables and the core's lesson writes. Rules a person decided on keep their status:
reviewed ones (``lore review``), rejected, superseded or archived ones, lessons added by hand
and ones whose status was set by hand. A correction that restates a rejected rule stays
rejected and counts as a re-correction.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lore import normalize, plugins
from lore.core.embedding import Embedding
from lore.core.lessons import Lessons
from lore.core.review import LIVE, decided, proposable, why_candidate
from lore.core.review import waiting as waiting_list
from lore.embed import document_text
from lore.errors import InvalidInput
from lore.extract import Extractor
from lore.extract.detect import FILTER_THRESHOLD, Detection, detect, words_of
from lore.extract.merge import CHANGE_OF_MIND, contradicts, may_restate, same_rule
from lore.extract.score import confidence, status_for
from lore.extract.shapes import Extracted, names_what_was_said
from lore.extract.steer import UNRECORDED, evidence_untyped, held, own_words
from lore.extract.worthy import UNFINISHED, fragment, refusal, worthiness
from lore.ids import new_id, now
from lore.models import Evidence, Lesson
from lore.redact import redact, redact_clipped
from lore.store import Store
from lore.store.rows import Correction, ImportedMessage, RuleCandidate
from lore.tuning import Bench, constant

if TYPE_CHECKING:
    from lore.config_models import LearningConfig

MAX_MESSAGE = 4000   # stored quotes are cut here (with an ellipsis); the detector reads as much
MAX_EVIDENCE = 20    # quotes kept per rule: the oldest go first
REVIEW_ACTIONS = ("approve", "edit", "reject", "defer")

log = logging.getLogger("lore.learner")

# (message, the agent turn) -> a verdict with label, durable, confidence, rule, reason
Opinion = Callable[[str, str | None], Any]
JUDGING = "judging"  # a captured message's status while it waits for the judge
UNJUDGED = "unjudged"  # ... after JUDGE_ATTEMPTS without a verdict: no session end asks again
JUDGE_ATTEMPTS = 3  # requests that may leave a message without a verdict before it stops waiting
UNANSWERED = "unanswered"  # the action of a message the judge left without a verdict: "unanswered N: why"
MAX_KNOWN_RULES = 30  # the project's rules shown to the judge, so a restatement reinforces
MAX_EARLIER = 20  # the project's recent one-off corrections shown to the judge beside them
ONE_OFF = "a one-off fix, not a standing rule"
ONE_OFF_DAYS = 90  # a correction read as one-off and not said again within this is archived

_DETECTOR = Bench("scripts/train_detector.py",
                  "docs/benchmarks.md#Correction detection (`lore eval corrections`, "
                  "`scripts/train_detector.py`)")
_FILTER = Bench("scripts/judge_filter.py",
                "docs/learning.md#The judge: a language model decides, the detector filters")
_BAND = Bench("scripts/train_detector.py", "docs/learning.md#Measured")
# Not chosen by a benchmark: set from the figures on the page named.
_MERGE = Bench("", "docs/learning.md#Merge and score")


@dataclass(frozen=True)
class LearningTuning:
    """The learner's constants (lore.tuning); a measurement varies them by their former config
    keys, ``learning.judge_threshold`` and so on. The thresholds a person sets (active, review)
    are settings: ``learning`` in config.yaml."""

    detector_threshold: float | None = constant(None, gt=0, lt=1, by=_DETECTOR)  # None: the trained one
    # a message the detector rates below this never reaches the judge
    judge_threshold: float = constant(FILTER_THRESHOLD, gt=0, lt=1, by=_FILTER)
    # with a model and no judge: asked when |p - threshold| is at most this
    second_opinion_band: float = constant(0.2, ge=0, le=1, by=_BAND)
    same_rule_similarity: float = constant(0.86, gt=0, le=1, by=_MERGE)  # cosine: a restatement
    recent_days: int = constant(7, ge=0, by=_MERGE)  # reinforced this recently: +0.1


LEARNING = LearningTuning()


@dataclass(slots=True)
class JudgeReport:
    """What one pass of the judge did."""

    sessions: int = 0            # sessions judged
    messages: int = 0            # messages judged
    outcomes: list[Outcome] = field(default_factory=list)
    waiting: int = 0             # messages still waiting (an error, or left unanswered)
    invented: int = 0            # items dropped: their quote is not in the message
    error: str | None = None     # why the judge stopped (provider error, budget)
    given_up: int = 0            # messages left without a verdict too often: they stop waiting
    asked: int = 0               # sessions the model was asked about (sent, answered or not)
    requests: list[str] = field(default_factory=list)  # a dry run: each request as it would go

    def to_dict(self) -> dict[str, Any]:
        actions: dict[str, int] = {}
        for o in self.outcomes:
            actions[o.action] = actions.get(o.action, 0) + 1
        return {"sessions": self.sessions, "messages": self.messages, "actions": actions,
                "waiting": self.waiting, "invented_quotes": self.invented, "error": self.error,
                "given_up": self.given_up,
                **({"requests": self.requests} if self.requests else {})}


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


class Learner:
    """The learning pipeline of one store (the ``learner`` part of :class:`lore.api.Lore`)."""

    def __init__(self, store: Store, lessons: Lessons, embedding: Embedding,
                 cfg: LearningConfig, opinion: Opinion | None = None,
                 judge: Callable[[], Any] | None = None, judge_tokens: int = 8000,
                 tuning: LearningTuning = LEARNING) -> None:
        self.store = store
        self.opinion = opinion  # the second opinion (a language model), when one is configured
        # Opens the judge's provider (a language model), when one is configured.
        self.judge = judge if cfg.judge else None
        self.judge_tokens = judge_tokens
        self._judge_provider: Any = None
        self.log: logging.Logger = log  # the worker passes its own
        self.captured = store.corrections  # the captured messages
        self.lessons = lessons
        self.embedding = embedding
        self.cfg = cfg
        self.tuning = tuning
        self.extractor: Extractor = plugins.load("lore.extractors", cfg.extractor, "extractor")()

    # ---- capture -------------------------------------------------------------------------
    def capture(self, message: str, previous: str | None = None, *, project: str | None = None,
                session_id: str | None = None, message_uuid: str | None = None,
                proposal_uuid: str | None = None, files: Sequence[str] = (), at: str | None = None,
                origin: str = "manual", event_id: str | None = None) -> int | None:
        """Store one message (cut, secrets redacted) for the detector; None when this session
        already holds it. The hooks' events and the hand-recorded ones go through here."""
        quote = redact_cut(message.strip())
        proposal = redact_cut(previous.strip()) if previous else None
        with self.store.atomic():
            return self.captured.add_correction(
                event_id=event_id or new_id(), session_id=session_id,
                project=normalize.project_root(project),
                user_message=quote, proposal=proposal, files=list(files), at=at or now(),
                origin=origin, message_uuid=message_uuid, proposal_uuid=proposal_uuid)

    def record(self, message: str, previous: str | None = None, *, project: str | None = None,
               session_id: str | None = None, message_uuid: str | None = None,
               proposal_uuid: str | None = None, files: Sequence[str] = (), at: str | None = None,
               origin: str = "manual", asserted: bool = True, force: bool = False) -> Outcome:
        """Record one message and learn from it now. ``asserted``: the caller says it is a
        correction (an agent calling the CLI or MCP tool), so the detector only types it, but
        thanks, questions, pasted text or a statement still teach nothing and a vague rule
        stays a candidate. ``force``: the user's explicit wish, learned and proposed anyway."""
        if not message or not message.strip():
            raise InvalidInput("the correction text is empty")
        cid = self.capture(message, previous, project=project, session_id=session_id,
                           message_uuid=message_uuid, proposal_uuid=proposal_uuid, files=files,
                           at=at, origin=origin)
        if cid is None:
            return Outcome("duplicate", detect(message, previous))
        row = self.captured.correction(cid)
        assert row is not None
        return self.learn(row, asserted=asserted, raw_message=message, raw_previous=previous,
                          force=force)

    def process_pending(self, limit: int = 200) -> list[Outcome]:
        """Learn from the messages the hooks captured (status 'new')."""
        return [self.learn(row) for row in self.captured.pending(limit)]

    # ---- one message ---------------------------------------------------------------------
    def learn(self, row: Correction, *, asserted: bool = False, raw_message: str | None = None,
              raw_previous: str | None = None, force: bool = False) -> Outcome:
        message = raw_message if raw_message is not None else row["user_message"]
        previous = raw_previous if raw_previous is not None else row["assistant_proposal"]
        det = detect(message, previous, threshold=self.tuning.detector_threshold)
        confirmed = False
        rule_text: str | None = None
        if row.get("correction_type") == "silent_fix":
            det = Detection("correction", True, "silent_fix", 1.0, det.cues, "")
        elif asserted:
            why = "" if force else refusal(message, det)
            if why:
                return self._settle(row, Outcome("not-learned", det, reason=why))
            if self.judge is not None and not force:
                # Evidence, not a verdict: the judge decides, as for a captured message.
                return self._await_judge(row, det, asserted=True)
            det = Detection(det.label if det.positive else "correction", True,
                            det.type or "explicit", det.probability, det.cues,
                            det.reason or "recorded as a correction by the caller")
        elif self.judge is not None:
            return self._await_judge(row, det)
        else:
            det, confirmed, rule_text = self._second_opinion(message, previous, det)
            why = refusal(message, det) if det.positive else ""
            if why:  # the words hold no rule, whatever the detector's cues
                det = Detection("none", False, None, det.probability, det.cues, why, det.text)
        return self._learn_rule(row, det, message, rule_text, confirmed=confirmed, force=force)

    def _learn_rule(self, row: Correction, det: Detection, message: str, rule_text: str | None,
                    *, confirmed: bool, force: bool = False, judged: bool = False,
                    restates: str | None = None) -> Outcome:
        """Learn the rule of a message judged a correction or preference. One judged one-off
        is kept as a hidden candidate: if the user says it again in another session, the
        repeat is the proof it was not one-off, and it is proposed with both messages."""
        if not det.positive:
            return self._settle(row, Outcome("none", det, reason=det.reason))
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
            return self._settle(row, Outcome("one-off" if one_off else "none", det,
                                             reason=det.reason or "no rule could be read from it"))
        broken = "" if force else fragment(ex.title)
        if broken and broken != UNFINISHED:  # "Now", "1", "The pages should be:": no rule
            return self._settle(row, Outcome("one-off" if one_off else "none", det,
                                             reason="no rule could be read from it "
                                             f"(it would read as {broken})"))
        worth = worthiness(said, det)
        if one_off and not (worth.specific and worth.directive):
            # "revert that": nothing a repeat could turn into a rule worth keeping
            return self._settle(row, Outcome("one-off", det, reason=det.reason or ONE_OFF))
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
                return self._settle(row, Outcome("duplicate", det, lesson=lesson))
            explicit = det.type == "explicit" or det.label == "preference"
            lesson = self._reinforce(lesson, evidence, _file_types(files), explicit, det, gate)
            return self._settle(row, Outcome("reinforced", det, lesson=lesson,
                                             reason=why_candidate(lesson)))
        return self._settle(row, self.merge(ex, det, evidence, row["project"], _file_types(files),
                                            message, gate))

    # ---- the judge -------------------------------------------------------------------------
    @property
    def filter_threshold(self) -> float:
        return self.tuning.judge_threshold

    def _await_judge(self, row: Correction, det: Detection, *, asserted: bool = False) -> Outcome:
        """A message the detector passes waits for the judge; the others teach nothing. One
        its caller records as a correction waits whatever its probability (the refusals
        already held back what teaches nothing)."""
        if not asserted and ((det.reason and det.probability == 0.0)
                             or det.probability < self.filter_threshold):
            det = Detection("none", False, None, det.probability, det.cues,
                            det.reason or "below the judge's filter", det.text)
            return self._settle(row, Outcome("none", det, reason=det.reason))
        with self.store.atomic():
            self.captured.set_verdict(row["id"], status=JUDGING, label=None, correction_type=None,
                                      durable=None, probability=det.probability, cues=det.cues,
                                      lesson_id=None, action="waiting")
        return Outcome("waiting", det, correction_id=row["id"],
                       reason="waits for the judge (at the end of its session)")

    def judge_waiting(self, *, session_id: str | None = None, since: str | None = None,
                      dry_run: bool = False, given_up: bool = False,
                      exclude_session: str | None = None) -> JudgeReport:
        """Judge the messages that wait, one request per session (more when they do not fit).
        ``dry_run``: build the requests exactly as they would be sent and send nothing. A
        provider error or a spent budget stops the pass: the rest keeps waiting. A message a
        request left without a verdict (unanswered, an unreadable reply, a provider error; not
        a spent budget) is asked again at most :data:`JUDGE_ATTEMPTS` times in all, then stops
        waiting with the reason (``given_up``: ask about those again too). ``exclude_session``:
        leave that session's messages for another pass (one just judged)."""
        from lore.capture.signals import strip_wrappers
        from lore.errors import BudgetExceeded, ConfigError, ProviderError
        from lore.llm.judge import Candidate, batches, judge

        report = JudgeReport()
        rows = [r for r in self.captured.judging(session_id=session_id, since=since, given_up=given_up)
                if exclude_session is None or r["session_id"] != exclude_session]
        sessions: dict[str, list[Correction]] = {}
        for r in rows:
            sessions.setdefault(r["session_id"] or f"message {r['id']}", []).append(r)
        if not dry_run and rows and self.judge is None:
            raise ConfigError("no judge: set llm.provider (lore install --judge, docs/llm.md) and "
                              "keep learning.judge on")
        left = len(rows)
        for group in sessions.values():
            by_id = {str(r["id"]): r for r in group}
            candidates = [Candidate(str(r["id"]), strip_wrappers(r["user_message"]) or r["user_message"],
                                    r["assistant_proposal"]) for r in group]
            known, earlier = self._known_rules(group[0]["project"])
            if dry_run:
                report.requests += [b.text() for b in batches(
                    candidates, known_rules=[line for _, line in known],
                    earlier=[line for _, line in earlier], max_input_tokens=self.judge_tokens)]
                continue
            try:
                if self._judge_provider is None:
                    assert self.judge is not None
                    self._judge_provider = self.judge()
                report.asked += 1
                got = judge(self._judge_provider, candidates,
                            known_rules=[line for _, line in known],
                            earlier=[line for _, line in earlier],
                            max_input_tokens=self.judge_tokens)
            except (ProviderError, BudgetExceeded, ConfigError) as exc:
                if isinstance(exc, BudgetExceeded) and report.asked:
                    report.asked -= 1  # refused before anything was sent
                report.error = str(exc)
                report.waiting = left
                self.log.warning("the judge is unavailable, %d messages keep waiting: %s", left, exc)
                with self.store.atomic():
                    self.store.set_meta("judge.last_error", f"{now()} {exc}")
                    if isinstance(exc, ProviderError):  # sent and failed: counts as an attempt
                        report.given_up += self._unanswered(group, str(exc))
                return report
            report.sessions += 1
            report.invented += len(got.invented)
            for key in got.invented:
                row = by_id[key]
                det = Detection("none", False, None, row["probability"] or 0.0,
                                tuple(json.loads(row["cues"] or "[]")),
                                "the judge quoted words that are not in the message")
                report.outcomes.append(self._settle(row, Outcome("none", det, reason=det.reason)))
            restated = [lid for lid, _ in [*known, *earlier]]
            for v in got.verdicts:
                report.outcomes.append(self._apply_verdict(by_id[v.key], v, restated))
            report.messages += len(group) - len(got.missing)
            report.waiting += len(got.missing)
            if got.missing:
                with self.store.atomic():
                    report.given_up += self._unanswered([by_id[k] for k in got.missing],
                                                        "the judge's reply left it out")
            left -= len(group)
        if not dry_run and rows and report.error is None:
            with self.store.atomic():
                self.store.set_meta("judge.last_error", "")
        return report

    def _unanswered(self, rows: Sequence[Correction], why: str) -> int:
        """Count one attempt without a verdict on each row; a row at :data:`JUDGE_ATTEMPTS`
        stops waiting (status ``unjudged``, the reason kept). Returns how many stopped."""
        stopped = 0
        for row in rows:
            action = row["action"] or ""
            done = action.split(":", 1)[0].removeprefix(UNANSWERED).strip()
            attempts = (int(done) if done.isdigit() else 0) + 1
            note = f"{UNANSWERED} {attempts}: {' '.join(why.split())[:300]}"
            gave_up = attempts >= JUDGE_ATTEMPTS
            self.captured.set_judge_attempt(row["id"], UNJUDGED if gave_up else JUDGING, note)
            stopped += gave_up
        return stopped

    def _known_rules(self, project: str | None
                     ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(id, first line) of the project's known rules, and of its recent corrections judged
        one-off (hidden candidates, newest first, until they expire): both are shown to the
        judge, which says when a message restates one."""
        rules: list[tuple[str, str]] = []
        earlier: list[tuple[str, str, str]] = []
        for c in self.captured.rule_candidates(project, LIVE):
            first = (c["content"] or c["title"] or "").strip().splitlines()
            if not first:
                continue
            meta = json.loads(c["metadata"] or "{}").get("learning") or {}
            if c["status"] == "candidate" and meta.get("one_off"):
                earlier.append((str(meta.get("last_seen") or ""), str(c["id"]), cut(first[0], 200)))
            elif len(rules) < MAX_KNOWN_RULES:
                rules.append((str(c["id"]), cut(first[0], 200)))
        earlier.sort(reverse=True)
        return rules, [(lid, line) for _, lid, line in earlier[:MAX_EARLIER]]

    def _apply_verdict(self, row: Correction, verdict: Any,
                       restated: Sequence[str] = ()) -> Outcome:
        """A verdict learned from; ``restated``: the ids the request's numbered rules and
        earlier corrections stand for (a verdict that restates one reinforces that lesson)."""
        cues = tuple(json.loads(row["cues"] or "[]"))
        p = row["probability"] or 0.0
        if not verdict.positive:
            det = Detection("none", False, None, p, cues, "the judge: not a lesson")
            return self._settle(row, Outcome("none", det, reason=det.reason))
        if verdict.quote and not _quoted(verdict.quote, own_words(row["user_message"])[0]):
            # The detector's pasted-text gate, applied to the judge: a lesson read from a
            # paste, a log, a code fence or quoted text is not the user speaking.
            det = Detection("none", False, None, p, cues,
                            "the judge quoted pasted text, not the user's own words")
            return self._settle(row, Outcome("none", det, reason=det.reason))
        kind = "explicit" if verdict.label == "preference" or verdict.restates else "refinement"
        det = Detection(verdict.label, verdict.durable, kind, p, cues, "")
        target = restated[verdict.restates - 1] if verdict.restates and \
            verdict.restates <= len(restated) else None
        return self._learn_rule(row, det, row["user_message"], verdict.rule,
                                confirmed=verdict.durable, judged=True, restates=target)

    def _second_opinion(self, message: str, previous: str | None,
                        det: Detection) -> tuple[Detection, bool, str | None]:
        """Ask the language model when the detector is unsure (its probability within
        ``second_opinion_band`` of the threshold); its label and rule win. No model, a budget
        spent or a provider error: the detector's verdict stands (logged, never fatal)."""
        if self.opinion is None or (det.reason and det.probability == 0.0):
            return det, False, None
        from lore.extract.detect import model

        threshold = self.tuning.detector_threshold or model().threshold
        if abs(det.probability - threshold) > self.tuning.second_opinion_band:
            return det, False, None
        said = words_of(message)[0]
        try:
            verdict = self.opinion(said, previous)
        except Exception as exc:  # noqa: BLE001 - a model's failure never stops learning
            self.log.warning("second opinion unavailable, the detector decides: %s", exc)
            return det, False, None
        if verdict.label == "none":
            return Detection("none", False, None, det.probability, det.cues,
                             f"second opinion: {verdict.reason or 'not a correction'}",
                             det.text), False, None
        kind = det.type or ("explicit" if verdict.label == "preference" else "refinement")
        return Detection(verdict.label, bool(verdict.durable), kind, det.probability, det.cues,
                         "", det.text), bool(verdict.durable), verdict.rule

    def _settle(self, row: Correction, outcome: Outcome) -> Outcome:
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

    # ---- merge ---------------------------------------------------------------------------
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
        self.embedding.check_model()
        vec = self.embedding.embedder.embed_documents([document_text(ex.title, ex.rule)])[0]
        rows = self.store.vectors_for([c["seq"] for c in candidates])
        if not rows:
            return None
        seqs = [s for s, _ in rows]
        matrix = np.stack([np.frombuffer(b, dtype=np.float32) for _, b in rows])
        sims = matrix @ vec.astype(np.float32)
        best = int(np.argmax(sims))
        if float(sims[best]) >= self.tuning.same_rule_similarity:
            by_seq = {c["seq"]: c["id"] for c in candidates}
            return str(by_seq[seqs[best]])
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
        score = confidence(1, explicit, seen, bool(conflicts), self.tuning.recent_days)
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
                           meta.get("last_seen"), bool(meta.get("conflicts")), self.tuning.recent_days)
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
    def corrections(self, project: str | None = None, *, all_projects: bool = False,
                    limit: int = 50) -> list[Correction]:
        return self.captured.list_corrections(project, limit, all_projects=all_projects)

    def imported_message(self, uuid: str) -> ImportedMessage | None:
        """One imported transcript message by its uuid, with its session's project."""
        return self.captured.message(uuid)

    # ---- silent fixes ----------------------------------------------------------------------
    def silent_fixes(self, *, session_id: str | None = None, project: str | None = None,
                     exclude_session: str | None = None, final: bool = True,
                     commits: bool = True) -> list[Outcome]:
        """Compare the agent's unchecked edits with the files: the content of the first later
        commit that touched the file when there is one, else the file on disk. Each rewrite or
        revert becomes a ``silent_fix`` correction. ``final``: mark every compared edit as
        checked (a later session started); otherwise only the fixed ones (the session ended,
        the user may still edit)."""
        from lore.extract import silent

        edits = [e for e in self.captured.unchecked_edits(session_id=session_id, project=project)
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
            with self.store.atomic():
                cid = self.captured.add_correction(
                    event_id=f"silent-fix-{w.edit_id}", session_id=w.session_id,
                    project=normalize.project_root(project_of.get(w.edit_id or -1)),
                    user_message=redact_cut(message),
                    proposal=redact_cut(fix.agent_text), files=[w.file_path], at=now(),
                    origin="edit", message_uuid=w.message_uuid, diff=redact_cut(fix.diff),
                    correction_type="silent_fix")
            if cid is None:
                continue
            row = self.captured.correction(cid)
            assert row is not None
            outcomes.append(self._learn_silent(row, fix))
        checked = [w.edit_id for w in writes if w.edit_id is not None] if final else \
            [f.write.edit_id for f in fixes if f.write.edit_id is not None]
        with self.store.atomic():
            self.captured.mark_edits_checked(checked, now())
        return outcomes

    def _learn_silent(self, row: Correction, fix: Any) -> Outcome:
        """A rewrite teaches 'prefer what the user wrote over what the agent wrote' for that
        file type; the lesson starts low (no words, one observation) and grows with repeats."""
        det = Detection("correction", True, "silent_fix", 1.0, (), "")
        # redacted before the lines are cut below: a cut must not keep part of a key
        agent_line, user_line = (redact(line) for line in _first_changed_lines(fix.diff))
        path = fix.write.file_path
        where = Path(path).name
        if fix.kind == "reverted":
            title = f"Keep {where} as the user had it: they reverted the agent's change"
        elif fix.kind == "removed":
            title = f"The user removed what the agent wrote in {where}"
        else:
            title = (f"In {where}, the user rewrote `{normalize.clip_words(agent_line, 40)}` as "
                     f"`{normalize.clip_words(user_line, 40)}`")
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

    # ---- past transcripts --------------------------------------------------------------
    def backfill(self, paths: Sequence[Path], progress: Any = None) -> dict[str, Any]:
        """Run every message the user typed in past transcripts (with the agent turn it
        answers) through the pipeline, so history becomes candidates for review. A message
        seen before (by its transcript uuid) is skipped: a second run adds nothing."""
        from collections import Counter

        from lore.capture import backfill

        files, skipped = backfill.transcripts(paths)
        actions: Counter[str] = Counter()
        lessons: set[str] = set()
        waiting_sessions: set[str] = set()
        seen = 0
        for i, path in enumerate(files):
            for past in backfill.read(path):
                seen += 1
                cid = self.capture(past.text, past.previous, project=past.project,
                                   session_id=past.session_id, message_uuid=past.uuid,
                                   files=past.files, at=past.at, origin="backfill",
                                   event_id=f"backfill:{past.session_id}:{past.uuid}")
                if cid is None:
                    actions["already seen"] += 1
                    continue
                row = self.captured.correction(cid)
                assert row is not None
                outcome = self.learn(row, raw_message=past.text, raw_previous=past.previous)
                actions[outcome.action] += 1
                if outcome.action == "waiting":
                    waiting_sessions.add(past.session_id or "")
                if outcome.lesson is not None and outcome.action not in ("duplicate",
                                                                         "not-learned"):
                    lessons.add(outcome.lesson.id)
            if progress:
                progress(i + 1, len(files))
        judged = None
        if self.judge is not None and actions.get("waiting"):
            for sid in sorted(waiting_sessions):
                report = self.judge_waiting(session_id=sid or None)
                for o in report.outcomes:
                    actions[o.action] += 1
                    actions["waiting"] -= 1
                    if o.lesson is not None and o.action not in ("duplicate", "not-learned"):
                        lessons.add(o.lesson.id)
                if report.error:
                    judged = report.error
                    break
        statuses = Counter(self.lessons.get(lid).status for lid in lessons)
        out = {"files": len(files), "skipped": skipped, "messages": seen,
               "actions": {k: v for k, v in actions.items() if v}, "rules": len(lessons),
               "statuses": dict(statuses)}
        if judged:
            out["judge_error"] = judged
        return out

    # ---- review ---------------------------------------------------------------------------
    def waiting(self, project: str | None = None, *, all_projects: bool = True,
                limit: int = 100) -> list[dict[str, Any]]:
        """What waits for a person (:func:`lore.core.review.waiting`)."""
        return waiting_list(self.store, normalize.project_root(project),
                            all_projects=all_projects, limit=limit)

    def review(self, lesson_id: str, action: str, *, reason: str | None = None,
               title: str | None = None, content: str | None = None,
               status: str | None = None, via: str | None = None,
               file: str | None = None) -> Lesson:
        """A person's decision on a learned rule; it sticks (rescoring and reinforcement never
        change it). approve: active. edit: new title/content, then active (or ``status``).
        reject: rejected, with the reason; the same correction later stays rejected.
        defer: not now; it waits again once the rule is seen once more. ``via`` (cli,
        terminal, folder, mcp …) and ``file`` (a review file) say where it was decided."""
        if action not in REVIEW_ACTIONS:
            raise InvalidInput(f"unknown review action '{action}'; use one of "
                               f"{', '.join(REVIEW_ACTIONS)}")
        lesson = self.lessons.get(lesson_id)
        reason = redact_cut(" ".join(reason.split()), 500) if reason and reason.strip() else None
        # A lesson the analysis of the work proposed keeps its decision with its analysis.
        key = "analysis" if "learning" not in lesson.metadata and isinstance(
            lesson.metadata.get("analysis"), dict) else "learning"
        meta = dict(lesson.metadata.get(key) or {})
        meta["review"] = {"action": action, "at": now(),
                          **{k: v for k, v in (("reason", reason), ("via", via), ("file", file))
                             if v}}
        changes: dict[str, Any] = {}
        if action == "defer":
            meta["deferred_at"] = now()
            meta["deferred_seen"] = int(meta.get("occurrences", 1))
        else:
            meta["reviewed"] = True
            meta.pop("deferred_at", None)
        if action == "approve":
            changes["status"] = status or "active"
        elif action == "edit":
            if title is None and content is None:
                raise InvalidInput("nothing to edit: give a new title or content")
            if title is not None:
                changes["title"] = title
            if content is not None:
                changes["content"] = content
            changes["status"] = status or "active"
        elif action == "reject":
            changes["status"] = "rejected"
            if reason:
                meta["rejected_reason"] = reason
        if changes.get("status"):
            self.store.check_reference("status", changes["status"])
        with self.store.atomic():
            return self.lessons.update(lesson.id, metadata={**lesson.metadata, key: meta},
                                       **changes)

    def decided_by_hand(self, lesson_id: str) -> None:
        """A person set this learned rule's status (``lore learn update --status``): it sticks."""
        lesson = self.lessons.get(lesson_id)
        meta = lesson.metadata.get("learning")
        if meta is None or meta.get("reviewed"):
            return
        meta = {**meta, "reviewed": True, "review": {"action": "status", "at": now()}}
        self.lessons.update(lesson.id, metadata={**lesson.metadata, "learning": meta})

    # ---- a rule suggested by an agent ----------------------------------------------------
    def suggest_rule(self, rule: str, reason: str | None = None, *, project: str | None = None,
                     file_types: Sequence[str] = ()) -> Outcome:
        """An agent proposes a rule it inferred: it enters for review, never active by itself."""
        text = " ".join((rule or "").split())
        if not text:
            raise InvalidInput("the rule text is empty")
        ex = self.extractor.extract(redact_cut(text, 1000))
        if ex is None:
            raise InvalidInput("the rule text is empty")
        if reason:
            ex = Extracted(ex.title, ex.rule, ex.rejected, ex.preferred,
                           redact_cut(" ".join(reason.split()), 500), ex.context, ex.shape, ex.kind,
                           ex.scope_hint, ex.globs)
        det = Detection("preference", True, "suggested", 1.0, (), "suggested by an agent")
        evidence = Evidence(quote=redact_cut(text), observed_at=now(), source="agent suggestion",
                            context=reason)
        outcome = self.merge(ex, det, evidence, normalize.project_root(project),
                             [normalize.file_type(f) for f in file_types], text)
        if outcome.action == "created" and outcome.lesson is not None \
                and outcome.lesson.status == "candidate":
            outcome.lesson = self.lessons.update(outcome.lesson.id, status="proposed")
        return outcome


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


def _quoted(quote: str, message: str) -> bool:
    from lore.llm.judge import quoted

    return quoted(quote, message)


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
