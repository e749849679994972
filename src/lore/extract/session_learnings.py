"""The passes over a finished session (at SessionEnd): decisions made, problems solved
and how, recurring patterns, anti-patterns discovered. The pattern-based pass below needs no
model; the language model's pass (:func:`llm_session_learnings`, at the end) reads the same
messages when a provider is configured.

No model: fixed phrases over the session's messages, tuned for precision over recall. A
candidate needs its context, not just a keyword: a problem counts as solved only when an
error came before the diagnosis and a passing run after it; an anti-pattern only when the
assistant names what it should not have done right after the user pushed back; a decision
only when it is stated, not asked or guessed. Every learning carries its evidence: the
quotes (redacted) and the message ids they come from.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lore.capture.transcripts import Turn
from lore.llm.base import CHARS_PER_TOKEN, Provider, Request
from lore.llm.jsonreply import complete_json
from lore.llm.opinion import prompt
from lore.models import Evidence
from lore.redact import redact

Category = Literal["decision", "problem_solved", "pattern", "anti_pattern"]
Role = Literal["user", "assistant", "tool", "prompt"]
KINDS: dict[str, str] = {"decision": "decision", "problem_solved": "learning", "pattern": "pattern",
                         "anti_pattern": "anti_pattern"}

QUOTE_CHARS = 280
TYPED_MAX_CHARS = 1200  # longer user messages are pastes (logs, docs, specs), not things said
SENTENCE_MIN, SENTENCE_MAX = 20, 320
ERROR_WINDOW = 16  # messages between the error and the diagnosis
SUCCESS_WINDOW = 12  # messages between the diagnosis and the passing run
RECURRING_MIN = 3


@dataclass(frozen=True, slots=True)
class SessionMessage:
    """A message as the pass needs it. ``role`` is user (typed by a person), assistant, tool (a
    tool's result) or prompt (a task an agent gave a sub-agent: never read as the user's word)."""

    role: Role
    text: str
    message_id: str


@dataclass(frozen=True, slots=True)
class SessionLearning:
    category: Category
    statement: str  # one line, redacted
    evidence: tuple[Evidence, ...]
    confidence: float
    rule: str  # which rule proposed it, for explaining and for measuring each rule
    related: tuple[str, ...] = ()  # patterns or rules it relates to, as the model named them

    @property
    def kind(self) -> str:
        """The lesson kind it would be stored as."""
        return KINDS[self.category]


def messages_from_turns(turns: Iterable[object]) -> list[SessionMessage]:
    """The messages of transcript turns (other values, such as file edits, are passed over).

    Metadata, injected context, compact summaries (a recap of what is already there) and empty
    turns are left out; tool results become ``tool``, a sub-agent's task ``prompt``.
    """
    out: list[SessionMessage] = []
    for turn in turns:
        if not isinstance(turn, Turn) or turn.role not in ("user", "assistant"):
            continue
        if turn.is_meta or turn.injected or turn.is_compact_summary or not turn.text.strip():
            continue
        role: Role = turn.role  # type: ignore[assignment]
        if turn.role == "user":
            if turn.text.startswith("[tool_result"):
                role = "tool"
            elif turn.is_sidechain or turn.agent_id:
                role = "prompt"
        out.append(SessionMessage(role, turn.text, turn.uuid))
    return out


# ---- sentences ------------------------------------------------------------------------------------
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•>]+|\d+[.)])\s*")


def sentences(text: str) -> list[str]:
    """Prose sentences: code blocks, numbered source lines and tables dropped, markup trimmed."""
    prose = _FENCE.sub("\n", text)
    out = []
    for raw in _SPLIT.split(prose):
        line = _BULLET.sub("", raw).replace("**", "").strip()
        if not line or "→" in line[:12] or line.startswith(("|", "#", "[tool_result", "    ")):
            continue
        out.append(line)
    return out


def _clip(text: str, limit: int = QUOTE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _quote(text: str, message: SessionMessage, session_id: str | None, source: str) -> Evidence:
    return Evidence(quote=redact(_clip(text)), session_id=session_id, message_id=message.message_id,
                    source=source)


def _fits(sentence: str) -> bool:
    return SENTENCE_MIN <= len(sentence) <= SENTENCE_MAX and not sentence.rstrip(" *`").endswith("?")


_HEDGE = re.compile(r"\b(might|may|could|perhaps|maybe|probably|likely|possibly|seems?|if|whether|"
                    r"not sure|I think|wonder)\b", re.IGNORECASE)


# ---- decisions ----------------------------------------------------------------------------------
_USER_DECISION = re.compile(
    r"\b(?:let'?s|let us|we(?:'ll| will| should)) (?:use|go with|stick with|switch to|keep|adopt|do)\b"
    r"|\b(?:I|we)(?:'ve| have)? (?:decided|chosen|opted) (?:to|for|on)\b|\bgo(?:ing)? with\b",
    re.IGNORECASE)
_ASSISTANT_DECISION = re.compile(
    r"\b(?:I|we)(?:'ve| have)? (?:decided|chosen|chose|opted|settled) (?:to|for|on)\b"
    r"|^(?:I'll|I will|we'll|we will|let's) go with\b|^going with\b", re.IGNORECASE)


def _decisions(messages: Sequence[SessionMessage], session_id: str | None) -> list[SessionLearning]:
    out: list[SessionLearning] = []
    for m in messages:
        if m.role == "user" and len(m.text) <= TYPED_MAX_CHARS:
            pattern, rule, confidence = _USER_DECISION, "decision:user", 0.7
        elif m.role == "assistant":
            pattern, rule, confidence = _ASSISTANT_DECISION, "decision:assistant", 0.6
        else:
            continue
        for s in sentences(m.text):
            if _fits(s) and pattern.search(s) and not _HEDGE.search(s):
                evidence = (_quote(s, m, session_id, "decision"),)
                out.append(SessionLearning("decision", redact(_clip(s)), evidence, confidence, rule))
                break
    return out


# ---- problems solved ----------------------------------------------------------------------------
# Only what ran a command can fail or pass in the sense meant here: an edit tool's "string not
# found" or a refused tool call is the agent's own plumbing, not a problem of the project.
COMMAND_TOOLS = frozenset({"Bash", "BashOutput", "shell", "exec_command", "local_shell", "?"})
_RESULT = re.compile(r"^\[tool_result (?P<name>[^\]\s]+)(?P<error> error)?\]\s*")
_ERROR_LINE = re.compile(
    r"^\s*(?:\*\* \()?[\w.]*(?:Error|Exception|Failure)\b\)?[:(]?.*\w.*$"
    r"|^\s*(?:error|fatal)(?:\[\w+\])?:.*$|^FAILED .*$|^E\s{2,}\S.*$|^.*\bpanic: .*$"
    r"|^.*\b[1-9]\d* (?:failed|errors?)\b.*$|^.*: command not found$|^.*No such file or directory.*$",
    re.MULTILINE)
_ERROR_HINT = re.compile(r"Traceback \(most recent call last\)|\bFAILED\b|\berror\b|\bfailed\b",
                         re.IGNORECASE)
_SUCCESS = re.compile(
    r"^.*(?:\b\d+ passed\b|\ball (?:\d+ )?tests? pass(?:ed)?\b|\b\d+ tests?, 0 failures\b|"
    r"\bOK \(\d+ tests?\)|\bno issues found\b|\ball checks passed\b|\bbuild succeeded\b|"
    r"\bcompiled successfully\b|\btests? passed\b|\bvalidation passed\b|\b0 errors?\b).*$",
    re.IGNORECASE | re.MULTILINE)
_DIAGNOSIS = re.compile(
    r"\bthe (?:root cause|(?:real |actual |underlying )?(?:issue|problem|bug|error)) (?:is|was)"
    r"(?: that| clear| now clear|:| —| -| in| with)|\broot cause (?:is|was)\b|\b(?:is|was) caused by\b"
    r"|\bthat's (?:the|our) (?:issue|problem|bug)\b"
    r"|\bthe fix (?:is|was) to\b|\bfails because\b", re.IGNORECASE)
_FAILURE_WORD = re.compile(r"fail|error|exception|denied|not found|cannot|can't", re.IGNORECASE)
_COUNTS = re.compile(r"^\d+ errors?, \d+ warnings?")  # a checker's tally says nothing by itself
_SUCCESS_MARK = re.compile(r"^.*(?:\bPASSED\b|✅|✓).*$", re.MULTILINE)  # pytest -v, check marks
_SPECULATION = re.compile(r"\b(might|may|could|perhaps|maybe|probably|likely|possibly|not sure)\b",
                          re.IGNORECASE)
_USER_WORKS = re.compile(r"^(?:(?:great|perfect|nice|ok|okay|thanks)[,!. ]+)?(?:it|that|this) "
                         r"(?:works|worked|fixed it)\b", re.IGNORECASE)


def _command_output(message: SessionMessage) -> tuple[str, bool] | None:
    """(output, flagged as an error) of a command's result; None for other tools and messages."""
    if message.role != "tool":
        return None
    head = message.text[:6000]
    match = _RESULT.match(head)
    if match is None:
        return head, False
    if match.group("name") not in COMMAND_TOOLS:
        return None
    return head[match.end():], match.group("error") is not None


