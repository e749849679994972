"""From a captured message to a scored rule: detect, extract, merge, score, store.

    outcome = lore.learning.record("no, don't use Redis, use local file sessions instead",
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

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore import normalize, plugins
from lore.core.embedding import Embedding
from lore.core.judging import Judge, JudgeReport
from lore.core.lessons import Lessons
from lore.core.merging import Outcome, RuleMerge, cut, file_types_of, redact_cut
from lore.errors import InvalidInput
from lore.extract import Extractor
from lore.extract.detect import FILTER_THRESHOLD, Detection, detect, words_of
from lore.extract.shapes import Extracted
from lore.extract.worthy import refusal
from lore.ids import new_id, now
from lore.models import Evidence
from lore.redact import redact
from lore.store import Store
from lore.store.rows import Correction, ImportedMessage
from lore.tuning import Bench, constant

if TYPE_CHECKING:
    from lore.config_models import LearningConfig


# (message, the agent turn) -> a verdict with label, durable, confidence, rule, reason
Opinion = Callable[[str, str | None], Any]

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

class Learner:
    """The learning pipeline of one store (the ``learning`` part of :class:`lore.api.Lore`):
    capture, the detector and the second opinion here, the judge in :attr:`judging`, merging
    and scoring in :attr:`rules`."""

    def __init__(self, store: Store, lessons: Lessons, embedding: Embedding,
                 cfg: LearningConfig, opinion: Opinion | None = None,
                 judge: Callable[[], Any] | None = None, judge_tokens: int = 8000,
                 tuning: LearningTuning = LEARNING) -> None:
        self.store = store
        self.opinion = opinion  # the second opinion (a language model), when one is configured
        self.captured = store.corrections  # the captured messages
        self.lessons = lessons
        self.embedding = embedding
        self.cfg = cfg
        self.tuning = tuning
        self.extractor: Extractor = plugins.load("lore.extractors", cfg.extractor, "extractor")()
        self.rules = RuleMerge(store, lessons, embedding, cfg, self.extractor,
                               same_rule_similarity=tuning.same_rule_similarity,
                               recent_days=tuning.recent_days)
        # Opens the judge's provider (a language model), when one is configured.
        self.judging = Judge(self.rules, judge if cfg.judge else None, judge_tokens,
                             tuning.judge_threshold)

    @property
    def log(self) -> logging.Logger:
        return self.rules.log

    @log.setter
    def log(self, value: logging.Logger) -> None:  # the worker passes its own
        self.rules.log = value

    @property
    def judge(self) -> Callable[[], Any] | None:
        """What opens the judge's provider; None: no judge."""
        return self.judging.factory

    @judge.setter
    def judge(self, factory: Callable[[], Any] | None) -> None:
        self.judging.factory, self.judging.provider = factory, None

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
                return self.rules.settle(row, Outcome("not-learned", det, reason=why))
            if self.judging.factory is not None and not force:
                # Evidence, not a verdict: the judge decides, as for a captured message.
                return self.judging.wait(row, det, asserted=True)
            det = Detection(det.label if det.positive else "correction", True,
                            det.type or "explicit", det.probability, det.cues,
                            det.reason or "recorded as a correction by the caller")
        elif self.judging.factory is not None:
            return self.judging.wait(row, det)
        else:
            det, confirmed, rule_text = self._second_opinion(message, previous, det)
            why = refusal(message, det) if det.positive else ""
            if why:  # the words hold no rule, whatever the detector's cues
                det = Detection("none", False, None, det.probability, det.cues, why, det.text)
        return self.rules.learn_rule(row, det, message, rule_text, confirmed=confirmed, force=force)

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

    def judge_waiting(self, *, session_id: str | None = None, since: str | None = None,
                      dry_run: bool = False, given_up: bool = False,
                      exclude_session: str | None = None) -> JudgeReport:
        """The messages that wait, judged (:meth:`Judge.run`)."""
        return self.judging.run(session_id=session_id, since=since, dry_run=dry_run,
                                given_up=given_up, exclude_session=exclude_session)

    def rescore(self) -> int:
        return self.rules.rescore()

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
        outcome = self.rules.merge(ex, det, evidence, row["project"], file_types_of([path]), "")
        return self.rules.settle(row, outcome)

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
        if self.judging.factory is not None and actions.get("waiting"):
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
        outcome = self.rules.merge(ex, det, evidence, normalize.project_root(project),
                             [normalize.file_type(f) for f in file_types], text)
        if outcome.action == "created" and outcome.lesson is not None \
                and outcome.lesson.status == "candidate":
            outcome.lesson = self.lessons.update(outcome.lesson.id, status="proposed")
        return outcome


def _first_changed_lines(diff: str) -> tuple[str, str]:
    minus = next((ln[1:].strip() for ln in diff.splitlines()
                  if ln.startswith("-") and not ln.startswith("---") and ln[1:].strip()), "")
    plus = next((ln[1:].strip() for ln in diff.splitlines()
                 if ln.startswith("+") and not ln.startswith("+++") and ln[1:].strip()), "")
    return minus, plus
