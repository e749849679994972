"""A hook in a large home reached through a symlink, against a plain home (whole processes).

    python -m bench.home_bench [--runs 30] [--files 20000]

Run it once with this source and once with an older one on PYTHONPATH to compare: the older
hook walked the whole home on every call when the home (here, the symlink's target) could be
read by others.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Report, pct, stats

LORE = str(Path(sys.executable).parent / "lore")


def hook_cpu(payload: str, runs: int, home: Path) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds (user + system, of the hook process) of ``runs`` hooks. This
    process holds the home's worker lock, so each hook finds a worker running and starts none.
    CPU time is what the machine's other load does not change."""
    import resource

    from lore.home import lock_file, lock_target

    env = dict(os.environ, LORE_HOME=str(home))
    env.pop("LORE_WORKER_AUTOSTART", None)
    home.mkdir(parents=True, exist_ok=True)
    lock = lock_target(home, create=True)  # the worker's own lock, as a running worker holds it
    lock_file(lock)
    wall, cpu = [], []
    try:
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([LORE, "hook", "user-prompt-submit"], input=payload, text=True,
                           env=env, check=True, capture_output=True)
            wall.append((time.perf_counter() - t0) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    finally:
        os.close(lock)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--files", type=int, default=20_000)
    args = ap.parse_args()
    payload = json.dumps({"session_id": "s1", "cwd": "/tmp", "prompt": "add a test"})
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "plain"
        target = Path(tmp) / "big"
        for i in range(args.files):
            folder = target / f"d{i // 100}"
            if i % 100 == 0:
                folder.mkdir(parents=True)
            (folder / f"f{i}.txt").write_text("x")
        target.chmod(0o755)
        link = Path(tmp) / "link"
        link.symlink_to(target)
        rows = []
        for name, home in (("plain home", plain), (f"symlinked home, {args.files:,} files", link)):
            rows.append((name, *hook_cpu(payload, args.runs, home)))
        src = os.environ.get("PYTHONPATH", "(installed)")
        print(f"source: {src}")
        for name, wall, cpu in rows:
            print(f"- {name}: CPU median {statistics.median(cpu):.1f} ms, p90 {pct(cpu, 0.9):.1f} "
                  f"ms; wall median {statistics.median(wall):.1f} ms, p90 {pct(wall, 0.9):.1f} ms "
                  f"({args.runs} runs)")
        # the results name no path of the machine: this checkout's source or another one
        here = str(Path(__file__).resolve().parents[1] / "src")
        report = Report("home_bench", **vars(args), source="this checkout" if src.split(
            os.pathsep)[0] == here else "installed" if src == "(installed)" else "another")
        for name, wall, cpu in rows:
            report.add(name, cpu, quiet=True, wall=stats(wall), baseline="plain home")
        report.write()


if __name__ == "__main__":
    main()