def error_line(message: SessionMessage) -> str | None:
    """The line that says how a command failed, or None when it did not fail."""
    found = _error(message)
    return found[0] if found else None


def _error(message: SessionMessage) -> tuple[str, bool] | None:
    """(the line, whether it reads as an error message rather than just the output's last line)."""
    found = _command_output(message)
    if found is None:
        return None
    output, flagged = found
    if not (flagged or _ERROR_HINT.search(output)):
        return None
    lines = [line.strip() for line in _ERROR_LINE.findall(output) if not _COUNTS.match(line.strip())]
    if lines:
        return (lines[-1] if "Traceback" in output else lines[0]), True
    if flagged:
        # Transcripts keep a result cut short, so the telling line may be gone: take the last
        # line that speaks of a failure, else say only that the command failed.
        rest = [line.strip() for line in output.splitlines()
                if _FAILURE_WORD.search(line) and "PASSED" not in line and not line.rstrip().endswith("…")]
        return (rest[-1] if rest else "the command failed"), False
    return None


def _passed(message: SessionMessage) -> str | None:
    if message.role == "user" and len(message.text) <= 300:
        return message.text.strip() if _USER_WORKS.search(message.text.strip()) else None
    found = _command_output(message)
    if found is None or found[1] or error_line(message) is not None:
        return None
    match = _SUCCESS.search(found[0]) or _SUCCESS_MARK.search(found[0])
    return match.group(0).strip() if match else None


