"""The call log (``$LORE_HOME/logs/llm.jsonl``) and the daily budget read from it.

One JSON line per call: when, provider, model, purpose, tokens in and out, cost,
latency, attempts, outcome. Never the prompt or the reply: the log says what was
spent, not what was said. Days are UTC days.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.errors import BudgetExceeded

LOG_NAME = "llm.jsonl"


@dataclass(frozen=True, slots=True)
class Prices:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input_per_mtok + tokens_out * self.output_per_mtok) / 1_000_000


@dataclass(frozen=True, slots=True)
class Budget:
    tokens: int | None = None  # per provider and UTC day; None: no limit
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    provider: str
    calls: int = 0
    failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def log_path(home: Path) -> Path:
    return home / "logs" / LOG_NAME


def append(home: Path, record: dict[str, Any]) -> None:
    """Append one line; the folder is 0700 and the file 0600 (they name models and spend)."""
    folder = home / "logs"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    fd = os.open(folder / LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
        # One write of a whole line: concurrent appenders do not interleave within it.
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def now() -> datetime:
    return datetime.now(UTC)


def _records(home: Path, day: str) -> Iterator[dict[str, Any]]:
    path = log_path(home)
    if not path.exists():
        return
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            # Lines start with the timestamp, so other days are skipped without parsing.
            if f'"ts":"{day}' not in line[:40]:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by a crash; the rest of the log still counts
            if isinstance(record, dict):
                yield record


def usage_today(home: Path, today: datetime | None = None) -> dict[str, Usage]:
    """Today's (UTC) calls, failures, tokens and cost per provider, from the log."""
    day = (today or now()).strftime("%Y-%m-%d")
    totals: dict[str, Usage] = {}
    for r in _records(home, day):
        name = str(r.get("provider"))
        u = totals.get(name, Usage(provider=name))
        totals[name] = Usage(
            provider=name, calls=u.calls + 1, failures=u.failures + (r.get("outcome") != "ok"),
            input_tokens=u.input_tokens + int(r.get("input_tokens") or 0),
            output_tokens=u.output_tokens + int(r.get("output_tokens") or 0),
            cost_usd=u.cost_usd + float(r.get("cost_usd") or 0.0))
    return totals


def check_budget(home: Path, provider: str, budget: Budget, tokens_needed: int,
                 cost_needed: float | None) -> None:
    """Raise BudgetExceeded when this call could take today's use past the budget."""
    if budget.tokens is None and budget.cost_usd is None:
        return
    used = usage_today(home).get(provider, Usage(provider=provider))
    if budget.tokens is not None and used.tokens + tokens_needed > budget.tokens:
        raise BudgetExceeded(
            f"llm budget: {provider} used {used.tokens:,} of {budget.tokens:,} tokens today (UTC) and this "
            f"call may need {tokens_needed:,}; raise llm.daily_token_budget or wait until tomorrow")
    # Without prices (claude -p reports its cost afterwards) only the spent amount is checked.
    need = cost_needed or 0.0
    if budget.cost_usd is not None and (used.cost_usd + need > budget.cost_usd
                                        or used.cost_usd >= budget.cost_usd):
        raise BudgetExceeded(
            f"llm budget: {provider} spent ${used.cost_usd:.4f} of ${budget.cost_usd:.2f} today (UTC) and "
            f"this call may cost ${need:.4f}; raise llm.daily_cost_budget or wait until tomorrow")
