"""Telling the user that something waits for review, where they work, without noise.

- the SessionStart nudge: one line in the context when rules or checks of this project wait,
  naming the command that shows them, at most once a day per project (the days are kept in
  ``$LORE_HOME/nudged.json``);
- ``lore statusline``: rules and checks waiting, checks that blocked a call today, for
  Claude Code's ``statusLine`` setting (it runs every few seconds: the standard library and
  one read-only query, no click, no model).

What waits is decided as ``lore review`` decides it (:func:`waits`, which
:func:`lore.review.queue.waits` uses too), on the rows :mod:`lore.store.glance` reads.
"""

from __future__ import annotations

import os
import time

from lore.store.glance import LIVE, Glance, glance

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

STATE = "nudged.json"
KEEP_DAYS = 400  # projects not nudged for longer are dropped from the state file


def waits(status: str, metadata: dict[str, Any]) -> bool:
    """Nobody decided on this learned rule or proposed lesson yet (a deferred one waits again
    once seen again). An active learned rule waits, deferred or not: its score made it active
    and nobody confirmed it (lore.extract.steer); a lesson from the work waits while it is
    proposed. A correction read as one-off is not shown until it is said again."""
    key = next((k for k in ("learning", "analysis") if isinstance(metadata.get(k), dict)), None)
    if key is None or status not in LIVE:
        return False
    meta = metadata[key]
    if meta.get("reviewed") or meta.get("by_hand"):
        return False
    if key == "analysis" and status != "proposed":
        return False
    if status == "active":
        return True
    if status == "candidate" and meta.get("one_off"):
        return False  # a correction read as one-off waits, hidden, for the user to say it again
    occurrences = int(meta.get("occurrences", 1))
    return not (meta.get("deferred_at") and occurrences <= int(meta.get("deferred_seen", 0)))


def waiting_rules(seen: Glance) -> int:
    """How many of the rows wait, as ``lore review`` lists them."""
    return sum(1 for _, status, metadata in seen.rules if waits(status, metadata))


def today_start(now: float | None = None) -> str:
    """Local midnight as the store writes times (UTC, ISO 8601 with a Z)."""
    t = time.localtime(now)
    midnight = time.mktime((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0, 0, 0, -1))
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(midnight))


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def what_waits(rules: int, checks: int) -> str:
    parts = [_plural(rules, "rule", "rules")] if rules else []
    if checks:
        parts.append(_plural(checks, "check", "checks"))
    return " and ".join(parts)


def review_command(plugin: bool) -> str:
    return "/lore:review" if plugin else "lore review"


def nudge(db: str | Path, project: str | None, home: str | Path, *, plugin: bool,
          now: float | None = None) -> str | None:
    """The one line for this session's context, or None: nothing waits, or this project was
    told today already. Telling it is recorded (a state file that cannot be written means
    no nudge: never the same line in every session)."""
    seen = glance(str(db), project, today_start(now))
    rules = waiting_rules(seen)
    if not rules and not seen.checks_waiting:
        return None
    day = time.strftime("%Y-%m-%d", time.localtime(now))
    key = project or "(global)"
    state_path = os.path.join(home, STATE)
    state = _read_state(state_path)
    if state.get(key) == day:
        return None
    state[key] = day
    cutoff = time.strftime("%Y-%m-%d", time.localtime((now or time.time()) - KEEP_DAYS * 86400))
    state = {k: v for k, v in state.items() if isinstance(v, str) and v >= cutoff}
    try:
        _write_state(state_path, state)
    except OSError:
        return None
    waiting = what_waits(rules, seen.checks_waiting)
    verb = "waits" if rules + seen.checks_waiting == 1 else "wait"
    return (f"Lore: {waiting} learned from the user's corrections {verb} for the user's review; "
            f"tell the user once, briefly, that they can type {review_command(plugin)} to see "
            "them (only the user decides).")


def _read_state(path: str) -> dict[str, Any]:
    import json  # here: the status line never reads the state

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(path: str, state: dict[str, Any]) -> None:
    import json
    folder, name = os.path.split(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(state, fh, sort_keys=True)
    os.replace(tmp, path)


def statusline(db: str | Path, project: str | None, *, plugin: bool,
               now: float | None = None) -> str:
    """One short line: what waits for review here, what the checks blocked today."""
    seen = glance(str(db), project, today_start(now))
    rules = waiting_rules(seen)
    parts = []
    if rules or seen.checks_waiting:
        parts.append(f"{what_waits(rules, seen.checks_waiting)} to review "
                     f"({review_command(plugin)})")
    if seen.blocked:
        parts.append(f"{_plural(seen.blocked, 'call', 'calls')} blocked today")
    return "Lore: " + (" · ".join(parts) if parts else "nothing waits")
