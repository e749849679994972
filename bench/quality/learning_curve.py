"""The learning curve: repeated corrections per session over time (docs/learning.md).

    python -m bench.quality.learning_curve --synthetic [--chart docs/learning-synthetic.png]
    python -m bench.quality.learning_curve --transcripts PATH [--chart FILE.png]

Both replay Claude Code transcripts through the real learner (the correction detector, the
rule extractor and the merge with the real embedding model) into a temporary Lore home, then
measure what `lore stats --learning --rules` shows.

--synthetic builds the history it replays: 40 daily sessions in one project, each touching 3
of 8 situations (a seeded random choice). When a situation comes up, the agent makes its
mistake with probability --before (0.8) and the user corrects it in their own words; after
session 20 every rule learned so far is approved, and from then on the agent makes the
mistake with probability --after (0.1) -- an assumption standing for the approved rule being
in its context (the end-to-end test shows Claude Code reading it), not a measurement of a
model. Otherwise the agent does the right thing and says so. So the drop in the curve is put
in by construction; what the run measures is whether the detector, the merge and the metrics
see it.

--transcripts replays real transcripts (a folder searched for *.jsonl) in time order; no rule
is approved part way, so it shows how often the same correction came back.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

SITUATIONS = [  # (agent's mistake, user's correction, agent doing it right, file it edits)
    ("I'll run npm install to add the package.", "No, don't use npm, use pnpm instead.",
     "I'll run pnpm add to add the package.", "package.json"),
    ("I'll use requests for the HTTP call.", "Don't use requests, use httpx instead.",
     "I'll use httpx for the HTTP call.", "client.py"),
    ("I'll add print statements to see what happens.",
     "Never use print for debugging output, use the logging module.",
     "I'll log it with the logging module.", "service.py"),
    ("I'll write the tests with unittest.TestCase.", "No, use pytest instead of unittest.",
     "I'll write the tests with pytest.", "test_api.py"),
    ("I'll format the code with black.", "Don't use black, use ruff format instead.",
     "I'll format the code with ruff format.", "models.py"),
    ("I'll keep the settings in config.json.", "No, use YAML for config files, not JSON.",
     "I'll keep the settings in config.yaml.", "config.yaml"),
    ("I'll base the image on ubuntu:latest.",
     "Use python:3.12-slim as the base image, not ubuntu.",
     "I'll base the image on python:3.12-slim.", "Dockerfile"),
    ("I'll commit it as 'fixed stuff'.", "No, write commit messages in the imperative mood.",
     "I'll commit it as 'Fix the login redirect'.", "CHANGELOG.md"),
]
PROJECT = "/srv/shop"


def synthetic(folder: Path, sessions: int, approve_after: int, before: float, after: float,
              seed: int) -> datetime:
    """Write the transcripts; return the moment the rules are approved."""
    rng = random.Random(seed)
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    for n in range(sessions):
        sid = f"00000000-0000-4000-8000-{n:012d}"
        at = start + timedelta(days=n)
        records: list[dict] = []

        def add(role: str, content: object, when: datetime, n: int = n, sid: str = sid,
                records: list[dict] = records) -> None:
            uid = f"{n:08d}-0000-4000-9000-{len(records):012d}"
            records.append({"type": role, "uuid": uid,
                            "parentUuid": records[-1]["uuid"] if records else None,
                            "sessionId": sid, "timestamp": when.isoformat().replace("+00:00", "Z"),
                            "cwd": PROJECT, "message": {"role": role, "content": content}})

        add("user", "Let's keep working on the shop service.", at)
        p_mistake = before if n < approve_after else after
        for k, i in enumerate(rng.sample(range(len(SITUATIONS)), 3)):
            wrong, correction, right, file = SITUATIONS[i]
            t = at + timedelta(minutes=5 * (k + 1))
            mistake = rng.random() < p_mistake
            add("assistant", [{"type": "text", "text": wrong if mistake else right},
                              {"type": "tool_use", "id": f"toolu_{n}_{k}", "name": "Write",
                               "input": {"file_path": f"{PROJECT}/{file}", "content": "x\n"}}], t)
            add("user", correction if mistake else "Looks good, carry on.",
                t + timedelta(minutes=1))
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return start + timedelta(days=approve_after) - timedelta(hours=1)


def run(args: argparse.Namespace) -> dict:
    from lore.api import Lore
    from lore.config import load_config
    from lore.measure.learning import chart, learning_curve, rates, replay, rule_follow, sparkline, summary

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LORE_HOME"] = str(Path(tmp) / "home")
        with Lore.open(load_config()) as lore:
            approved = None
            if args.synthetic:
                folder = Path(tmp) / "transcripts"
                folder.mkdir()
                approved_at = synthetic(folder, args.sessions, args.approve_after, args.before,
                                        args.after, args.seed)
                files = sorted(folder.glob("*.jsonl"))
                replay(lore, files[:args.approve_after])
                approved = approved_at.isoformat()
                for lesson in lore.search.preferences(PROJECT, statuses=("active", "proposed")):
                    lore.lessons.update(lesson.id, status="active",
                                       metadata={**lesson.metadata, "approved_at": approved})
                replay(lore, files[args.approve_after:])
            else:
                files = sorted(Path(args.transcripts).rglob("*.jsonl"))
                replay(lore, files)
            points = learning_curve(lore)
            follow = rule_follow(lore)
            result = {**summary(points), "rates": [round(r, 3) for r in rates(points)],
                      "sparkline": sparkline(rates(points)),
                      "rules": [r.to_dict() for r in follow],
                      "rules_learned": len(lore.search.preferences(all_projects=True,
                                                                     statuses=("active", "proposed")))}
            if approved:
                before = [p for p in points if p.at < approved]
                after = [p for p in points if p.at >= approved]
                result["before_approval"] = summary(before)
                result["after_approval"] = summary(after)
            if args.chart:
                chart(points, Path(args.chart), approved_at=approved,
                      title="Repeated corrections per session"
                            + (" (synthetic, rules approved at the line)" if approved else ""))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--synthetic", action="store_true")
    src.add_argument("--transcripts", type=Path)
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--approve-after", type=int, default=20)
    ap.add_argument("--before", type=float, default=0.8)
    ap.add_argument("--after", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--chart", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = run(args)
    if args.json:
        json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return
    for key, value in result.items():
        if key != "rules":
            print(f"{key}: {value}")
    for r in result["rules"]:
        flag = "  RE-CORRECTED" if r["flagged"] else ""
        print(f"  {r['title'][:60]:<60} re-corrected {r['re_corrected']}, followed "
              f"{r['followed']}/{r['situations']}{flag}")


if __name__ == "__main__":
    main()