def _problems(messages: Sequence[SessionMessage], session_id: str | None) -> list[SessionLearning]:
    out: list[SessionLearning] = []
    error: tuple[int, str] | None = None  # (index, line) of the last failure
    diagnosis: tuple[int, str] | None = None  # the last explanation given after it
    for i, m in enumerate(messages):
        line = error_line(m)
        if line is not None:
            error = (i, line)
            continue
        if m.role == "assistant" and error and i - error[0] <= ERROR_WINDOW:
            said = sentences(m.text)
            for n, s in enumerate(said):
                if not _DIAGNOSIS.search(s) or _SPECULATION.search(s) or s.lower().startswith("let me"):
                    continue
                # "That's the issue." names nothing by itself: the next sentence says what.
                more = said[n + 1] if len(s) < 60 and n + 1 < len(said) else ""
                if _fits(f"{s} {more}".strip()):
                    diagnosis = (i, f"{s} {more}".strip())
            continue
        passed = _passed(m)
        if passed and error and diagnosis and diagnosis[0] > error[0] and i - diagnosis[0] <= SUCCESS_WINDOW:
            d = messages[diagnosis[0]]
            out.append(SessionLearning(
                "problem_solved", redact(_clip(diagnosis[1])),
                (_quote(error[1], messages[error[0]], session_id, "error"),
                 _quote(diagnosis[1], d, session_id, "diagnosis"),
                 _quote(passed, m, session_id, "passed")), 0.7, "problem:error-diagnosis-pass"))
            error = diagnosis = None
    return out


