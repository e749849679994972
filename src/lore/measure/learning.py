"""The learning loop's own measures: repeated corrections per session over time, and whether
each approved rule is followed.

- **Repeated correction**: a message the learner merged into a rule that was already known
  when the message was written (its action is ``reinforced``). A learning loop that works
  makes these rarer as sessions go by.
- **Rule followed or not**: for each approved rule, the re-corrections after its approval
  (the learner's merge found the same rule again) against the sessions after its approval
  where the situation came up without one: sessions in its scope that edited a file of one
  of its types or, for a rule without file types, mentioned what it prefers or rejects.

Everything is read from the store through the facade; nothing is written.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from lore.errors import InvalidInput
from lore.ids import parse_time
from lore.store.rows import LearnedCorrection

if TYPE_CHECKING:
    from lore.api import Lore

REPEAT = "reinforced"
SPARKS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True, slots=True)
class SessionPoint:
    session_id: str
    at: str
    project: str | None
    corrections: int  # messages merged into a rule in this session
    repeated: int  # of which the rule was already known

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RuleFollow:
    """One approved rule's compliance since its approval (``rule_follow``)."""

    id: str
    title: str
    approved_at: str
    re_corrected: int  # corrections of the same rule after approval
    followed: int  # relevant sessions with no re-correction, no block and no reminded call run
    situations: int  # sessions after approval where the rule was relevant
    loaded: int = 0  # sessions whose start told the rule (SessionStart context)
    matches: dict[str, int] = field(default_factory=dict)  # blocked, reminded, allowed, ran
    held: int = 0  # relevant sessions where a blocking check stopped a call (not re-corrected)
    checks: int = 0  # its approved checks
    last_relevant: str | None = None
    archive: bool = False  # not relevant for ARCHIVE_DAYS: proposed for archiving

    @property
    def flagged(self) -> bool:
        return self.re_corrected > 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "approved_at": self.approved_at,
                "re_corrected": self.re_corrected, "followed": self.followed,
                "situations": self.situations, "flagged": self.flagged, "loaded": self.loaded,
                "matches": {k: self.matches.get(k, 0) for k in OUTCOMES}, "held": self.held,
                "checks": self.checks, "last_relevant": self.last_relevant,
                "archive": self.archive}


OUTCOMES = ("blocked", "reminded", "allowed", "ran")
ARCHIVE_DAYS = 90


def learning_curve(lore: Lore) -> list[SessionPoint]:
    """One point per session, oldest first (sessions with no correction count as zero)."""
    per: dict[str, list[LearnedCorrection]] = {}
    for c in lore.sessions.learned_corrections():
        if c["session_id"]:
            per.setdefault(c["session_id"], []).append(c)
    return [SessionPoint(s["id"], s["at"] or "", s["project"], len(per.get(s["id"], [])),
                         sum(c["action"] == REPEAT for c in per.get(s["id"], [])))
            for s in lore.sessions.spans()]


