"""The full correction detector: correction / preference / none, durable, and the type.

Client wrappers are stripped first (:func:`lore.capture.signals.strip_wrappers`, the same
function the hooks use), pasted documents, rule lists and prompts for other tools are set
aside (or only the short note around them is weighed), then the hooks' pre-filter and the
gates run. A message's cues (:mod:`lore.extract.features`) are pooled into a few groups — it
reacts to what the agent did, it redirects the approach, it lays down a standing rule, it
reports a symptom, it is polite, a request, a question — and a logistic model over those
groups, a few generic shapes of the words and the exchange, and hashed word n-grams (no
vocabulary ships, only bucket weights) gives the probability that the message teaches
something. `scripts/train_detector.py` fits the weights on labelled files and reports nested
cross-validation split by repository (docs/learning.md). The weights ship in
``detector.json``; nothing of the data does.

Stdlib only, so the worker and the `lore eval` command pay no import cost.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from lore.capture.signals import benign, might_teach, strip_wrappers
from lore.errors import DetectorError
from lore.extract.features import (
    BUCKETS,
    clean,
    cues,
    english_ratio,
    generic,
    hashed,
    looks_like_log_or_code,
    pasted,
)

WEIGHTS_FILE = Path(__file__).with_name("detector.json")

# With a language model configured the detector only picks what the judge reads: every
# message at or above this probability. Chosen for recall by scripts/judge_filter.py (nested,
# repository-grouped cross-validation: at least 0.97 of the positives of each development
# file reach the judge; docs/learning.md).
FILTER_THRESHOLD = 0.04

# Cue groups: membership, not per-cue weights, is what the model learns from. Cues that
# fired on the positives of a single development repository only ("rather than", "it's
# important", "never … from now on") were left out: they fit an author, not the task.
GROUPS: dict[str, tuple[str, ...]] = {
    "reactive": ("opens_no", "opens_actually", "not_right", "you_did", "you_are", "missed",
                 "undo", "regression", "i_said", "why_did_you", "handoff", "redo", "too_much",
                 "already_exists"),
    "redirect": ("instead", "use_instead", "instead_of", "not_but", "no_need",
                 "dont_do", "dont_anywhere"),
    "rule": ("always_never", "from_now_on", "make_rule", "i_prefer", "must_caps", "we_convention"),
    "report": ("failure_report", "no_then_symptom"),
    "polite": ("approval", "continue", "greeting", "apology"),
    "request": ("request", "instead_in_request", "additive"),
    "question": ("question_start", "question_end"),
}
STACKING = ("reactive", "redirect", "rule")  # a second cue of these groups adds evidence
SINGLE = ("should_be", "opens_wait", "prev_offer", "prev_interrupted", "prev_done", "long",
          "no_previous", "declines_offer", "actually_agrees", "redirect_after_interrupt")
# Sign constraints: what a group may say, whatever the data (a prior that keeps the few
# weights sensible when one author dominates the training file).
POSITIVE = ("reactive", "reactive+", "redirect", "redirect+", "rule", "rule+", "should_be",
            "redirect_after_interrupt")
NEGATIVE = ("report", "polite", "request", "question", "short_plain", "long", "no_previous",
            "declines_offer", "actually_agrees")

# Cues that make a positive message a standing rule rather than a one-off fix.
DURABLE_CUES = frozenset(GROUPS["rule"]) | {"use_instead", "instead_of"}
# Cues of an outright rejection ("explicit"); others are refinements.
EXPLICIT_CUES = frozenset({"opens_no", "not_right", "you_did", "you_are", "missed", "undo",
                           "regression", "i_said", "why_did_you", "dont_do", "handoff"})


# Generic shapes of the words and the exchange (features.generic), weighed with the groups.
GENERIC = ("g_negation_start", "g_negation", "g_contrast", "g_imperative", "g_you_past",
           "g_question", "g_words", "g_overlap", "g_prev_asks", "g_prev_plans", "g_no_after_done")


def feature_names(generic_features: bool = True) -> list[str]:
    names: list[str] = []
    for g in GROUPS:
        names.append(g)
        if g in STACKING:
            names.append(g + "+")
    names = [*names, *SINGLE, "short_plain"]
    return [*names, *GENERIC] if generic_features else names


def vector(c: dict[str, float], g: dict[str, float] | None = None) -> list[float]:
    """The model's dense inputs from a message's cues and generic shapes (same order as
    :func:`feature_names`; without ``g`` only the cue groups)."""
    out: list[float] = []
    for name, members in GROUPS.items():
        k = sum(1 for m in members if m in c)
        out.append(1.0 if k else 0.0)
        if name in STACKING:
            out.append(0.5 * max(k - 1, 0))
    out += [c.get(n, 0.0) for n in SINGLE]
    teaching = any(m in c for grp in STACKING for m in GROUPS[grp])
    out.append(1.0 if c.get("short") and not teaching else 0.0)
    if g is not None:
        out += [g.get(n, 0.0) for n in GENERIC]
    return out


@dataclass(frozen=True, slots=True)
class Model:
    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    hashed: tuple[float, ...] = ()   # one weight per n-gram bucket (empty: no n-grams)
    hash_scale: float = 1.0
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def generic(self) -> bool:
        return len(self.features) > len(feature_names(False))

    def probability(self, x: list[float], buckets: list[int] | None = None) -> float:
        z = self.bias + sum(w * v for w, v in zip(self.weights, x, strict=True))
        if self.hashed and buckets:
            z += self.hash_scale / math.sqrt(len(buckets)) * sum(self.hashed[i] for i in buckets)
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


@lru_cache(maxsize=1)
def model() -> Model:
    data = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
    names = data["features"]
    hashed_weights = data.get("hashed") or {}
    if names not in (feature_names(), feature_names(False)) or (
            hashed_weights and hashed_weights.get("buckets") != BUCKETS):
        raise DetectorError("detector.json does not match the detector's features; retrain it "
                           "with scripts/train_detector.py")
    return Model(tuple(names), tuple(data["weights"]), data["bias"], data["threshold"],
                 tuple(hashed_weights.get("weights", ())), hashed_weights.get("scale", 1.0),
                 data.get("meta", {}))


@dataclass(frozen=True, slots=True)
class Detection:
    label: str            # correction | preference | none
    durable: bool         # worth carrying into future sessions
    type: str | None      # explicit | refinement (silent fixes come from file edits)
    probability: float
    cues: tuple[str, ...]
    reason: str = ""      # why it is not a correction ("pasted text", "reads as thanks" …)
    text: str = ""        # the words weighed: wrappers stripped, a paste reduced to the note

    @property
    def positive(self) -> bool:
        return self.label != "none"

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "durable": self.durable, "type": self.type,
                "probability": round(self.probability, 3), "cues": list(self.cues),
                "reason": self.reason}


def words_of(message: str) -> tuple[str, str]:
    """The words the user said to the agent, and why there are none ('' if there are).

    Client wrappers go; a pasted document, rule list, configuration, prompt or log is not
    the user speaking, so only a short note written around it is kept ("pasted text" when
    there is none). Training and detection both start here."""
    text = strip_wrappers(message or "")
    if not text:
        return "", "only a client wrapper" if (message or "").strip() else "empty"
    is_pasted, own = pasted(text)
    if is_pasted:
        if not own:
            return "", "pasted text"
        text = own
    return text, ""


def gate(text: str) -> str:
    """Why a message is not weighed at all ('' when it is): the same gates for training."""
    if not text:
        return "empty"
    if not might_teach(text):
        return benign(strip_wrappers(text)) or "empty"
    if english_ratio(text) < 0.5:
        return "not English"
    if looks_like_log_or_code(text):
        return "pasted log or code"
    return ""


def veto(c: dict[str, float]) -> str:
    """Shapes the labelling rubric calls 'none' whatever the words: the data is too thin on
    them for the model to learn it (a declined offer, agreeing with "actually", a symptom)."""
    teaching = {m for g in STACKING for m in GROUPS[g]} & set(c)
    if "declines_offer" in c and teaching <= {"opens_no"}:
        return "declines an offer"
    if "actually_agrees" in c and teaching <= {"opens_actually"}:
        return "agrees with the agent"
    if "no_then_symptom" in c and teaching <= {"opens_no"}:
        return "reports a symptom"
    return ""


def explain(c: dict[str, float]) -> str:
    """Why a weighed message fell under the threshold, in the words a caller can show."""
    for cue, reason in (("failure_report", "reports a symptom"), ("approval", "reads as thanks "
                        "or approval"), ("agrees", "agrees with the agent"), ("continue", "asks "
                        "to continue"), ("greeting", "reads as a greeting"), ("question_end",
                        "reads as a question"), ("question_start", "reads as a question"),
                        ("request", "reads as a task request")):
        if cue in c:
            return reason
    return "no correction or rule strong enough"


def detect(message: str, previous: str | None = None, *, threshold: float | None = None) -> Detection:
    """Classify one user message in the context of the agent turn it answers."""
    said, reason = words_of(message)
    text = clean(said)
    if not reason:
        reason = gate(text)
    if reason:
        return Detection("none", False, None, 0.0, (), reason, text)
    prev = strip_wrappers(previous) if previous else None
    c = cues(text, prev)
    vetoed = veto(c)
    if vetoed:
        return Detection("none", False, None, 0.0, tuple(sorted(c)), vetoed, text)
    m = model()
    p = m.probability(vector(c, generic(text, prev) if m.generic else None),
                      hashed(text) if m.hashed else None)
    names = tuple(sorted(c))
    if p < (m.threshold if threshold is None else threshold):
        return Detection("none", False, None, p, names, explain(c), text)
    label = "preference" if states_rule(c) else "correction"
    rule = any(k in c for k in GROUPS["rule"])
    kind = "explicit" if (EXPLICIT_CUES & set(c)) or rule else "refinement"
    return Detection(label, durable(c), kind, p, names, "", text)


def states_rule(c: dict[str, float]) -> bool:
    """A positive message is a preference when it lays down a rule without reacting to the
    agent's turn (otherwise a correction)."""
    reactive = any(k in c for k in GROUPS["reactive"]) or "redirect_after_interrupt" in c
    return any(k in c for k in GROUPS["rule"]) and not reactive


def durable(c: dict[str, float]) -> bool:
    """Whether a positive message holds something for later sessions: a rule, or a tool or
    approach choice made while rejecting the agent's ("no Redis, use files"). A hand-written
    rule over the cues; a model learned on the labelled files did not beat it
    (docs/learning.md)."""
    return states_rule(c) or bool(DURABLE_CUES & set(c)) or (
        "names_tool" in c and bool({"opens_no", "dont_do", "not_right", "i_said", "no_need"} & set(c)))