# ---- anti-patterns ------------------------------------------------------------------------------
_AGREE = re.compile(r"^(?:oh no[!,.]?\s*)?you'?re (?:absolutely |completely |totally )?right\b",
                    re.IGNORECASE)
_LESSON = re.compile(r"\binstead of\b|\brather than\b|\b(?:don't|do not|doesn't) need\b|\bno need to\b|"
                     r"\bshould(?:n't| not| have)\b|\bunnecessar(?:y|ily)\b", re.IGNORECASE)
_FAILED_APPROACH = re.compile(r"\b(?:didn't|did not|doesn't|does not|won't|will not) work\b.*\bbecause\b",
                              re.IGNORECASE)


def _anti_patterns(messages: Sequence[SessionMessage], session_id: str | None) -> list[SessionLearning]:
    out: list[SessionLearning] = []
    for i, m in enumerate(messages):
        if m.role != "assistant":
            continue
        said = sentences(m.text)
        before = _previous_typed(messages, i)
        if said and _AGREE.search(said[0]) and before is not None:
            lesson = next((s for s in said[:4] if _fits(s) and _LESSON.search(s) and not _HEDGE.search(s)),
                          None)
            if lesson:
                out.append(SessionLearning(
                    "anti_pattern", redact(_clip(_AGREE.sub("", lesson).lstrip("!,. ") or lesson)),
                    (_quote(before.text, before, session_id, "correction"),
                     _quote(lesson, m, session_id, "acknowledged")), 0.7, "anti:acknowledged-correction"))
                continue
        failed = next((s for s in said if _fits(s) and _FAILED_APPROACH.search(s)), None)
        if failed:
            out.append(SessionLearning("anti_pattern", redact(_clip(failed)),
                                       (_quote(failed, m, session_id, "failed approach"),), 0.6,
                                       "anti:failed-because"))
    return out


def _previous_typed(messages: Sequence[SessionMessage], i: int) -> SessionMessage | None:
    """The user message this assistant turn answers, when nothing but tool traffic lies between."""
    for j in range(i - 1, max(-1, i - 4), -1):
        if messages[j].role == "user":
            return messages[j] if len(messages[j].text) <= TYPED_MAX_CHARS else None
        if messages[j].role == "assistant" and messages[j].text.strip():
            return None
    return None


# ---- recurring patterns -------------------------------------------------------------------------
_RULE = re.compile(r"^(?:please\s+)?(?:always|never|from now on|every time|whenever)\b|"
                   r"\b(?:from now on|every time you|whenever you)\b", re.IGNORECASE)
_VOLATILE = re.compile(r"0x[0-9a-f]+|\b\d+\b|(?:/[\w.@-]+)+|'[^']*'|\"[^\"]*\"", re.IGNORECASE)


def _patterns(messages: Sequence[SessionMessage], session_id: str | None) -> list[SessionLearning]:
    out: list[SessionLearning] = []
    for m in messages:
        if m.role != "user" or len(m.text) > TYPED_MAX_CHARS:
            continue
        rule = next((s for s in sentences(m.text) if _fits(s) and _RULE.search(s)), None)
        if rule:
            out.append(SessionLearning("pattern", redact(_clip(rule)), (_quote(rule, m, session_id, "rule"),),
                                       0.6, "pattern:user-rule"))
    # The same failure again and again: a pattern worth knowing before it happens once more.
    seen: dict[str, list[tuple[SessionMessage, str]]] = defaultdict(list)
    for m in messages:
        found = _error(m)
        if found and found[1] and len(_VOLATILE.sub("", found[0]).strip()) >= 20:
            seen[_VOLATILE.sub("…", found[0].lower())].append((m, found[0]))
    for hits in seen.values():
        if len(hits) >= RECURRING_MIN:
            first, line = hits[0]
            out.append(SessionLearning(
                "pattern", redact(_clip(f"Recurring failure ({len(hits)} times): {line}")),
                tuple(_quote(text, msg, session_id, "error") for msg, text in hits[:3]), 0.5,
                "pattern:recurring-error"))
    return out