def rule_follow(lore: Lore, project: str | None = None, at: datetime | None = None
                ) -> list[RuleFollow]:
    """Each approved rule (of ``project`` and global ones; every project when None), as
    ``lore stats --rules`` and the dashboard show it: the one reading of these figures.

    A session after approval is *relevant* when it edited a file of one of the rule's types
    (or, for a rule without types, mentioned what it prefers or rejects), when one of its
    checks matched a call, or when the user corrected the rule again. *Followed*: relevant,
    not re-corrected, no call stopped by a block and no reminded call run anyway; *held*: a
    block stopped a call and the user did not correct the rule."""
    rules = lore.review.approved()
    rules = [r for r in rules if r.kind in ("preference", "project_rule", "anti_pattern")
             and (project is None or r.project in (None, project))]
    corrections = lore.sessions.learned_corrections()
    sessions = lore.sessions.spans()
    when = {s["id"]: s["at"] or "" for s in sessions}
    events = lore.checks.matches()
    loads = lore.checks.loads()
    active = lore.checks.active_per_rule()
    moment = at or datetime.now(UTC)
    out = []
    for rule in rules:
        since = lore.review.approved_at(rule)
        later = [c for c in corrections if c["lesson_id"] == rule.id and c["action"] == REPEAT
                 and (c["at"] or "") > since]
        corrected = {c["session_id"] for c in later if c["session_id"]}
        in_scope = [s for s in sessions if (s["at"] or "") > since
                    and (rule.project is None or s["project"] == rule.project)]
        if rule.file_types:
            hit = {s["id"] for s in in_scope if set(rule.file_types) & s["file_types"]}
        else:
            mentioned = set().union(*(lore.sessions.mentioning(t) for t in _terms(rule)))
            hit = {s["id"] for s in in_scope if s["id"] in mentioned}
        mine = [e for e in events if e["lesson_id"] == rule.id and (e["at"] or "") > since]
        matches = dict(Counter(e["outcome"] for e in mine))
        matched = {e["session_id"] for e in mine if e["session_id"]}
        stopped = {e["session_id"] for e in mine if e["outcome"] == "blocked"}
        # A call that ran after a reminder went against the rule; one the user allowed did not.
        ran = {e["session_id"] for e in mine if e["outcome"] == "ran"} - \
            {e["session_id"] for e in mine if e["outcome"] == "allowed"}
        relevant = hit | matched | corrected
        # Loaded: told by the context, or held by a file the session read at start (Lore's
        # block in CLAUDE.md), which the context then leaves out.
        loaded = {ld["session_id"] for ld in loads if (ld["at"] or "") > since
                  and (rule.id in _ids(ld["shown"]) or rule.id in _ids(ld.get("in_files")))}
        moments = [when.get(s, "") for s in relevant] + [e["at"] for e in mine] + \
            [c["at"] or "" for c in later]
        last = max((m for m in moments if m), default=None)
        quiet_since = _parse(last or since)
        archive = quiet_since is not None and moment - quiet_since > timedelta(days=ARCHIVE_DAYS)
        out.append(RuleFollow(rule.id, rule.title, since, len(later),
                              len(relevant - corrected - stopped - ran), len(relevant),
                              len(loaded), matches, len(stopped - corrected),
                              active.get(rule.id, 0), last, archive))
    return out


def _ids(shown: Any) -> list[str]:
    if isinstance(shown, str):
        try:
            shown = json.loads(shown)
        except ValueError:
            return []
    return [str(x) for x in shown] if isinstance(shown, list) else []


def _parse(at: str | None) -> datetime | None:
    try:
        d = parse_time(at or "")
    except ValueError:
        return None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def _terms(rule: Any) -> list[str]:
    """What a message must mention for the rule to apply: its preferred and rejected terms
    (at least three characters), else its title."""
    pref = rule.preference
    terms = [t.strip() for t in ((pref.preferred, pref.rejected) if pref else ()) if len(t.strip()) >= 3]
    return terms or [rule.title.strip().rstrip(".")]


