"""`lore apply` beside other runs and an appending user (docs/reliability.md, "Server and
apply"): rounds of concurrent `lore apply` processes, each with its own Lore home and rules, all
writing one CLAUDE.md while a thread appends a numbered line every 10 ms. Counts the appended
lines missing afterwards, and how many runs wrote or refused.

    python -m bench.quality.apply_race [--rounds 5] [--runs 10] [--every 0.01] [--src PATH]

``--src`` runs the `lore` of another source tree (the code before a change, for a baseline
in the same run); default: this one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.harness import HashEmbedder, settings
from lore.api import Lore

ROOT = Path(__file__).resolve().parents[2]
SRC = str(ROOT / "src")


class Appender(threading.Thread):
    """The user: one numbered line appended every ``every`` seconds, as an editor's
    append or `echo >>` would (open, write, close)."""

    def __init__(self, path: Path, every: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.path, self.every = path, every
        self.count = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(f"user line {self.count}\n")
            self.count += 1
            time.sleep(self.every)


def homes_with_rules(tmp_path: Path, project: Path, embedder, n: int) -> list[Path]:
    """``n`` Lore homes, each with its own approved rules for ``project``: every run has
    something different to write, so every run races the others."""
    homes = []
    for i in range(n):
        home = tmp_path / f"lore-{i}"
        with Lore.open(settings(home), embedder=embedder) as lore:
            for j in range(2):
                lore.lessons.add(f"Rule {j} of home {i}: use tool {i}-{j}", "", kind="preference",
                                status="active", project=str(project))
        homes.append(home)
    return homes


def apply_in(home: Path, project: Path, user: Path, extra: tuple[str, ...] = (), src: str = SRC
             ) -> subprocess.Popen[str]:
    env = {**os.environ, "LORE_HOME": str(home), "HOME": str(user),
           "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "lore", "apply", "--yes", "--no-global",
                             "--project", str(project), *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--every", type=float, default=0.01)
    ap.add_argument("--src", default=SRC)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lore-apply-race-"))
    project, user = tmp / "shop", tmp / "user"
    project.mkdir()
    user.mkdir()
    homes = homes_with_rules(tmp, project, HashEmbedder(), args.runs)
    md = project / "CLAUDE.md"
    totals = [0, 0, 0, 0]  # appended, lost, wrote, refused
    for number in range(1, args.rounds + 1):
        md.write_text("# Shop\n\nThe user's own notes.\n")
        writer = Appender(md, args.every)
        writer.start()
        runs = [apply_in(home, project, user, src=args.src) for home in homes]
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