def session_learnings(messages: Sequence[SessionMessage], *, session_id: str | None = None
                      ) -> list[SessionLearning]:
    """Every learning the fixed patterns find in one session's messages, in category order."""
    found = (_decisions(messages, session_id) + _problems(messages, session_id)
             + _patterns(messages, session_id) + _anti_patterns(messages, session_id))
    unique: dict[tuple[str, str], SessionLearning] = {}
    for learning in found:
        unique.setdefault((learning.category, learning.statement.lower()), learning)
    return list(unique.values())


# ---- the language model's pass ------------------------------------------------------------------
LLM_MAX_INPUT_TOKENS = 6000
LLM_REPLY_TOKENS = 2500
LLM_MAX_LEARNINGS = 12
# Per message sent, tighter and tighter until the session fits: tool output gives way first.
ROLE_CAPS = ({"user": 1500, "assistant": 1200, "tool": 400, "prompt": 300},
             {"user": 1200, "assistant": 600, "tool": 160, "prompt": 160},
             {"user": 800, "assistant": 300, "tool": 80, "prompt": 80},
             {"user": 500, "assistant": 160, "tool": 40, "prompt": 40})
ROLE_LABELS = {"user": "user", "assistant": "assistant", "tool": "tool", "prompt": "task"}
QUOTE_MIN_CHARS = 12  # shorter "quotes" ("yes", "fixed") prove nothing


