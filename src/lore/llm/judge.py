"""The judge: a language model decides which of a session's messages teach a lesson.

The detector (:mod:`lore.extract.detect`) only picks the candidates, at a low threshold
that keeps nearly every positive; the judge reads each candidate with the agent turn it
answers and decides the label, the durable flag and the rule line. One request holds a
session's candidates (more when they do not fit the input budget), each redacted and cut
here, so what a dry run or ``lore eval corrections --judge-prompts`` shows is exactly what
is sent. The reply names each message by its reference and quotes the words that carry the
lesson; a quote not found in its message drops the item (the model invented it).

This module knows nothing of the detector or the store: callers pass plain candidates.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lore.errors import UnusableReply
from lore.llm.base import (
    CHARS_PER_TOKEN,
    Built,
    Provider,
    Request,
    cut_middle,
    neutral,
    tag_pattern,
)
from lore.llm.jsonreply import extract_json, listed
from lore.llm.opinion import prompt
from lore.redact import redact

PURPOSE = "judge"
MESSAGE_CHARS = 1500   # a developer message longer than this keeps its beginning and end
TURN_CHARS = 600       # the agent turn keeps its end: what the message answers
MAX_MESSAGES = 40      # per request, so the reply stays short enough to come back whole
REPLY_TOKENS_BASE = 200
REPLY_TOKENS_PER_MESSAGE = 90
LABELS = ("correction", "preference", "none")
NO_TURN = "(no earlier assistant turn)"
_TAG = tag_pattern("messages", "message", "assistant_turn", "developer_message", "known_rules",
                   "earlier_corrections")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One message for the judge: ``key`` is the caller's reference (returned in the verdict)."""

    key: str
    text: str
    agent_turn: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    key: str
    label: str            # correction | preference | none
    durable: bool
    rule: str | None
    quote: str | None
    restates: int | None = None  # 1-based number in the known rules, when the message restates one

    @property
    def positive(self) -> bool:
        return self.label != "none"


@dataclass(frozen=True, slots=True)
class Batch(Built):
    """One request and what it refers to: reference (m1, m2 …) -> candidate and its text as sent."""

    keys: dict[str, str]
    sent: dict[str, str]


@dataclass
class Judgement:
    """What one reply said: the verdicts kept, and what was thrown away and why."""

    verdicts: list[Verdict] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)   # keys whose quote is not in the message
    missing: list[str] = field(default_factory=list)    # keys the reply did not answer
    invalid: int = 0                                    # items that were not usable at all


def system_prompt() -> str:
    return prompt("judge")


def _cut_start(text: str, cap: int) -> str:
    return text if len(text) <= cap else "…" + text[len(text) - cap:].lstrip()


def _neutral(text: str) -> str:
    """Text that cannot close or open one of the request's own tags."""
    return neutral(text, _TAG)


def message_block(ref: str, text: str, agent_turn: str | None) -> tuple[str, str]:
    """The block for one candidate and the message text as sent (redacted and cut)."""
    said = _neutral(cut_middle(redact(text.strip()), MESSAGE_CHARS))
    turn = _neutral(_cut_start(redact(agent_turn.strip()), TURN_CHARS)) if agent_turn and \
        agent_turn.strip() else NO_TURN
    block = (f'<message id="{ref}">\n<assistant_turn>\n{turn}\n</assistant_turn>\n'
             f"<developer_message>\n{said}\n</developer_message>\n</message>\n")
    return block, said


def _known(rules: Sequence[str], earlier: Sequence[str] = ()) -> str:
    """The known rules, then the earlier one-off corrections, numbered on from the rules."""
    out = ""
    if rules:
        lines = "".join(f"{i}. {_neutral(redact(r.strip()))}\n" for i, r in enumerate(rules, 1))
        out += f"<known_rules>\n{lines}</known_rules>\n\n"
    if earlier:
        lines = "".join(f"{i}. {_neutral(redact(r.strip()))}\n"
                        for i, r in enumerate(earlier, len(rules) + 1))
        out += f"<earlier_corrections>\n{lines}</earlier_corrections>\n\n"
    return out


def batches(candidates: Sequence[Candidate], *, known_rules: Sequence[str] = (),
            earlier: Sequence[str] = (), max_input_tokens: int = 8000) -> list[Batch]:
    """The requests for one session's candidates: as few as fit ``max_input_tokens`` each
    (and :data:`MAX_MESSAGES`), the messages in order, numbered m1, m2 … across them.
    ``earlier``: the project's recent corrections judged one-off, numbered after the rules."""
    system = system_prompt()
    known = _known(known_rules, earlier)
    room = max_input_tokens * CHARS_PER_TOKEN - len(system) - len(known) - 64
    out: list[Batch] = []
    blocks: list[tuple[str, str, str, str]] = []  # ref, key, block, sent
    for n, cand in enumerate(candidates, 1):
        ref = f"m{n}"
        block, sent = message_block(ref, cand.text, cand.agent_turn)
        blocks.append((ref, cand.key, block, sent))
    group: list[tuple[str, str, str, str]] = []
    used = 0
    for item in blocks:
        if group and (used + len(item[2]) > room or len(group) >= MAX_MESSAGES):
            out.append(_batch(system, known, group))
            group, used = [], 0
        group.append(item)
        used += len(item[2])
    if group:
        out.append(_batch(system, known, group))
    return out


