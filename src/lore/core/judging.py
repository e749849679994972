"""The judge's flow: a message the detector passes waits for its session to end, then one
request per session (:mod:`lore.llm.judge`) gives each waiting message a verdict, learned from
through :class:`~lore.core.merging.RuleMerge`. A provider error or a spent budget leaves them
waiting; a message left without a verdict too often stops waiting."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lore.core.merging import Outcome, RuleMerge, cut
from lore.extract.detect import Detection
from lore.extract.steer import own_words
from lore.ids import now
from lore.review.queue import LIVE
from lore.store.rows import Correction

JUDGING = "judging"  # a captured message's status while it waits for the judge
UNJUDGED = "unjudged"  # ... after JUDGE_ATTEMPTS without a verdict: no session end asks again
JUDGE_ATTEMPTS = 3  # requests that may leave a message without a verdict before it stops waiting
UNANSWERED = "unanswered"  # the action of a message the judge left without a verdict: "unanswered N: why"
MAX_KNOWN_RULES = 30  # the project's rules shown to the judge, so a restatement reinforces
MAX_EARLIER = 20  # the project's recent one-off corrections shown to the judge beside them


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


class Judge:
    """The judge of one store (``Learner.judging``): ``factory`` opens its provider (a
    language model) when first asked; None: no judge is configured."""

    def __init__(self, rules: RuleMerge, factory: Callable[[], Any] | None, tokens: int,
                 threshold: float) -> None:
        self.rules = rules
        self.store = rules.store
        self.captured = rules.captured
        self.factory = factory
        self.tokens = tokens
        self.threshold = threshold
        self.provider: Any = None

    def wait(self, row: Correction, det: Detection, *, asserted: bool = False) -> Outcome:
        """A message the detector passes waits for the judge; the others teach nothing. One
        its caller records as a correction waits whatever its probability (the refusals
        already held back what teaches nothing)."""
        if not asserted and ((det.reason and det.probability == 0.0)
                             or det.probability < self.threshold):
            det = Detection("none", False, None, det.probability, det.cues,
                            det.reason or "below the judge's filter", det.text)
            return self.rules.settle(row, Outcome("none", det, reason=det.reason))
        with self.store.atomic():
            self.captured.set_verdict(row["id"], status=JUDGING, label=None, correction_type=None,
                                      durable=None, probability=det.probability, cues=det.cues,
                                      lesson_id=None, action="waiting")
        return Outcome("waiting", det, correction_id=row["id"],
                       reason="waits for the judge (at the end of its session)")

    def run(self, *, session_id: str | None = None, since: str | None = None,
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
        if not dry_run and rows and self.factory is None:
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
                    earlier=[line for _, line in earlier], max_input_tokens=self.tokens)]
                continue
            try:
                if self.provider is None:
                    assert self.factory is not None
                    self.provider = self.factory()
                report.asked += 1
                got = judge(self.provider, candidates,
                            known_rules=[line for _, line in known],
                            earlier=[line for _, line in earlier],
                            max_input_tokens=self.tokens)
            except (ProviderError, BudgetExceeded, ConfigError) as exc:
                if isinstance(exc, BudgetExceeded) and report.asked:
                    report.asked -= 1  # refused before anything was sent
                report.error = str(exc)
                report.waiting = left
                self.rules.log.warning("the judge is unavailable, %d messages keep waiting: %s", left, exc)
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
                report.outcomes.append(self.rules.settle(row, Outcome("none", det, reason=det.reason)))
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
            return self.rules.settle(row, Outcome("none", det, reason=det.reason))
        if verdict.quote and not _quoted(verdict.quote, own_words(row["user_message"])[0]):
            # The detector's pasted-text gate, applied to the judge: a lesson read from a
            # paste, a log, a code fence or quoted text is not the user speaking.
            det = Detection("none", False, None, p, cues,
                            "the judge quoted pasted text, not the user's own words")
            return self.rules.settle(row, Outcome("none", det, reason=det.reason))
        kind = "explicit" if verdict.label == "preference" or verdict.restates else "refinement"
        det = Detection(verdict.label, verdict.durable, kind, p, cues, "")
        target = restated[verdict.restates - 1] if verdict.restates and \
            verdict.restates <= len(restated) else None
        return self.rules.learn_rule(row, det, row["user_message"], verdict.rule,
                                confirmed=verdict.durable, judged=True, restates=target)


def _quoted(quote: str, message: str) -> bool:
    from lore.llm.judge import quoted

    return quoted(quote, message)

