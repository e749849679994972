"""Tokens the judge costs per finished session, measured on real Claude Code transcripts.

    python -m bench.quality.judge_tokens FOLDER [FOLDER …] [--sessions-per-day 30]
        [--price-in 1.0 --price-out 5.0]

Every transcript under the folders is read as `lore ingest --learn` reads it (the messages
the user typed, each with the agent turn it answers); the detector scores each message and
the ones at or above its filter threshold become the session's candidates; the judge's
requests are built exactly as the product builds them (lore.llm.judge.batches, default
llm.max_input_tokens). Input tokens are estimated at 4 characters a token (the product's
own estimate); the reply is estimated at 12 tokens for each message the judge is expected
to call none and 60 for each it is expected to keep (the detector's own positive calls
stand in for those). A session without candidates costs nothing: no request is sent.

Printed: sessions, sessions with a request, and per judged session the median and p90 of
input, output and total tokens, plus the daily cost for a heavy user (sessions per day and
prices per million tokens as given; the defaults are Claude Haiku 4.5's list prices).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from bench.harness import pct
from lore.capture.backfill import read, transcripts
from lore.capture.signals import strip_wrappers
from lore.config import LLMConfig
from lore.extract.detect import FILTER_THRESHOLD, detect
from lore.llm.judge import Candidate, batches

NONE_REPLY_TOKENS = 12
KEPT_REPLY_TOKENS = 60


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("folders", type=Path, nargs="+")
    ap.add_argument("--sessions-per-day", type=int, default=30)
    ap.add_argument("--price-in", type=float, default=1.0, help="US dollars per million input tokens")
    ap.add_argument("--price-out", type=float, default=5.0, help="US dollars per million output tokens")
    args = ap.parse_args()
    files, skipped = transcripts(args.folders)
    sessions: dict[str, list[Candidate]] = defaultdict(list)
    kept: dict[str, int] = defaultdict(int)
    typed: dict[str, int] = defaultdict(int)
    for path in files:
        for past in read(path):
            typed[past.session_id] += 1
            det = detect(past.text, past.previous)
            if det.probability >= FILTER_THRESHOLD:
                sessions[past.session_id].append(
                    Candidate(past.uuid, strip_wrappers(past.text) or past.text, past.previous))
                kept[past.session_id] += det.positive
    tokens = LLMConfig().max_input_tokens
    rows = []
    for sid, cands in sessions.items():
        reqs = batches(cands, max_input_tokens=tokens)
        tin = sum(b.input_tokens for b in reqs)
        tout = (len(cands) - kept[sid]) * NONE_REPLY_TOKENS + kept[sid] * KEPT_REPLY_TOKENS
        rows.append((tin, tout, len(reqs), len(cands)))
    print(f"{len(files)} transcript files ({len(skipped)} skipped), {len(typed)} sessions with typed "
          f"messages ({sum(typed.values())} messages), {len(rows)} with a request for the judge "
          f"({sum(r[3] for r in rows)} candidates, {sum(r[2] for r in rows)} requests)")
    if not rows:
        return 0
    tin, tout, total = [r[0] for r in rows], [r[1] for r in rows], [r[0] + r[1] for r in rows]
    print("| per judged session | median | p90 | max |")
    print("|---|---|---|---|")
    for name, values in (("candidates", [r[3] for r in rows]), ("input tokens", tin),
                         ("output tokens", tout), ("total tokens", total)):
        print(f"| {name} | {statistics.median(values):.0f} | {pct(values, 0.9)} | {max(values)} |")
    def cost(tokens_in: float, tokens_out: float) -> float:
        return (tokens_in * args.price_in + tokens_out * args.price_out) / 1e6

    per_session = cost(statistics.median(tin), statistics.median(tout))
    worst = cost(pct(tin, 0.9), pct(tout, 0.9))
    day = args.sessions_per_day
    print(f"heavy user, {args.sessions_per_day} sessions a day at ${args.price_in}/${args.price_out} per "
          f"million tokens: ${per_session * args.sessions_per_day:.3f} a day at the median session, "
          f"${worst * args.sessions_per_day:.3f} if every session were at the p90; "
          f"{statistics.median(total) * day:,.0f} to {pct(total, 0.9) * day:,.0f} tokens a day")
    return 0


if __name__ == "__main__":
    sys.exit(main())
