"""The confidence score of a learned rule, and the status it earns.

0.3, plus 0.1 per occurrence (at most 0.4), plus 0.2 for an explicit correction or a stated
rule, plus 0.1 when seen in the last ``recent_days``, minus 0.3 while it conflicts with
another rule. At ``active_threshold`` or above a rule is active (injected, published); from
``review_threshold`` it is proposed for review; below it is a candidate kept as evidence.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lore.config_models import LearningConfig


def confidence(occurrences: int, explicit: bool, last_seen: str | None, conflicted: bool,
               recent_days: int, at: datetime | None = None) -> float:
    """The score, clamped to 0..1."""
    at = at or datetime.now(UTC)
    score = 0.3 + min(occurrences * 0.1, 0.4) + (0.2 if explicit else 0.0)
    if last_seen:
        try:
            seen = datetime.fromisoformat(last_seen.replace("Z", "+00:00"))
            if seen.tzinfo is None:
                seen = seen.replace(tzinfo=UTC)
            if (at - seen).days < recent_days:
                score += 0.1
        except ValueError:
            pass
    if conflicted:
        score -= 0.3
    return round(min(max(score, 0.0), 1.0), 2)


def status_for(score: float, cfg: LearningConfig) -> str:
    if score >= cfg.active_threshold:
        return "active"
    if score >= cfg.review_threshold:
        return "proposed"
    return "candidate"
