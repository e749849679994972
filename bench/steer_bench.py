"""What the trust check on learned rules costs the SessionStart hook (lore.extract.steer).

    python -m bench.steer_bench [--runs 40] [--lessons 10000] [--baseline-src OLD/src]

A home with 10,000 lessons (``--lessons``), among them 120 learned rules of the project (60
active, 60 proposed and seen twice; each with its ``metadata.learning``). Whole `lore hook
session-start` processes, interleaved with `python -c pass` and, with ``--baseline-src``,
with the same hook of the Lore in that source folder (the version before the check), one of
each in turn. Then the check alone, in process: ``held`` and ``neutral`` over every rule.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Report, stats
from bench.hook_bench import LORE


def build_home(home: str, lessons: int = 10_000) -> None:
    import random

    from lore.api import Lore
    from lore.config import load_config
    from lore.ids import new_id

    class NoEmbedder:  # SessionStart never embeds
        name = "none"
        dimensions = 4

        def embed_documents(self, texts):
            import numpy as np

            return np.ones((len(texts), 4), dtype=np.float32) / 2

    rng = random.Random(5)
    os.environ["LORE_HOME"] = home
    lines = []
    for i in range(max(lessons, 120)):
        learned = i < 120
        lines.append(json.dumps({
            "id": new_id(), "title": f"Use tool {i} instead of tool {i + 1} for topic {i % 97}",
            "content": "Because the build needs it. " * 6,
            "kind": "preference" if learned else rng.choice(["learning", "pattern", "bug_fix"]),
            "project": "/work/shop" if learned or i % 3 else None,
            "status": ("active" if i < 60 else "proposed") if learned else rng.choice(
                ["active", "proposed"]),
            "preference": {"preferred": f"tool {i}", "rejected": f"tool {i + 1}"},
            **({"metadata": {"learning": {"occurrences": 3, "sessions": ["a", "b", "c"],
                                          "untyped": "", "explicit": True}}} if learned else {})}))
    with Lore.open(load_config(), embedder=NoEmbedder()) as lore:
        lore.lessons.import_lines(lines)


def hook_runs(payload: dict, runs: int, home: str, baseline_src: str | None
              ) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and child CPU milliseconds of `python -c pass`, the hook, and the baseline's hook,
    one of each in turn."""
    import resource
    import subprocess

    env = dict(os.environ, LORE_HOME=home, LORE_WORKER_AUTOSTART="0")
    cases = [("`python -c pass`", [sys.executable, "-c", "pass"], env),
             ("`lore hook session-start`", [LORE, "hook", "session-start"], env)]
    if baseline_src:
        cases.append(("`lore hook session-start` [baseline source]",
                      [LORE, "hook", "session-start"], dict(env, PYTHONPATH=baseline_src)))
    out: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label, _, _ in cases}
    data = json.dumps(payload)
    for _ in range(runs):
        for label, argv, case_env in cases:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            done = subprocess.run(argv, input=data, text=True, env=case_env, check=True,
                                  capture_output=True)
            out[label][0].append((time.perf_counter() - t0) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            out[label][1].append(((after.ru_utime - before.ru_utime)
                                  + (after.ru_stime - before.ru_stime)) * 1000)
            if "hook" in label and "additionalContext" not in done.stdout:
                raise SystemExit(f"{label} printed no context: {done.stdout[:200]!r}")
    return out


def check_alone(runs: int) -> list[float]:
    """Microseconds to check and neutralise the 120 rules (what the hook adds per session)."""
    from lore.extract.steer import held, neutral

    meta = {"occurrences": 3, "untyped": "", "explicit": True}
    texts = [f"Use tool {i} instead of tool {i + 1} for topic {i % 97} "
             + "Because the build needs it. " * 6 for i in range(120)]
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for text in texts:
            held(json.loads(json.dumps(meta)), text)
            neutral(text)
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--lessons", type=int, default=10_000, help="lessons in the home (120 or more)")
    ap.add_argument("--baseline-src", help="The Lore source folder before the check.")
    args = ap.parse_args()
    import compileall

    import lore

    compileall.compile_dir(Path(lore.__file__).parent, quiet=1)
    if args.baseline_src:
        compileall.compile_dir(Path(args.baseline_src) / "lore", quiet=1)
    report = Report("steer_bench", runs=args.runs, lessons=args.lessons,
                    baseline_src=bool(args.baseline_src))
    with tempfile.TemporaryDirectory() as home:
        build_home(home, args.lessons)
        payload = {"session_id": "s", "cwd": "/work/shop", "source": "startup"}
        times = hook_runs(payload, args.runs, home, args.baseline_src)
        base = next(iter(times))
        for label, (ms, cpu) in times.items():
            report.add(label, ms, baseline=None if label == base else base, cpu=stats(cpu))
    us = check_alone(args.runs * 5)
    report.add("the check alone, 120 rules (held + neutral)", us, unit="µs")
    report.write()


if __name__ == "__main__":
    main()
