"""Plan and write 200 approved rules over four files (docs/apply.md, "Measured").

    python -m bench.apply_bench [--runs 30] [--rules 200]

The four files: the project's CLAUDE.md (an existing 120-line file of the user's), AGENTS.md,
one .claude/rules file for the file-bound rules and ~/.claude/CLAUDE.md for the global ones.
Each run starts from fresh copies, so "first" is plan + write into files without a block;
"again" plans the same rules over the written files (nothing to write); "one more" adds a
rule and writes.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.harness import Report
from lore.apply.rules import AppliedRule
from lore.apply.targets import Targets, plan

TOPICS = ["testing", "tooling", "style", "git", "docs", "python", "review", "deploy"]
VERBS = ["Use", "Prefer", "Run", "Keep", "Write", "Check", "Name", "Document"]
THINGS = ["pnpm", "pytest fixtures", "small commits", "type hints", "ruff", "feature flags",
          "structured logs", "short functions", "conventional commits", "tmp_path"]


def rules(n: int) -> list[AppliedRule]:
    out = []
    for i in range(n):
        scope = "global" if i % 10 == 0 else "project"
        globs = ("py",) if i % 5 == 1 else ()
        out.append(AppliedRule(f"01J{i:023d}", f"{VERBS[i % 8]} {THINGS[i % 10]} in case {i}.",
                               scope=scope, topic="python" if globs else TOPICS[i % 8], globs=globs))
    return out


def user_file() -> str:
    return "# Service\n\n" + "".join(f"- House rule {i}: keep module {i} tidy.\n" for i in range(120))


def run_once(n: int) -> tuple[float, float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        (root / "project" / "CLAUDE.md").write_text(user_file())
        targets = Targets(home=root / "home", project=root / "project", agents_md=True)
        rs = rules(n)
        t0 = time.perf_counter()
        written = plan(rs, targets).write()
        t1 = time.perf_counter()
        assert plan(rs, targets).changed == ()
        t2 = time.perf_counter()
        plan([*rs, AppliedRule("01K", "Use one more rule.", topic="git")], targets).write()
        t3 = time.perf_counter()
        return (t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000, len(written)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--rules", type=int, default=200)
    args = ap.parse_args()
    results = [run_once(args.rules) for _ in range(args.runs)]
    report = Report("apply_bench", rules=args.rules, runs=args.runs, files=results[0][3])
    for i, label in enumerate(["first plan + write", "again (no change)", "one more rule"]):
        report.add(label, [r[i] for r in results], max=round(max(r[i] for r in results), 1),
                   baseline=None if i == 1 else "again (no change)")
    report.write()


if __name__ == "__main__":
    main()
