"""`lore apply` beside other runs and an appending user (docs/reliability.md, "Server and
apply"): rounds of concurrent `lore apply` processes, each with its own Lore home and rules, all
writing one CLAUDE.md while a thread appends a numbered line every 10 ms. Counts the appended
lines missing afterwards, and how many runs wrote or refused.

    python bench/apply_race_bench.py [--rounds 5] [--runs 10] [--every 0.01] [--src PATH]

``--src`` runs the `lore` of another source tree (the code before a change, for a baseline
in the same run); default: this one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--every", type=float, default=0.01)
    ap.add_argument("--src", default=str(ROOT / "src"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    import test_apply_concurrent as race  # the test's writer, homes and runs
    from conftest import FakeEmbedder

    race.SRC = args.src
    tmp = Path(tempfile.mkdtemp(prefix="lore-apply-race-"))
    project, user = tmp / "shop", tmp / "user"
    project.mkdir()
    user.mkdir()
    homes = race.homes_with_rules(tmp, project, FakeEmbedder(), args.runs)
    md = project / "CLAUDE.md"
    totals = [0, 0, 0, 0]  # appended, lost, wrote, refused
    for number in range(1, args.rounds + 1):
        md.write_text("# Shop\n\nThe user's own notes.\n")
        writer = race.Appender(md, args.every)
        writer.start()
        runs = [race.apply_in(home, project, user) for home in homes]
        codes = []
        for p in runs:
            p.communicate(timeout=300)
            codes.append(p.returncode)
        writer.stop.set()
        writer.join()
        lines = set(md.read_text().splitlines())
        lost = sum(f"user line {n}" not in lines for n in range(writer.count))
        wrote, refused = codes.count(0), len(codes) - codes.count(0)
        print(f"round {number}: {writer.count} lines appended, {lost} lost; {wrote} runs wrote, "
              f"{refused} refused")
        for k, v in enumerate((writer.count, lost, wrote, refused)):
            totals[k] += v
    print(f"total: {totals[1]} of {totals[0]} appended lines lost; {totals[2]} runs wrote, "
          f"{totals[3]} refused")


if __name__ == "__main__":
    main()
