"""`lore apply` with 200 approved rules in the database (docs/benchmarks.md, "Applying rules").

    python -m bench.apply_cli_bench [--runs 10] [--rules 200]

A temporary Lore home holds --rules active rules (one in ten global, one in five tied to
Python files, eight tags), a project with a 120-line CLAUDE.md of the user's and an empty home
folder. Timed: the facade's read of the approved rules plus the plan and the write, in one
process ("facade"), and the whole command `lore apply --yes` as a user runs it, a fresh
process each time ("command", including Python's start-up and the imports). "first" writes
into files without a block; "again" finds nothing to change.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Report

TAGS = ["testing", "tooling", "style", "git", "docs", "python", "review", "deploy"]


def fill(home: Path, project: Path, n: int) -> None:
    from lore.api import Lore
    from lore.config import load_config

    os.environ["LORE_HOME"] = str(home)
    with Lore.open(load_config()) as lore:
        for i in range(n):
            lore.lessons.add(f"Prefer option {i} for case {i % 17} of the {TAGS[i % 8]} work",
                            kind="preference", status="active", tags=[TAGS[i % 8]],
                            project=None if i % 10 == 0 else str(project),
                            file_types=["py"] if i % 5 == 1 else [])


def fresh(project: Path, user: Path) -> None:
    for p in (project / "CLAUDE.md", project / ".claude", user / ".claude"):
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    (project / "CLAUDE.md").write_text(
        "# Service\n\n" + "".join(f"- House rule {i}: keep module {i} tidy.\n" for i in range(120)))


def facade(project: Path, user: Path) -> float:
    from lore.api import Lore
    from lore.config import load_config

    with Lore.open(load_config()) as lore:
        t = time.perf_counter()
        lore.apply.plan(str(project), user).write()
        return (time.perf_counter() - t) * 1000


def command(project: Path, user: Path, args: tuple[str, ...] | None = None) -> tuple[float, float]:
    """(wall, CPU) milliseconds of one `lore` process; CPU is user + system time of the child,
    which other jobs on a busy machine do not inflate the way they inflate wall time."""
    env = {**os.environ, "HOME": str(user)}
    lore = Path(sys.executable).with_name("lore")
    argv = args or ("apply", "--yes", "--project", str(project))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([str(lore), *argv], env=env, check=True, capture_output=True,
                   stdin=subprocess.DEVNULL)
    wall = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rules", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, project, user = Path(tmp) / "lore", Path(tmp) / "shop", Path(tmp) / "user"
        project.mkdir()
        user.mkdir()
        fill(home, project, args.rules)
        times: dict[str, list[float]] = {}

        def add(key: str, value: float) -> None:
            times.setdefault(key, []).append(value)

        for _ in range(args.runs):
            fresh(project, user)
            add("facade first", facade(project, user))
            add("facade again", facade(project, user))
            fresh(project, user)
            for label in ("first", "again"):
                wall, cpu = command(project, user)
                add(f"command {label} (wall)", wall)
                add(f"command {label} (CPU)", cpu)
            wall, cpu = command(project, user, ("stats", "--counts"))
            add("lore stats --counts (wall)", wall)
            add("lore stats --counts (CPU)", cpu)
        lines = (project / "CLAUDE.md").read_text().count("\n- ")
        print(f"{args.rules} approved rules; CLAUDE.md has {lines} bullet lines after apply; "
              f"median and max of {args.runs} runs")
        for k, v in times.items():
            print(f"  {k:<24} median {statistics.median(v):6.0f} ms   max {max(v):6.0f} ms")
        report = Report("apply_cli_bench", **vars(args), bullet_lines=lines)
        for k, v in times.items():
            report.add(k, v, quiet=True, max=round(max(v), 1),
                       baseline=("lore stats --counts" + k[k.index(" ("):]
                                 if k.startswith("command") else None))
        report.write()


if __name__ == "__main__":
    main()
