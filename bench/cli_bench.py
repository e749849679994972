"""How long commands that embed nothing take, as whole processes, against `lore --version`.

    python -m bench.cli_bench [--runs 15] [--lessons 200]

A temporary home gets ``--lessons`` lessons (through the facade, the real model), and a copy of
it a ``config.yaml`` that sets a few keys (CONFIG). Then each command runs as its own process,
round after round so that a busy moment falls on all alike: `python -c pass` and `lore
--version` are the same-run baselines. The commands run in the home without a config file, in
the home with one (the validated config read back from the home's cache, as from the second
command on), and in that home with the cache removed before each run (validated every time, as
the first command after an edit). For each: the wall time (median and p90) and the CPU time of
the process (user + system, median), which a loaded machine disturbs less than the wall time.
The target (docs/benchmarks.md): a command that embeds nothing within 2x `lore --version`.
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

from bench.harness import Report, pct, stats

NO_CONFIG, CONFIG_FILE, VALIDATED = "", "config.yaml", "config.yaml, validated"
# (name, argv, home): the home without a config file, with one, or with one and no cache.
COMMANDS = [
    ("python -c pass", [sys.executable, "-c", "pass"], NO_CONFIG),
    ("lore --version", ["--version"], NO_CONFIG),
    ("lore --help", ["--help"], NO_CONFIG),
    ("lore status", ["status"], NO_CONFIG),
    ("lore review", ["review"], NO_CONFIG),
    ("lore recall preferences", ["recall", "preferences", "--project", "all"], NO_CONFIG),
    ("lore stats --rules", ["stats", "--rules"], NO_CONFIG),
    ("lore config", ["config"], NO_CONFIG),
    ("lore worker status", ["worker", "status"], NO_CONFIG),
    ("lore --version", ["--version"], CONFIG_FILE),
    ("lore status", ["status"], CONFIG_FILE),
    ("lore review", ["review"], CONFIG_FILE),
    ("lore recall preferences", ["recall", "preferences", "--project", "all"], CONFIG_FILE),
    ("lore config", ["config"], CONFIG_FILE),
    ("lore worker status", ["worker", "status"], CONFIG_FILE),
    ("lore review", ["review"], VALIDATED),
    ("lore config", ["config"], VALIDATED),
]
# A file as a user writes one: who they are, a few settings of three sections.
CONFIG = """\
user: bob
search:
  default_limit: 20
learning:
  silent_fixes: false
llm:
  timeout: 30
known_tags: [auth, deps, ci]
"""
CACHE_FILE = ".config-cache.json"  # lore.config_cache.CACHE_FILE


def seed(home: Path, n: int) -> None:
    from lore.api import Lore
    from lore.config import load_config

    os.environ["LORE_HOME"] = str(home)
    with Lore.open(load_config()) as lore:
        for i in range(n):
            lore.lessons.add(f"Use tool {i} for task {i % 17}", f"Because of reason {i}.",
                            kind="preference", tags=[f"t{i % 9}"])


def timed(argv: list[str], env: dict[str, str], drop: Path | None = None) -> tuple[float, float]:
    if drop is not None:
        drop.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--lessons", type=int, default=200)
    args = ap.parse_args()
    lore = str(Path(sys.executable).parent / "lore")
    rows = [(f"{name}" + (f" ({home})" if home else ""), argv, home) for name, argv, home in COMMANDS]
    with tempfile.TemporaryDirectory(prefix="lore-cli-bench-") as tmp:
        bare = Path(tmp) / "home"
        seed(bare, args.lessons)
        configured = Path(tmp) / "configured"
        shutil.copytree(bare, configured)
        (configured / "config.yaml").write_text(CONFIG, encoding="utf-8")
        base = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: bytecode cached
        envs = {home: {**base, "LORE_HOME": str(configured if home else bare)}
                for home in (NO_CONFIG, CONFIG_FILE, VALIDATED)}
        drops = {home: configured / CACHE_FILE if home == VALIDATED else None for home in envs}

        def one(argv: list[str], home: str) -> tuple[float, float]:
            full = argv if argv[0] == sys.executable else [lore, *argv]
            return timed(full, envs[home], drops[home])

        for _, argv, home in rows:  # warm the bytecode and the page cache (and write the cache)
            one(argv, home)
        one(["status"], CONFIG_FILE)
        assert (configured / CACHE_FILE).is_file(), "the configured home has no config cache"
        walls: dict[str, list[float]] = {name: [] for name, _, _ in rows}
        cpus: dict[str, list[float]] = {name: [] for name, _, _ in rows}
        load_before = f"{os.getloadavg()[0]:.1f}"
        for _ in range(args.runs):
            for name, argv, home in rows:
                wall, cpu = one(argv, home)
                walls[name].append(wall)
                cpus[name].append(cpu)
    base_wall = statistics.median(walls["lore --version"])
    base_cpu = statistics.median(cpus["lore --version"])
    print(f"load average before / after: {load_before} / {os.getloadavg()[0]:.1f}, "
          f"{args.runs} rounds", file=sys.stderr)
    print("| command | wall median | wall p90 | CPU median | x --version (wall / CPU) |")
    print("|---|---|---|---|---|")
    for name, _, _ in rows:
        w, c = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"| `{name}` | {w:.0f} ms | {pct(walls[name], 0.9):.0f} ms | {c:.0f} ms | "
              f"{w / base_wall:.2f} / {c / base_cpu:.2f} |")
    report = Report("cli_bench", **vars(args))
    for name, _, _ in rows:
        report.add(name, walls[name], quiet=True, cpu=stats(cpus[name]), baseline="lore --version")
    report.write()


if __name__ == "__main__":
    main()
