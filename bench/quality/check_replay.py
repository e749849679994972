"""Checks replayed over real transcripts: learn the rules the users' corrections teach, approve
them, propose checks for them (and for a few rules of each common shape), and replay every
check over the transcripts' tool calls. Prints Markdown for docs/apply.md.

    python -m bench.quality.check_replay TRANSCRIPTS_FOLDER
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

# Rules of each shape a user might approve, global: replayed over every project's calls.
TYPICAL = [
    ("Use pnpm, not npm", "The lockfile is pnpm's; npm rewrites it.", [], ("pnpm", "npm")),
    ("Use uv, not pip", "Dependencies are locked by uv.", [], ("uv", "pip")),
    ("Never force-push to main", "Others build on main.", [], None),
    ("Do not edit gen/ or vendor/: they are generated", "Run make gen instead.", [], None),
    ("Use httpx, not requests", "One HTTP client, async-ready.", ["py"], ("httpx", "requests")),
    ("Use TypeScript, not JavaScript", "New files are .ts.", [], ("TypeScript", "JavaScript")),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    args = ap.parse_args()
    files = sorted(p for p in args.folder.rglob("*.jsonl") if "codex-sessions" not in p.parts)
    with tempfile.TemporaryDirectory() as home:
        os.environ["LORE_HOME"] = home
        from lore.api import Lore
        from lore.config import load_config
        from lore.measure.learning import replay

        t0 = time.perf_counter()
        with Lore.open(load_config()) as lore:
            counts = replay(lore, files)
            learned = lore.search.preferences(None, all_projects=True,
                                       statuses=("active", "proposed", "candidate"), limit=1000)
            for rule in learned:  # a person approving everything the learner proposed
                lore.review.decide(rule.id, "approve")
            typical = [lore.lessons.add(title, content, kind="project_rule", file_types=types,
                                       preference={"preferred": p[0], "rejected": p[1]} if p else None)
                       for title, content, types, p in TYPICAL]
            print(f"{len(files)} transcripts, {counts}; {len(learned)} rules learned and approved; "
                  f"{len(typical)} typical rules added ({time.perf_counter() - t0:.0f} s)\n")
            for label, rules in (("Rules learned from the transcripts (approved)", learned),
                                 ("Typical rules of each shape (global)", typical)):
                print(f"### {label}\n")
                print("| rule | check proposed | calls | matched | accepted |")
                print("|---|---|---:|---:|---:|")
                for rule in rules:
                    made = lore.checks.propose(rule.id)
                    if not made:
                        print(f"| {rule.title[:70]} | (none proposed) | | | |")
                    for check in made:
                        r = lore.checks.test(check["id"])
                        print(f"| {rule.title[:70]} | {check['words']} | {r.calls} | "
                              f"{len(r.matched)} | {len(r.accepted)} |")
                        for m in r.matched[:3]:
                            tag = "accepted" if m["accepted"] else (
                                "refused" if m["refused"] else "corrected")
                            print(f"|  | ↳ `{m['matched'][:70]}` ({tag}) | | | |")
                print()


if __name__ == "__main__":
    sys.exit(main())
