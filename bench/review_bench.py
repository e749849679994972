"""How long `lore review` takes to list 1,000 waiting rules, as a user runs it (docs/benchmarks.md).

    python -m bench.review_bench [--items 1000] [--runs 15]

A temporary home gets ``--items`` learned rules waiting for review (candidates and proposed
ones, each with three quotes of evidence, the agent turn they answered, a session, a date and
a project), stored through the facade with the real default model. Then the real `lore`
process runs, one after another: `lore --version` (the baseline: Python, click and Lore's
entry point), `lore review --limit 1` (what any command that opens the database pays: the
validated config, the store), `lore review` (50), `lore review --limit N` and its `--json`. Each
figure is the process's wall time, median and p90 over ``--runs`` runs, in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Report

TOOLS = ["pytest", "ruff", "httpx", "pnpm", "uv", "mypy", "black", "poetry", "docker", "make"]
HABITS = ["fixtures over setUp", "small commits", "type hints", "structured logs", "tmp_path",
          "feature flags", "short functions", "one assert per idea", "pathlib", "f-strings"]


def seed(home: Path, n: int) -> None:
    """``n`` learned rules waiting for review, as the learner stores them."""
    from lore.api import Lore
    from lore.config import load_config

    os.environ["LORE_HOME"] = str(home)
    with Lore.open(load_config()) as lore:
        for i in range(n):
            tool, habit = TOOLS[i % len(TOOLS)], HABITS[(i // len(TOOLS)) % len(HABITS)]
            project = f"/work/project-{i % 7}" if i % 5 else None
            sessions = [f"session-{i}-{k}" for k in range(1 + i % 3)]
            evidence = [{"quote": f"no, use {tool} with {habit} here (case {i}, time {k})",
                         "session_id": s, "observed_at": f"2026-0{1 + k % 9}-1{k}T10:00:00Z",
                         "source": "hook", "context": f"I'll set up case {i} without {tool}."}
                        for k, s in enumerate(sessions)]
            meta = {"occurrences": len(sessions), "sessions": sessions, "reviewed": False,
                    "explicit": True, "conflicts": [], "gate": "" if i % 2 else
                    "not specific enough to be a rule", "first_seen": evidence[0]["observed_at"],
                    "last_seen": evidence[-1]["observed_at"]}
            lore.lessons.add(f"Use {tool} with {habit} (case {i})",
                            f"Use {tool} with {habit} in case {i}.", kind="preference",
                            status="candidate" if i % 2 == 0 else "proposed",
                            score=0.4 + (i % 50) / 100, source="correction", project=project,
                            file_types=["py"] if i % 3 == 0 else [], tags=["learned"],
                            evidence=evidence, metadata={"learning": meta},
                            preference={"rejected": "", "preferred": tool, "context": "",
                                        "reasoning": ""})


def timed(rows: list[tuple[str, list[str]]], env: dict[str, str],
          runs: int) -> dict[str, list[float]]:
    """Wall times in ms per command. The commands take turns within each run, so a busy
    moment of the machine falls on all of them alike; one warm-up round is not counted."""
    times: dict[str, list[float]] = {name: [] for name, _ in rows}
    for i in range(runs + 1):
        for name, cmd in rows:
            start = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
            if i:
                times[name].append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    lore = str(Path(sys.executable).with_name("lore"))
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        t0 = time.perf_counter()
        seed(home, args.items)
        print(f"seeded {args.items} waiting rules in {time.perf_counter() - t0:.1f} s")
        # As installed: bytecode cached (a test environment may forbid writing it).
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["LORE_HOME"] = str(home)
        limit = str(min(args.items, 1000))
        rows = [("python -c pass", [sys.executable, "-c", "pass"]),
                ("lore --version (baseline)", [lore, "--version"]),
                ("lore review --limit 1", [lore, "review", "--limit", "1"]),
                ("lore review (first 50)", [lore, "review"]),
                (f"lore review --limit {limit}", [lore, "review", "--limit", limit]),
                (f"lore review --limit {limit} --json", [lore, "review", "--limit", limit,
                                                         "--json"])]
        times = timed(rows, env, args.runs)
        base = statistics.median(times["lore --version (baseline)"])
        print(f"{'command':<36} {'median ms':>10} {'p90 ms':>8} {'- baseline':>11}")
        report = Report("review_bench", **vars(args))
        for name, _ in rows:
            row = report.add(name, times[name], quiet=True,
                             baseline=None if "baseline" in name else "lore --version (baseline)")
            med, p90 = row["median"], row["p90"]
            print(f"{name:<36} {med:>10.0f} {p90:>8.0f} {med - base:>+11.0f}")
        report.write()
        print(f"load average after the runs: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
