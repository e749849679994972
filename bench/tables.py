"""The results of the speed benchmarks as the tables of docs/benchmarks.md.

    python -m bench.tables                                # every bench/results/*.json, in Markdown
    python -m bench.tables search_bench                   # one of them
    python -m bench.tables --write docs/benchmarks.md     # rewrite the generated blocks of a page
    python -m bench.tables --check docs/benchmarks.md     # exit 1 if a block is not its results'

Each table has a row per measured figure: median and p90 with the number of runs, the CPU
median where the benchmark measured the process's CPU time, and the ratio of medians to the row
the benchmark names as its baseline in the same run; single figures (sizes, rates, recall) are
given as they are. In a page, a benchmark's table sits between ``<!-- bench:NAME -->`` and
``<!-- /bench -->``; ``--write`` replaces what is between them with the table of
``bench/results/NAME.json`` and leaves the rest of the page (the analysis) as it is.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from bench.harness import results_dir

BLOCK = re.compile(r"(<!-- bench:(\w+) -->\n)(.*?)(<!-- /bench -->)", re.S)


def number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"


def cell(value: Any) -> str:
    return number(value) if isinstance(value, float) else str(value)


def table(data: dict[str, Any]) -> str:
    rows = {r["label"]: r for r in data["rows"]}
    params = ", ".join(f"{k} {v}" for k, v in data.get("params", {}).items() if v not in (None, False))
    machine = data.get("machine", {})
    cpu = any(isinstance(r.get("cpu"), dict) for r in data["rows"])
    lines = [f"`{data['bench']}`, {data.get('started', '')[:10]}: {params or 'defaults'}; "
             f"{machine.get('cpus', '?')} cores at load {machine.get('load', '?')}, "
             f"Python {machine.get('python', '?')}", "",
             "| | median | p90 | runs |" + (" CPU median |" if cpu else "")
             + " × baseline (medians) |", "|---|---|---|---|" + ("---|" if cpu else "") + "---|"]
    for row in data["rows"]:
        unit = row.get("unit", "")
        if "median" not in row:
            value = f"{cell(row['value'])} {unit}".rstrip()
            lines.append(f"| {row['label']} | {value} | | |" + (" |" if cpu else "") + " |")
            continue
        base = rows.get(row.get("baseline") or "")
        ratio = f"{row['median'] / base['median']:.2f}" if base and base.get("median") else ""
        used = row.get("cpu") if isinstance(row.get("cpu"), dict) else None
        lines.append(f"| {row['label']} | {number(row['median'])} {unit} | {number(row['p90'])} {unit} "
                     f"| {row['runs']} |" + (f" {number(used['median'])} {unit} |" if used else
                                              " |" if cpu else "") + f" {ratio} |")
    return "\n".join(lines) + "\n"


class MissingResults(Exception):
    pass


def rewrite(page: str, folder: Path) -> str:
    """``page`` with every generated block replaced by the table of its results in ``folder``."""
    missing = sorted({name for _, name, _, _ in BLOCK.findall(page)
                      if not (folder / f"{name}.json").is_file()})
    if missing:
        raise MissingResults(", ".join(missing))

    def fill(m: re.Match[str]) -> str:
        data = json.loads((folder / f"{m.group(2)}.json").read_text())
        return m.group(1) + table(data) + m.group(4)

    return BLOCK.sub(fill, page)


def blocks(page: str) -> list[str]:
    """The benchmarks whose tables ``page`` holds, in order."""
    return [name for _, name, _, _ in BLOCK.findall(page)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmarks (default: every result)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", type=Path, metavar="PAGE",
                      help="rewrite the page's generated blocks from the results")
    mode.add_argument("--check", type=Path, metavar="PAGE",
                      help="exit 1 if a generated block of the page differs from its results")
    args = ap.parse_args()
    folder = results_dir()
    page_path = args.write or args.check
    if page_path is not None:
        if not page_path.is_file():
            print(f"no such page: {page_path}", file=sys.stderr)
            return 1
        page = page_path.read_text()
        if not blocks(page):
            print(f"no generated block (<!-- bench:NAME -->) in {page_path}", file=sys.stderr)
            return 1
        try:
            new = rewrite(page, folder)
        except MissingResults as e:
            print(f"no results for {e} in {folder} (make bench writes them)", file=sys.stderr)
            return 1
        stale = [n for n, a, b in zip(blocks(page), BLOCK.findall(page), BLOCK.findall(new),
                                      strict=True) if a != b]
        if args.write and new != page:
            page_path.write_text(new)
        verb = "rewritten" if args.write else "differ from their results"
        print(f"{page_path}: {len(stale)} of {len(blocks(page))} tables {verb}"
              + (f": {', '.join(stale)}" if stale else ""))
        return 1 if args.check and stale else 0
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