def _batch(system: str, known: str, group: list[tuple[str, str, str, str]]) -> Batch:
    user = known + "<messages>\n" + "".join(b for _, _, b, _ in group) + "</messages>\n"
    request = Request.ask(user, system=system, temperature=0.0, purpose=PURPOSE,
                          max_tokens=REPLY_TOKENS_BASE + REPLY_TOKENS_PER_MESSAGE * len(group))
    return Batch(request, {ref: key for ref, key, _, _ in group},
                 {ref: sent for ref, _, _, sent in group})


_SAME = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-",
                       "‹": "<", "`": "'"})


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_SAME).casefold()
    return " ".join(re.sub(r"[^\w'\"<>/.:,;!?()\[\]{}=+*-]", " ", text).split())


def quoted(quote: str, message: str) -> bool:
    """Whether ``quote`` is in ``message``: case, spacing, typographic quotes and dashes aside;
    an ellipsis in the quote may skip words (every part must appear, in order)."""
    body = _norm(message)
    parts = [p.strip(" \"'.,;:") for p in re.split(r"\.\.\.|…|\[…\]", _norm(quote.strip().strip("\"'")))]
    parts = [p for p in parts if p]
    if not parts:
        return False
    at = 0
    for part in parts:
        found = body.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if value.lower() in ("", "null", "none", "n/a") else value


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    return bool(value)


def parse(text: str, batch: Batch, known_rules: Sequence[str] = ()) -> Judgement:
    """Read a reply to ``batch``. Items that do not name one of its messages, carry no valid
    label or quote words not found in their message are left out; messages the reply does
    not answer are listed in ``missing``. ValueError when the reply holds no usable JSON."""
    out = Judgement()
    seen: set[str] = set()
    for item in listed(extract_json(text), ("items", "messages", "verdicts", "results"), "id"):
        if not isinstance(item, dict):
            out.invalid += 1
            continue
        ref = str(item.get("id", "")).strip()
        label = str(item.get("label", "")).strip().lower()
        if ref not in batch.keys or ref in seen or label not in LABELS:
            out.invalid += 1
            continue
        seen.add(ref)
        key = batch.keys[ref]
        if label == "none":
            out.verdicts.append(Verdict(key, "none", False, None, None))
            continue
        quote = _text(item.get("quote"))
        if quote is None or not quoted(quote, batch.sent[ref]):
            out.invented.append(key)
            continue
        durable = label == "preference" or _flag(item.get("durable"))
        restates = item.get("restates")
        restates = restates if isinstance(restates, int) and not isinstance(restates, bool) \
            and 1 <= restates <= len(known_rules) else None
        rule = _text(item.get("rule")) if durable else None
        if restates is not None:
            rule = known_rules[restates - 1]
        out.verdicts.append(Verdict(key, label, durable, rule, quote, restates))
    out.missing = [batch.keys[ref] for ref in batch.keys if ref not in seen]
    return out


def judge(provider: Provider, candidates: Sequence[Candidate], *, known_rules: Sequence[str] = (),
          earlier: Sequence[str] = (), max_input_tokens: int = 8000,
          retries: int = 1) -> Judgement:
    """Ask ``provider`` about every candidate; a reply without usable JSON, or one that leaves
    messages unanswered, is followed by a request for the messages still open (``retries``
    more times). Provider errors and budget refusals propagate: the caller keeps the session
    waiting. UnusableReply when no reply could be read at all."""
    total = Judgement()
    pending = list(candidates)
    for attempt in range(retries + 1):
        if not pending:
            break
        by_key = {c.key: c for c in pending}
        left: list[Candidate] = []
        failures: list[str] = []
        for batch in batches(pending, known_rules=known_rules, earlier=earlier,
                             max_input_tokens=max_input_tokens):
            completion = provider.complete(batch.request)
            try:
                got = parse(completion.text, batch, [*known_rules, *earlier])
            except ValueError as exc:
                failures.append(str(exc))
                left += [by_key[k] for k in batch.keys.values()]
                continue
            total.verdicts += got.verdicts
            total.invented += got.invented
            total.invalid += got.invalid
            left += [by_key[k] for k in got.missing]
        if failures and len(left) == len(pending) and attempt == retries:
            raise UnusableReply(f"{provider.name}: the judge's reply could not be read "
                                f"({failures[-1]}); try a larger model or check llm.model")
        pending = left
    total.missing = [c.key for c in pending]
    return total