class _QuoteReply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    message: str = ""
    quote: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value: Any) -> Any:
        return {"quote": value} if isinstance(value, str) else value

    @field_validator("message", mode="before")
    @classmethod
    def _ref(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else (value or "")


class _LearningReply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    category: Literal["decision", "problem_solved", "pattern", "anti_pattern"]
    statement: str = Field(min_length=8)
    evidence: list[_QuoteReply] = Field(default_factory=list)
    related_patterns: list[str] = Field(default_factory=list)
    confidence: float = 0.6

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: Any) -> Any:
        value = value.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(value, str) else value
        return {"problem": "problem_solved", "problems_solved": "problem_solved", "decisions": "decision",
                "recurring_pattern": "pattern", "patterns": "pattern", "antipattern": "anti_pattern",
                "anti_patterns": "anti_pattern"}.get(value, value)

    @field_validator("evidence", "related_patterns", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, (str, dict)) else value

    @field_validator("confidence", mode="before")
    @classmethod
    def _scale(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 1 < value <= 5:
            return value / 5  # a 1-5 answer where 0-1 was asked
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.6


class SessionLearningsReply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    learnings: list[_LearningReply]

    @model_validator(mode="before")
    @classmethod
    def _bare_array(cls, value: Any) -> Any:
        return {"learnings": value} if isinstance(value, list) else value


@dataclass(frozen=True, slots=True)
class LLMPass:
    """What the model's pass kept, and what it threw away and why (for the report)."""

    learnings: tuple[SessionLearning, ...]
    proposed: int  # learnings in the reply
    dropped_unquoted: int  # learnings none of whose quotes is in the transcript
    quotes_dropped: int  # quotes not found, over all learnings
    messages_sent: int
    messages_left_out: int


def transcript_for_model(messages: Sequence[SessionMessage], max_chars: int
                         ) -> tuple[str, dict[str, SessionMessage], int]:
    """The messages as the model reads them, ``[m12 user] text``, redacted. A long session is
    fitted to ``max_chars`` by cutting each message to its role's size, tighter and tighter
    (tool output first, the user's words last), and only then, when even the tightest sizes do
    not fit, by leaving out the middle of the session (marked). Returns the text, the references
    sent and how many messages were left out."""
    texts = [redact(" ".join(m.text.split()) if m.role == "tool" else m.text.strip()) for m in messages]
    lines: list[str] = []
    for caps in ROLE_CAPS:
        lines = [f"[m{n} {ROLE_LABELS[m.role]}] {_cut(text, caps[m.role])}"
                 for n, (m, text) in enumerate(zip(messages, texts, strict=True), start=1)]
        if sum(len(line) + 1 for line in lines) <= max_chars:
            break
    keep = list(range(len(lines)))
    if sum(len(line) + 1 for line in lines) > max_chars:  # the beginning (a third) and the end
        head, size = [], 0
        for i, line in enumerate(lines):
            if size + len(line) + 1 > max_chars // 3:
                break
            head.append(i)
            size += len(line) + 1
        tail: list[int] = []
        for i in range(len(lines) - 1, head[-1] if head else -1, -1):
            if size + len(lines[i]) + 1 > max_chars - 60:
                break
            tail.append(i)
            size += len(lines[i]) + 1
        keep = head + tail[::-1]
    out, sent = [], {}
    for j, i in enumerate(keep):
        if j and i != keep[j - 1] + 1:
            out.append(f"[… {i - keep[j - 1] - 1} messages not shown …]")
        out.append(lines[i])
        sent[f"m{i + 1}"] = messages[i]
    return "\n".join(out), sent, len(lines) - len(keep)


def _cut(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[:cap * 2 // 3] + " […] " + text[len(text) - cap // 3:]


def _squash(text: str) -> str:
    """Text as quotes are compared: whitespace collapsed, typographic quotes and dashes plain,
    Markdown's backticks and asterisks gone (a model often drops them when it quotes)."""
    table = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-",
                           "\u2014": "-", "`": "", "*": ""})
    return " ".join(text.translate(table).split()).strip(" .\"'").lower()


def _found(quote: str, text: str) -> bool:
    """Is ``quote`` in ``text``, verbatim but for whitespace and typography? A quote elided with
    an ellipsis must have every part in the text, in order."""
    hay = _squash(text)
    at = 0
    parts = [p for p in (_squash(x) for x in re.split(r"\.\.\.|…|\[…\]", quote)) if p]
    if not parts or sum(len(p) for p in parts) < QUOTE_MIN_CHARS:
        return False
    for part in parts:
        at = hay.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def llm_session_learnings(provider: Provider, messages: Sequence[SessionMessage], *,
                          session_id: str | None = None, max_input_tokens: int = LLM_MAX_INPUT_TOKENS
                          ) -> LLMPass:
    """Ask the model for the session's decisions, patterns, problems solved and anti-patterns,
    each with its quotes; keep only the quotes that are in the transcript (the message named,
    else any message: the model may misnumber), and only learnings left with one."""
    room = max(2000, max_input_tokens * CHARS_PER_TOKEN - len(prompt("session_learnings")))
    text, sent, left_out = transcript_for_model(messages, room)
    if not sent:
        return LLMPass((), 0, 0, 0, 0, 0)
    request = Request.ask(f"<transcript>\n{text}\n</transcript>", system=prompt("session_learnings"),
                          max_tokens=LLM_REPLY_TOKENS, temperature=0.0, purpose="session_learnings")
    reply: SessionLearningsReply = complete_json(provider, request, SessionLearningsReply)
    redacted = {ref: redact(m.text) for ref, m in sent.items()}
    kept: list[SessionLearning] = []
    unquoted = quotes_dropped = 0
    for item in reply.learnings[:LLM_MAX_LEARNINGS]:
        evidence: list[Evidence] = []
        for q in item.evidence[:3]:
            ref = q.message.strip().strip("[]").split()[0].lower() if q.message.strip() else ""
            ref = ref if ref.startswith("m") else f"m{ref}"
            where = ref if ref in redacted and _found(q.quote, redacted[ref]) else next(
                (r for r, t in redacted.items() if _found(q.quote, t)), None)
            if where is None:
                quotes_dropped += 1
                continue
            evidence.append(Evidence(quote=redact(_clip(q.quote)), session_id=session_id,
                                     message_id=sent[where].message_id, source=f"llm:{item.category}"))
        if not evidence:
            unquoted += 1
            continue
        kept.append(SessionLearning(
            item.category, redact(_clip(" ".join(item.statement.split()), SENTENCE_MAX)), tuple(evidence),
            round(min(max(item.confidence, 0.2), 0.9), 2), f"llm:{item.category}",
            tuple(dict.fromkeys(r.strip() for r in item.related_patterns if r.strip()))[:5]))
    unique: dict[tuple[str, str], SessionLearning] = {}
    for learning in kept:
        unique.setdefault((learning.category, learning.statement.lower()), learning)
    return LLMPass(tuple(unique.values()), len(reply.learnings), unquoted, quotes_dropped, len(sent),
                   left_out)
