"""Trend reports: what a week or a month taught, from stored data only. Rules learned,
approved, rejected (with the reasons given), corrections repeated and rules re-corrected after
approval, the busiest projects, what session starts loaded, each beside the previous period.

``build`` gathers the figures, ``markdown`` writes them as a file (`lore stats --digest`, the
scheduled run's digests/ folder); the dashboard draws the same figures with its charts."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lore.errors import InvalidInput
from lore.measure.learning import REPEAT
from lore.private import open_private, private_dir
from lore.store.rows import LearnedCorrection, LessonActivity, LessonsAdded

if TYPE_CHECKING:
    from lore.api import Lore

Kind = Literal["week", "month"]
KINDS: tuple[Kind, ...] = ("week", "month")
DECIDED = ("approve", "edit", "status")
TREND_WEEKS = 12
# The years a digest may be asked for: its trend reaches back TREND_WEEKS weeks and its page
# links the next period, all inside the calendar Python can count (years 1 to 9999).
FIRST_YEAR, LAST_YEAR = 1970, 9998


@dataclass(frozen=True, slots=True)
class Period:
    """A calendar week (ISO, Monday first) or month, in UTC: [start, end)."""

    kind: Kind
    start: date
    end: date
    since: str = ""  # the bounds as ISO text, compared with stored timestamps
    until: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "since", f"{self.start.isoformat()}T00:00:00")
        object.__setattr__(self, "until", f"{self.end.isoformat()}T00:00:00")

    @property
    def label(self) -> str:
        if self.kind == "month":
            return f"{self.start:%Y-%m}"
        year, week, _ = self.start.isocalendar()
        return f"{year}-W{week:02d}"

    def holds(self, at: str | None) -> bool:
        return at is not None and self.since <= at < self.until

    def previous(self) -> Period:
        return period_of(self.kind, self.start - timedelta(days=1))

    def describe(self) -> str:
        last = self.end - timedelta(days=1)
        if self.kind == "month":
            return f"{self.start:%B %Y}"
        return f"week {self.label} ({self.start:%d %b} – {last:%d %b %Y})"


def period_of(kind: str, day: date) -> Period:
    """The week or month that holds ``day``."""
    if kind == "week":
        start = day - timedelta(days=day.weekday())
        return Period("week", start, start + timedelta(days=7))
    if kind == "month":
        start = day.replace(day=1)
        end = (start + timedelta(days=32)).replace(day=1)
        return Period("month", start, end)
    raise InvalidInput(f"unknown digest period '{kind}'; use week or month")


def parse_period(kind: str, label: str | None = None, today: date | None = None) -> Period:
    """``label`` as a week (2026-W47) or month (2026-11); none: the one holding today."""
    if kind not in KINDS:
        raise InvalidInput(f"unknown digest period '{kind}'; use week or month")
    if not label:
        return period_of(kind, today or datetime.now(UTC).date())
    label = label.strip()
    example = "2026-W47" if kind == "week" else "2026-11"
    pattern = r"(\d{4})-W(\d{1,2})" if kind == "week" else r"(\d{4})-(\d{1,2})"
    m = re.fullmatch(pattern, label, re.IGNORECASE)
    if m is not None and not FIRST_YEAR <= int(m[1]) <= LAST_YEAR:
        raise InvalidInput(f"'{label}': digests cover the years {FIRST_YEAR} to {LAST_YEAR}; "
                           f"write a {kind} like {example}")
    try:
        if m is None:
            raise ValueError(label)
        if kind == "week":
            return period_of("week", date.fromisocalendar(int(m[1]), int(m[2]), 1))
        return period_of("month", date(int(m[1]), int(m[2]), 1))
    except ValueError:
        raise InvalidInput(f"'{label}' is not a {kind}; write it like {example}") from None


def _figures(period: Period, activity: list[LessonActivity], added: list[LessonsAdded],
             corrections: list[LearnedCorrection], approved_at: dict[str, str]) -> dict[str, Any]:
    learned = [a for a in activity if period.holds(a["created_at"])]
    reviewed = [a for a in activity if a["review"] and period.holds(a["review"].get("at"))]
    approved = [a for a in reviewed if a["review"].get("action") in DECIDED]
    rejected = [a for a in reviewed if a["review"].get("action") == "reject"]
    deferred = [a for a in reviewed if a["review"].get("action") == "defer"]
    inside = [c for c in corrections if period.holds(c["at"])]
    repeated = [c for c in inside if c["action"] == REPEAT]
    sessions = {c["session_id"] for c in inside if c["session_id"]}
    by_rule = Counter(c["lesson_id"] for c in repeated)
    re_corrected = Counter(c["lesson_id"] for c in repeated
                           if c["lesson_id"] in approved_at and (c["at"] or "") > approved_at[c["lesson_id"]])
    days = [a for a in added if period.since[:10] <= a["day"] < period.until[:10]]
    projects = Counter(c["project"] or "(global)" for c in inside)
    for a in days:
        projects[a["project"] or "(global)"] += a["count"]
    return {
        "lessons_added": sum(a["count"] for a in days),
        "learned": [_item(a) for a in learned],
        "approved": [_item(a) for a in approved],
        "rejected": [{**_item(a), "reason": a["rejected_reason"] or a["review"].get("reason")}
                     for a in rejected],
        "deferred": len(deferred),
        "corrections": len(inside),
        "repeated": len(repeated),
        "sessions_with_corrections": len(sessions),
        "repeated_per_session": round(len(repeated) / len(sessions), 2) if sessions else 0.0,
        "repeated_rules": [{"id": lid, "count": n} for lid, n in by_rule.most_common(10)],
        "re_corrected": [{"id": lid, "count": n} for lid, n in re_corrected.most_common(10)],
        "top_projects": [{"project": p, "count": n} for p, n in projects.most_common(5)],
    }


def _item(a: LessonActivity) -> dict[str, Any]:
    return {"id": a["id"], "title": a["title"], "kind": a["kind"], "status": a["status"],
            "project": a["project"]}


COMPARED = ("lessons_added", "learned", "approved", "rejected", "corrections", "repeated",
            "repeated_per_session")


def _count(value: Any) -> float:
    return len(value) if isinstance(value, list) else float(value)


def build(lore: Lore, kind: str = "week", label: str | None = None,
          today: date | None = None) -> dict[str, Any]:
    """The digest of one period with the previous one's numbers beside it, and the weekly
    series the charts draw (the last 12 weeks up to the period's end)."""
    period = parse_period(kind, label, today)
    before = period.previous()
    trend_start = period_of("week", period.end - timedelta(days=1)).start \
        - timedelta(weeks=TREND_WEEKS - 1)
    since = min(before.start, trend_start)
    activity = lore.sessions.lesson_activity(f"{since.isoformat()}T00:00:00")
    added = lore.sessions.lessons_added(f"{since.isoformat()}T00:00:00")
    corrections = [c for c in lore.sessions.learned_corrections() if (c["at"] or "") >= since.isoformat()]
    approved_at = _approval_times(lore, corrections)
    now = _figures(period, activity, added, corrections, approved_at)
    prev = _figures(before, activity, added, corrections, approved_at)
    titles = lore.lessons.titles([r["id"] for r in now["repeated_rules"] + now["re_corrected"]])
    for r in now["repeated_rules"] + now["re_corrected"]:
        r["title"] = titles.get(r["id"], ("(deleted)", ""))[0]
    weeks = [period_of("week", trend_start + timedelta(weeks=i)).label for i in range(TREND_WEEKS)]
    counts: dict[str, Counter[str]] = {w: Counter() for w in weeks}
    for week, key, n in [*((_week_of(a["created_at"]), "learned", 1) for a in activity),
                         *((_week_of(d["day"]), "lessons_added", d["count"]) for d in added),
                         *((_week_of(c["at"]), "corrections", 1) for c in corrections),
                         *((_week_of(c["at"]), "repeated", c["action"] == REPEAT)
                           for c in corrections)]:
        if week in counts:
            counts[week][key] += n
    series = [{"week": w, **{k: counts[w][k] for k in ("learned", "lessons_added", "corrections",
                                                      "repeated")}} for w in weeks]
    loads = [ld for ld in lore.sessions.context_loads(None, 200) if period.holds(ld["at"])][:30]
    return {
        "kind": period.kind, "period": period.label, "title": period.describe(),
        "start": period.start.isoformat(), "end": period.end.isoformat(),
        "previous": {"period": before.label, **{k: _count(prev[k]) for k in COMPARED}},
        **now,
        "weekly": series,
        "context_loads": [{"session_id": ld["session_id"], "at": ld["at"], "project": ld["project"],
                           "shown": len(ld["shown"]), "dropped": len(ld["dropped"]),
                           "chars": ld["chars"]} for ld in reversed(loads)],
    }


def _week_of(at: str | None) -> str | None:
    return _week_of_day(str(at)[:10])


@lru_cache(maxsize=1024)
def _week_of_day(day: str) -> str | None:
    try:
        return period_of("week", date.fromisoformat(day)).label
    except ValueError:
        return None


def _approval_times(lore: Lore, corrections: list[LearnedCorrection]) -> dict[str, str]:
    """When each rule that was corrected again had been approved (approved rules only), as
    ``lore stats --rules`` reads it (``lore.review.queue.approved``, ``lore.review.approved_at``)."""
    from lore.review.queue import approved

    out: dict[str, str] = {}
    for lid in {c["lesson_id"] for c in corrections if c["action"] == REPEAT}:
        try:
            lesson = lore.lessons.get(lid)
        except Exception:  # noqa: BLE001 - deleted since
            continue
        if approved(lesson):
            out[lid] = lore.review.approved_at(lesson)
    return out


def markdown(d: dict[str, Any]) -> str:
    """The digest as a Markdown file."""
    prev = d["previous"]
    lines = [f"# Lore digest: {d['title']}", "",
             f"From {d['start']} to {d['end']} (exclusive), compared with {prev['period']}.", "",
             "## In numbers", "",
             "| | this period | previous | change |", "|---|---|---|---|"]
    for key, name in (("lessons_added", "lessons added"), ("learned", "rules learned from corrections"),
                      ("approved", "rules approved"), ("rejected", "rules rejected"),
                      ("corrections", "corrections captured"), ("repeated", "repeated corrections"),
                      ("repeated_per_session", "repeated corrections per session")):
        now, before = _count(d[key]), float(prev[key])
        lines.append(f"| {name} | {now:g} | {before:g} | {now - before:+g} |")
    lines += ["", f"Rules deferred: {d['deferred']}. Sessions with corrections: "
              f"{d['sessions_with_corrections']}.", ""]
    sections = (("Learned", d["learned"], lambda r: f"{r['title']} ({r['status']}"
                 + (f", {r['project']}" if r["project"] else ", global") + ")"),
                ("Approved", d["approved"], lambda r: r["title"]),
                ("Rejected", d["rejected"], lambda r: r["title"]
                 + (f": “{r['reason']}”" if r["reason"] else " (no reason given)")),
                ("Re-corrected after approval", d["re_corrected"],
                 lambda r: f"{r['title']}: {r['count']} time{'s' if r['count'] != 1 else ''}"),
                ("Corrections the user had to repeat", d["repeated_rules"],
                 lambda r: f"{r['title']}: {r['count']} time{'s' if r['count'] != 1 else ''}"),
                ("Top projects", d["top_projects"], lambda r: f"{r['project']}: {r['count']}"))
    for heading, items, show in sections:
        lines += [f"## {heading}", ""]
        lines += [f"- {show(r)}" + (f" `{r['id']}`" if "id" in r else "") for r in items] or ["None."]
        lines.append("")
    lines += ["## Lessons learned and repeated corrections per week", "",
              "| week | rules learned | lessons added | corrections | repeated |", "|---|---|---|---|---|"]
    lines += [f"| {w['week']} | {w['learned']} | {w['lessons_added']} | {w['corrections']} | "
              f"{w['repeated']} |" for w in d["weekly"]]
    loads = d["context_loads"]
    lines += ["", "## What session starts loaded", ""]
    if loads:
        lines += ["| session | started | lessons shown | left out | characters |", "|---|---|---|---|---|"]
        lines += [f"| {ld['session_id'] or '-'} | {ld['at'][:16]} | {ld['shown']} | {ld['dropped']} | "
                  f"{ld['chars']} |" for ld in loads]
    else:
        lines.append("None recorded.")
    return "\n".join(lines) + "\n"


def write(lore: Lore, folder: Path, kind: str, label: str | None = None,
          today: date | None = None) -> Path:
    """Write one digest as ``folder/<label>.md`` (private to the user); return its path."""
    d = build(lore, kind, label, today)
    path = private_dir(folder) / f"{d['period']}.md"
    with open(open_private(path), "w", encoding="utf-8") as fh:
        fh.write(markdown(d))
    return path