def rates(points: Sequence[SessionPoint], buckets: int = 10) -> list[float]:
    """Repeated corrections per session in ``buckets`` consecutive groups of sessions."""
    if not points:
        return []
    n = min(buckets, len(points))
    bounds = [i * len(points) // n for i in range(n + 1)]
    return [fmean(p.repeated for p in points[a:b]) for a, b in pairwise(bounds)]


def sparkline(values: Iterable[float]) -> str:
    vals = list(values)
    if not vals:
        return ""
    top = max(vals)
    if top <= 0:
        return SPARKS[0] * len(vals)
    return "".join(SPARKS[min(len(SPARKS) - 1, int(v / top * (len(SPARKS) - 1) + 0.5))] for v in vals)


def chart(points: Sequence[SessionPoint], path: Path, title: str = "Repeated corrections per session",
          approved_at: str | None = None) -> None:
    """A PNG or SVG (by the file's suffix) of repeated and all corrections per session, with a
    running mean. Needs matplotlib (the ``charts`` extra)."""
    if path.suffix.lower() not in (".png", ".svg"):
        raise InvalidInput(f"{path}: the chart is written as .png or .svg; name the file so")
    from lore.extras import need

    need("matplotlib", "charts", "charts need matplotlib", InvalidInput).use("Agg")
    import matplotlib.pyplot as plt
    xs = list(range(1, len(points) + 1))
    repeated = [p.repeated for p in points]
    window = max(1, len(points) // 10)
    mean = [fmean(repeated[max(0, i - window + 1):i + 1]) for i in range(len(repeated))]
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=110)
    ax.bar(xs, [p.corrections for p in points], color="#d0d7de", label="corrections learned")
    ax.bar(xs, repeated, color="#cf222e", label="repeated (rule already known)")
    ax.plot(xs, mean, color="#0969da", linewidth=2, label=f"repeated, mean of {window} sessions")
    if approved_at:
        first = next((i for i, p in enumerate(points, start=1) if p.at >= approved_at), None)
        if first is not None:
            ax.axvline(first - 0.5, color="#1a7f37", linestyle="--", label="rules approved")
    ax.set_xlabel("session (oldest first)")
    ax.set_ylabel("per session")
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    plt.close(fig)


def replay(lore: Lore, paths: Sequence[Path]) -> dict[str, int]:
    """Feed transcripts through the learner as the hooks would have, session by session in
    time order: each typed user message with the agent's turn before it goes to the detector
    and the merge; the conversations are imported (keywords only) for the sessions' files and
    text. Returns counts."""
    from lore.capture.readers import reader_for
    from lore.capture.transcripts import FileEdit, Turn

    sessions: list[tuple[str, Path, list[Turn], list[FileEdit]]] = []
    for path in paths:
        reader = reader_for(path)
        if reader is None:
            continue
        turns: list[Turn] = []
        edits: list[FileEdit] = []
        for item in reader.read(path):
            (turns if isinstance(item, Turn) else edits).append(item)  # type: ignore[arg-type]
        start = next((t.timestamp for t in turns if t.timestamp), "") or ""
        sessions.append((start, path, turns, edits))
    sessions.sort(key=lambda x: (x[0], str(x[1])))
    lore.conversations.ingest([p for _, p, _, _ in sessions], embed=False)
    captured = 0
    for _, _, turns, _ in sessions:
        previous = None
        for t in turns:
            if t.role == "assistant" and t.text.strip() and not t.is_sidechain:
                previous = t.text
            elif (t.role == "user" and not t.is_meta and not t.injected and not t.is_sidechain
                  and t.text.strip() and not t.text.startswith("[tool_result")):
                if lore.learning.capture(t.text, previous, project=t.cwd, session_id=t.session_id,
                                        message_uuid=t.uuid, at=t.timestamp, origin="replay",
                                        event_id=f"replay:{t.uuid}") is not None:
                    captured += 1
                lore.learning.process_pending()
    return {"sessions": len(sessions), "messages": captured}


def summary(points: Sequence[SessionPoint],
            corrections: Sequence[LearnedCorrection] | None = None) -> dict[str, Any]:
    """Totals and the repeated corrections per session in each half. ``corrections``: every
    learned correction (those captured outside a session count too, as on the dashboard)."""
    half = len(points) // 2
    first, second = points[:half], points[half:]

    def per(xs: Sequence[SessionPoint]) -> float:
        return round(sum(p.repeated for p in xs) / len(xs), 3) if xs else 0.0

    total = (len(corrections) if corrections is not None
             else sum(p.corrections for p in points))
    repeated = (sum(c["action"] == REPEAT for c in corrections) if corrections is not None
                else sum(p.repeated for p in points))
    return {"sessions": len(points), "corrections": total, "repeated": repeated,
            "repeated_per_session_first_half": per(first),
            "repeated_per_session_second_half": per(second)}
