"""The results of the speed benchmarks as the tables of docs/benchmarks.md.

    python -m bench.tables                 # every bench/results/*.json, in Markdown
    python -m bench.tables search_bench    # one of them

Each table has a row per measured figure: median and p90 with the number of runs, and the ratio
of medians to the row the benchmark names as its baseline in the same run; single figures
(sizes, rates, recall) are given as they are. The analysis around them stays hand-written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.harness import results_dir


def number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"


def table(data: dict[str, Any]) -> str:
    rows = {r["label"]: r for r in data["rows"]}
    params = ", ".join(f"{k} {v}" for k, v in data.get("params", {}).items() if v not in (None, False))
    machine = data.get("machine", {})
    lines = [f"### `{data['bench']}` ({data.get('started', '')[:10]})", "",
             f"{params}; {machine.get('cpus', '?')} cores, load {machine.get('load', '?')}, "
             f"Python {machine.get('python', '?')}", "",
             "| | median | p90 | runs | × baseline (medians) |", "|---|---|---|---|---|"]
    for row in data["rows"]:
        unit = row.get("unit", "")
        if "median" not in row:
            lines.append(f"| {row['label']} | {row['value']} {unit} | | | |".replace("  |", " |"))
            continue
        base = rows.get(row.get("baseline") or "")
        ratio = f"{row['median'] / base['median']:.2f}" if base and base.get("median") else ""
        lines.append(f"| {row['label']} | {number(row['median'])} {unit} | {number(row['p90'])} {unit} "
                     f"| {row['runs']} | {ratio} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmarks (default: every result)")
    args = ap.parse_args()
    folder = results_dir()
    paths = [folder / f"{n}.json" for n in args.names] or sorted(folder.glob("*.json"))
    missing = [p.stem for p in paths if not p.is_file()]
    if missing or not paths:
        print(f"no results for {', '.join(missing) or 'any benchmark'} in {folder} "
              "(make bench writes them)", file=sys.stderr)
        return 1
    print("\n".join(table(json.loads(Path(p).read_text())) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
