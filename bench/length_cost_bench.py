"""What the length prior and the question penalty cost conversation search: reading each
candidate's word count and last characters (their only new work).

    python -m bench.length_cost_bench [--chunks 100000] [--candidates 200] [--runs 300]

Builds a database of N chunks through the product (`add_turns`, one chunk a turn, sessions of
1,000 turns, texts of 5 to 4,000 characters drawn from a vocabulary), then times the ranking
metadata read of `conversations.search` (`chunk_meta` of the fused candidates: up to twice
`conversations.candidates`, random ids, their rows read once before, as the search stages
before it have) with the word count and tail and without them, interleaved, each first in turn.
Median and p90 in ms, wall and CPU (the thread's): on a loaded machine a longer step is more
often cut by another process's time slice, which the wall p90 shows and the CPU time does not.
The database is built in a temporary folder and removed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench.harness import Report, pct, stats
from lore.api import Lore
from lore.config import Config, Settings
from lore.store.sqlite import conversations as sqlconv

WORDS = ("cache deploy build kafka redis nginx timeout retry schema migration index query test "
         "fixture worker queue lock thread socket token config branch commit merge rebase "
         "the a of to and in is it that for on with as was at by this we you").split()


WHOLE = "length(text) - length(replace(replace(text, ' ', ''), '\n', '')) + 1"
WHOLE_TAIL = ("CASE WHEN length(rtrim(text)) > 16 THEN substr(rtrim(text), length(rtrim(text)) - 15) "
              "ELSE rtrim(text) END")


def text(rng: random.Random) -> str:
    n = int(min(4000, max(5, rng.lognormvariate(5.0, 1.1))))  # median about 150 characters
    out: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    lines = [" ".join(out[i:i + 12]) for i in range(0, len(out), 12)]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--candidates", type=int, default=200)
    ap.add_argument("--runs", type=int, default=300)
    args = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="lore-length-") as tmp:
        settings = Settings(config=Config(), home=Path(tmp), config_path=Path(tmp) / "c.yaml")
        settings.config.database = str(Path(tmp) / "lore.db")
        t0 = time.time()
        with Lore.open(settings) as lore:
            conv = lore.conversations
            for s in range(0, args.chunks, 1000):
                turns = [(f"s{s}-{i}", "user" if i % 2 else "assistant", text(rng),
                          "2026-11-01T10:00:00Z") for i in range(min(1000, args.chunks - s))]
                conv.add_turns(f"s{s}", "bench", f"/p{s % 7}", turns, per_turn=True)
            print(f"{args.chunks} chunks stored in {time.time() - t0:.0f} s")
            store = conv.store
            top = store.stats()["chunks"]
            saved = sqlconv.WORDS, sqlconv.TAIL
            both = [("before (neither)", ("0", "''")), ("words and tail", saved),
                    ("... of every text, however long", (WHOLE, WHOLE_TAIL))]
            times: dict[str, list[float]] = {name: [] for name, _ in both}
            cpu: dict[str, list[float]] = {name: [] for name, _ in both}
            for run in range(args.runs):
                ids = rng.sample(range(1, top + 1), args.candidates)
                store.chunk_meta(ids)  # the rows in the page cache, as after the search stages
                for name, sql in both[run % 3:] + both[:run % 3]:  # each goes first in turn
                    sqlconv.WORDS, sqlconv.TAIL = sql
                    t, c = time.perf_counter(), time.thread_time()
                    store.chunk_meta(ids)
                    times[name].append(1000 * (time.perf_counter() - t))
                    cpu[name].append(1000 * (time.thread_time() - c))
            sqlconv.WORDS, sqlconv.TAIL = saved
    report = Report("length_cost_bench", **vars(args))
    for name, xs in times.items():
        ys = cpu[name]
        print(f"chunk_meta of {args.candidates} candidates, {name}: wall median "
              f"{statistics.median(xs):.2f} ms, p90 {pct(xs, 0.9):.2f} ms; CPU median "
              f"{statistics.median(ys):.2f} ms, p90 {pct(ys, 0.9):.2f} ms")
        label = f"chunk_meta of {args.candidates} candidates, {{}}".format
        report.add(label(name), xs, quiet=True, cpu=stats(ys),
                   baseline=None if name == both[0][0] else label(both[0][0]))
    report.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
