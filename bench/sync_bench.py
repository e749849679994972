"""`lore sync` over loopback: one device pushes 10,000 events to a real `lore serve` (Uvicorn,
a second home) and pulls; the baseline of the same run is a sync with nothing to send (one
round trip: the server's info and an empty pull).

    python -m bench.sync_bench                      # 10,000 events, 5 runs
    python -m bench.sync_bench --events 2000 --runs 3

The events: captured corrections, conversation messages (in sessions of 100), the agent's
edits, and lessons a person approved (embedded by the server with the real model, warm).
Each run starts from two fresh homes; building them is not timed. Printed as Markdown for
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from bench.harness import Report, pct, serving, settings
from lore.api import Lore
from lore.config import EmbeddingConfig
from lore.core.sync.client import Client, run
from lore.embed import create_embedder


def fill(lore: Lore, events: int, lessons: int) -> dict[str, int]:
    """``events`` in all: lessons, then 40 % corrections, 50 % messages, the rest edits."""
    corrections = events * 4 // 10
    messages = events // 2
    edits = events - lessons - corrections - messages
    for i in range(lessons):
        lore.lessons.add(f"Approved rule {i}: prefer helper_{i} over ad-hoc code",
                        f"The user asked for helper_{i} in module {i % 17}.", kind="preference",
                        status="active", tags=["bench"])
    store = lore.store
    with store.atomic():
        for i in range(corrections):
            store.corrections.add_correction(
                event_id=f"ev-{i}", session_id=f"s-{i // 100}", project="/srv/app",
                user_message=f"no, call helper_{i} instead; the old one leaks file handles",
                proposal=f"I will add a new function number {i}", files=["app/core.py"],
                at=f"2026-11-01T10:{i % 60:02d}:00.000Z", origin="hook")
    for s in range(0, messages, 100):
        lore.conversations.add_turns(f"s-{s // 100}", "claude-code", "/srv/app", [
            (f"m-{i}", "user" if i % 2 else "assistant",
             f"turn {i}: let us refactor helper_{i} and keep the tests green", None)
            for i in range(s, min(s + 100, messages))])
    with store.atomic():
        for i in range(edits):
            store.conversations.insert_edit({
                "session_id": f"s-{i % max(1, messages // 100)}", "message_uuid": f"m-{i}",
                "tool": "Edit", "file_path": f"/srv/app/mod_{i % 50}.py", "file_type": "py",
                "old_text": f"x = {i}", "new_text": f"x = {i + 1}", "timestamp": None,
                "succeeded": 1})
    return {"lessons": lessons, "corrections": corrections, "messages": messages, "edits": edits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--lessons", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()

    real = create_embedder(EmbeddingConfig())
    real.embed_query("warm up")
    full: list[float] = []
    empty: list[float] = []
    shape: dict[str, int] = {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            with Lore.open(settings(root / "device"), embedder=real) as device, \
                    Lore.open(settings(root / "server"), embedder=real) as server:
                shape = fill(device, args.events, args.lessons)
                server.search.warm()
                with serving(server) as url:
                    client = Client(url, None)
                    start = time.perf_counter()
                    report = run(device.sync, client, batch_size=args.batch)
                    full.append(time.perf_counter() - start)
                    assert sum(report.pushed.values()) == args.events, report.pushed
                    assert report.stored == args.events + args.events // 2 // 100, report.stored
                    for _ in range(5):
                        start = time.perf_counter()
                        again = run(device.sync, client, batch_size=args.batch)
                        empty.append(time.perf_counter() - start)
                        assert again.batches == 0
                    client.close()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.events:,} events ({', '.join(f'{v:,} {k}' for k, v in shape.items())}), "
          f"batches of {args.batch}, {args.runs} runs, {platform.processor() or platform.machine()}, "
          f"load average {load:.1f}\n")
    print("| sync | median s | p90 s |")
    print("|---|---|---|")
    print(f"| push {args.events:,} events + pull | {statistics.median(full):.2f} | "
          f"{pct(full, 0.9):.2f} |")
    print(f"| baseline: nothing to send (info + empty pull) | {statistics.median(empty):.3f} | "
          f"{pct(empty, 0.9):.3f} |")
    results = Report("sync_bench", **vars(args), shape=shape)
    results.add(f"push {args.events:,} events + pull", full, unit="s", quiet=True,
                baseline="nothing to send (info + empty pull)")
    results.add("nothing to send (info + empty pull)", empty, unit="s", quiet=True)
    results.write()


if __name__ == "__main__":
    main()
