"""`lore statusline` (whole processes, interpreter start included), against `python -c pass`
measured in the same run, one of each in turn.

    python -m bench.statusline_bench [--runs 60] [--lessons 2000] [--waiting 200]

The home holds ``--lessons`` active lessons, ``--waiting`` learned rules waiting for review in
the project, a proposed check and blocks recorded today: Claude Code runs the command every few
seconds, so it must stay within 50 ms of the bare interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import HashEmbedder, Report, stats

LORE = str(Path(sys.executable).parent / "lore")


def seed(home: Path, project: str, lessons: int, waiting: int) -> None:
    from lore.api import Lore
    from lore.config import load_config

    os.environ["LORE_HOME"] = str(home)
    with Lore.open(load_config(), embedder=HashEmbedder()) as lore:
        for i in range(lessons):
            lore.lessons.add(f"Lesson {i} about module {i % 97}", f"body {i}", kind="learning",
                            status="active", project=project if i % 2 else None)
        for i in range(waiting):
            lore.lessons.add(f"Use tool {i}, not tool {i + 1}", "learned", kind="preference",
                            status="proposed", project=project,
                            metadata={"learning": {"occurrences": 1 + i % 3}})
        rule = lore.lessons.add("Use pnpm, not npm", "x", kind="preference", status="active",
                               project=project)
        check = lore.checks.add(rule.id, {"command": "npm(?=\\s|$)", "mode": "block"})
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        for n in range(50):
            lore.checks.record(f"ev{n}", {"session_id": "s", "cwd": project,
                                          "lore_guard": [{"check_id": check["id"],
                                                          "lesson_id": rule.id,
                                                          "outcome": "blocked"}]}, stamp)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--lessons", type=int, default=2000)
    ap.add_argument("--waiting", type=int, default=200)
    args = ap.parse_args()
    report = Report("statusline_bench", runs=args.runs, lessons=args.lessons,
                    waiting=args.waiting)
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "shop"
        project.mkdir()
        seed(home, str(project.resolve()), args.lessons, args.waiting)
        env = dict(os.environ, LORE_HOME=str(home))
        stdin = json.dumps({"session_id": "s", "workspace": {"current_dir": str(project)}})
        line = subprocess.run([LORE, "statusline"], input=stdin, text=True, env=env,
                              capture_output=True, check=True).stdout.strip()
        print(f"line: {line}", flush=True)
        base: list[float] = []
        floor: list[float] = []  # what any status line reading SQLite and JSON starts with
        status: list[float] = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            base.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import sqlite3, json"], env=env, check=True)
            floor.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            subprocess.run([LORE, "statusline"], input=stdin, text=True, env=env, check=True,
                           capture_output=True)
            status.append((time.perf_counter() - t0) * 1000)
        report.add("python -c pass", base)
        report.add("python -c 'import sqlite3, json'", floor, baseline="python -c pass")
        report.add("lore statusline", status, baseline="python -c pass", line=line)
        over = stats(status)["median"] - stats(base)["median"]
        report.value("median over the interpreter", round(over, 1), unit="ms")
    report.write()


if __name__ == "__main__":
    main()
