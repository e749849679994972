"""Run the speed benchmarks: every one at the size `make bench` uses, or at toy size.

    python -m bench                    # every speed benchmark (results in bench/results/)
    python -m bench search_bench       # some of them
    python -m bench --toy              # each at toy size: does it still run (the smoke test)
    python -m bench --list

Each benchmark is also a module of its own with more options (``python -m bench.NAME --help``);
the quality measurements (bench/quality, bench/locomo) need data and are run by hand.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = "tests/fixtures/transcripts"

# name: (arguments for `make bench`, arguments at toy size)
SUITE: dict[str, tuple[list[str], list[str]]] = {
    "search_bench": (["--sizes", "10000", "--queries", "50", "--cold-runs", "5",
                      "--import-size", "200"],
                     ["--sizes", "300", "--queries", "3", "--cold-runs", "1", "--import-size", "30"]),
    "cli_bench": ([], ["--runs", "1", "--lessons", "5"]),
    "embed_cli_bench": (["--runs", "5"], ["--runs", "1", "--lessons", "5"]),
    "hook_bench": (["--runs", "30"], ["--runs", "2", "--events", "50"]),
    "home_bench": ([], ["--runs", "2", "--files", "100"]),
    "statusline_bench": ([], ["--runs", "2", "--lessons", "20", "--waiting", "5"]),
    "steer_bench": ([], ["--runs", "2", "--lessons", "200"]),
    "redact_bench": (["--transcripts", TRANSCRIPTS],
                     ["--transcripts", TRANSCRIPTS, "--runs", "1", "--seeds", "1"]),
    "apply_bench": ([], ["--runs", "2", "--rules", "10"]),
    "apply_cli_bench": ([], ["--runs", "1", "--rules", "10"]),
    "context_bench": ([], ["--rules", "10", "--runs", "3"]),
    "review_bench": ([], ["--items", "20", "--runs", "1"]),
    "detector_bench": ([], ["--runs", "1"]),
    "significance_bench": ([], ["--files", "20", "--runs", "2"]),
    "mcp_bench": ([], ["--size", "100", "--queries", "3", "--startups", "1"]),
    "serve_bench": ([], ["--size", "200", "--queries", "3", "--pages", "1"]),
    "sync_bench": ([], ["--events", "400", "--lessons", "3", "--runs", "1", "--batch", "100"]),
    "body_gate_bench": (["--mb", "100"], ["--mb", "2"]),
    "wal_bench": ([TRANSCRIPTS], [TRANSCRIPTS, "--runs", "1"]),
    "conversation_bench": (["--transcripts", TRANSCRIPTS, "--chunks", "5000", "--queries", "50",
                            "--big-mb", "10"],
                           ["--transcripts", TRANSCRIPTS, "--chunks", "300", "--queries", "3",
                            "--big-mb", "1"]),
    "length_cost_bench": (["--chunks", "20000"],
                          ["--chunks", "500", "--candidates", "20", "--runs", "5"]),
    "vector_stage_bench": (["--sizes", "100000", "--queries", "100"],
                           ["--sizes", "2000", "--queries", "3", "--graph-max", "2000",
                            "--rescore", "200", "--ef", "64", "--graph-dtype", "i8"]),
    "scale_bench": (["--sizes", "100000", "--queries", "100"],
                    ["--sizes", "1000", "--queries", "3", "--cold", "1"]),
    "postgres_bench": (["--sizes", "10000", "--embedded", "1000"],
                       ["--sizes", "300", "--queries", "3", "--embedded", "30"]),
    "postgres_scale_bench": (["--sizes", "10000"], ["--sizes", "1000", "--queries", "3"]),
}


# At toy size the scale corpus mixes the vectors of 100 embedded texts, not of 1,000.
TOY_ENV = {"LORE_BENCH_BASE": "100"}


def command(name: str, toy: bool) -> list[str]:
    default, small = SUITE[name]
    return [sys.executable, "-m", f"bench.{name}", *(small if toy else default)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    ap.add_argument("--toy", action="store_true", help="each at toy size (seconds, not minutes)")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(SUITE))
        return 0
    unknown = [n for n in args.names if n not in SUITE]
    if unknown:
        print(f"unknown benchmark: {', '.join(unknown)} (python -m bench --list)", file=sys.stderr)
        return 2
    failed = []
    for name in args.names or list(SUITE):
        print(f"\n## {name}", flush=True)
        start = time.monotonic()
        env = {**os.environ, **(TOY_ENV if args.toy else {})}
        code = subprocess.run(command(name, args.toy), cwd=ROOT, env=env).returncode
        print(f"({name}: {time.monotonic() - start:.0f} s, exit {code})", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
