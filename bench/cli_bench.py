"""How long commands that embed nothing take, as whole processes, against `lore --version`.

    python bench/cli_bench.py [--runs 15] [--lessons 200]

A temporary home gets ``--lessons`` lessons (through the facade, the real model). Then each
command runs as its own process, round after round so that a busy moment falls on all alike:
`python -c pass` and `lore --version` are the same-run baselines. For each: the wall time
(median and p90) and the CPU time of the process (user + system, median), which a loaded
machine disturbs less than the wall time. The target (docs/benchmarks.md): a command that
embeds nothing within 2x `lore --version`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ("lore --version", ["--version"]),
    ("lore --help", ["--help"]),
    ("lore status", ["status"]),
    ("lore review", ["review"]),
    ("lore recall preferences", ["recall", "preferences", "--project", "all"]),
    ("lore stats --rules", ["stats", "--rules"]),
    ("lore config show", ["config", "show"]),
    ("lore worker status", ["worker", "status"]),
]


def seed(home: Path, n: int) -> None:
    from lore.api import Lore
    from lore.config import load_config

    os.environ["LORE_HOME"] = str(home)
    with Lore.open(load_config()) as lore:
        for i in range(n):
            lore.add_lesson(f"Use tool {i} for task {i % 17}", f"Because of reason {i}.",
                            kind="preference", tags=[f"t{i % 9}"])


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--lessons", type=int, default=200)
    args = ap.parse_args()
    lore = str(Path(sys.executable).parent / "lore")
    with tempfile.TemporaryDirectory(prefix="lore-cli-bench-") as tmp:
        home = Path(tmp) / "home"
        seed(home, args.lessons)
        env = {**os.environ, "LORE_HOME": str(home)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: bytecode cached
        for _, argv in COMMANDS:  # warm the bytecode and the page cache
            timed(argv if argv[0] == sys.executable else [lore, *argv], env)
        walls: dict[str, list[float]] = {name: [] for name, _ in COMMANDS}
        cpus: dict[str, list[float]] = {name: [] for name, _ in COMMANDS}
        for _ in range(args.runs):
            for name, argv in COMMANDS:
                wall, cpu = timed(argv if argv[0] == sys.executable else [lore, *argv], env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    base_wall = statistics.median(walls["lore --version"])
    base_cpu = statistics.median(cpus["lore --version"])
    print("| command | wall median | wall p90 | CPU median | x --version (wall / CPU) |")
    print("|---|---|---|---|---|")
    for name, _ in COMMANDS:
        w, c = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"| `{name}` | {w:.0f} ms | {p90(walls[name]):.0f} ms | {c:.0f} ms | "
              f"{w / base_wall:.2f} / {c / base_cpu:.2f} |")


if __name__ == "__main__":
    main()
