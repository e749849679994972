"""Correction detector and learning pipeline throughput (the worker's side).

    python -m bench.detector_bench [--labelled FILE.jsonl] [--runs 7]

Detector: ``lore.extract.detect`` over every message (a labelled file's, or messages built
here), repeated; the hooks' pre-filter alone as a baseline in the same run. Pipeline:
``lore.learning.record`` end to end (store, detect, extract, merge with the real embedding model)
in a throwaway home.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench.harness import Report, pct, stats

SHAPES = [
    "No, don't use {a}, use {b} instead", "use {b} instead of {a}", "always use {b} for this",
    "never commit {a}", "that's not right, the {a} goes in {b}", "you didn't update the {a}",
    "from now on use {b}", "can you add {a} to the {b} page?", "thanks, looks good",
    "run the tests again", "no it still doesn't work", "what does {a} do?",
    "I prefer {b} over {a} in this repo", "stop adding {a} everywhere",
]
WORDS = ["Redis", "pnpm", "npm", "httpx", "requests", "the changelog", "tabs", "the README",
         "jq", "grep", "file sessions", "Postgres", "the header", "type hints", "mocks"]


def messages(path: Path | None) -> list[tuple[str, str | None]]:
    if path:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [(r["text"], r.get("prev_agent")) for r in rows]
    rng = random.Random(5)
    return [(rng.choice(SHAPES).format(a=rng.choice(WORDS), b=rng.choice(WORDS)),
             "I'll add it now. Would you like me to run the tests?") for _ in range(500)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labelled", type=Path)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    from lore.capture.signals import might_teach
    from lore.extract.detect import detect

    msgs = messages(args.labelled)
    detect(*msgs[0])  # load the weights once
    full, cpu, pre = [], [], []
    for _ in range(args.runs):
        t0, c0 = time.perf_counter(), time.process_time()
        for m, p in msgs:
            detect(m, p)
        full.append(len(msgs) / (time.perf_counter() - t0))
        cpu.append(len(msgs) / max(time.process_time() - c0, 1e-9))
        t0 = time.perf_counter()
        for m, _ in msgs:
            might_teach(m)
        pre.append(len(msgs) / (time.perf_counter() - t0))
    print(f"- detector: median {statistics.median(full):,.0f} messages/s, slowest run "
          f"{min(full):,.0f} ({len(msgs)} messages x {args.runs} runs, one thread)")
    # On a shared machine wall time depends on the neighbours; CPU time does not.
    print(f"- detector per CPU-second: median {statistics.median(cpu):,.0f} messages")
    passed = sum(might_teach(m) for m, _ in msgs)
    print(f"- pre-filter alone (baseline, same run): median {statistics.median(pre):,.0f} messages/s; "
          f"passes {passed} of {len(msgs)} messages to the detector")
    report = Report("detector_bench", **vars(args), messages=len(msgs))
    report.add("detector", full, unit="messages/s", quiet=True, cpu=stats(cpu),
               baseline="pre-filter alone")
    report.add("pre-filter alone", pre, unit="messages/s", quiet=True, passed=passed)

    from lore.api import Lore
    from lore.config import load_config

    with tempfile.TemporaryDirectory() as home:
        os.environ["LORE_HOME"] = home
        with Lore.open(load_config()) as lore:
            learning = lore.learning
            learning.record("always use type hints", None, project="/warm")  # model load
            rng = random.Random(9)
            times = []
            for i in range(200):
                m = rng.choice(SHAPES[:8] + SHAPES[12:]).format(a=rng.choice(WORDS),
                                                                b=rng.choice(WORDS))
                t0 = time.perf_counter()
                learning.record(f"{m} ({i})", "I'll do it the usual way.", project="/p",
                                session_id=f"s{i}", asserted=False)
                times.append((time.perf_counter() - t0) * 1000)
            rules = lore.lessons.count()
    print(f"- pipeline (store, detect, extract, merge with the real model): median "
          f"{statistics.median(times):.1f} ms per message, p90 {pct(times, 0.9):.1f} ms "
          f"({1000 / statistics.median(times):.0f} messages/s; 200 messages -> {rules} rules)")
    report.add("pipeline with the real model, per message", times, quiet=True, rules=rules)
    report.write()


if __name__ == "__main__":
    main()
