"""Transcript import with SQLite's default checkpointing against Lore's small write-ahead log.

    python -m bench.wal_bench FOLDER [--runs 3]

Each run imports every ``*.jsonl`` under FOLDER into a fresh home (no embeddings), once with
``wal_autocheckpoint`` 1000 pages and no size limit (SQLite's defaults) and once with Lore's
settings (``store/sqlite/db.py``), alternating; it prints the writer process's CPU time, the
wall time and the largest write-ahead log seen.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import threading
import time
from pathlib import Path

import lore.store.sqlite.db as db
from bench.harness import HashEmbedder, Report, settings, stats
from lore.api import Lore


def run(files: list[Path], pages: int, limit: int) -> tuple[float, float, int]:
    db.WAL_CHECKPOINT_PAGES, db.WAL_LIMIT_BYTES = pages, limit
    with tempfile.TemporaryDirectory() as home:
        wal = Path(home) / "lore.db-wal"
        peak = [0]
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                try:
                    peak[0] = max(peak[0], wal.stat().st_size)
                except OSError:
                    pass
                time.sleep(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        with Lore.open(settings(Path(home)), embedder=HashEmbedder()) as lore:
            lore.conversations.ingest(files, embed=False)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        done.set()
        watcher.join()
        return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, wall, peak[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    files = sorted(args.folder.rglob("*.jsonl"))
    lore_settings = (db.WAL_CHECKPOINT_PAGES, db.WAL_LIMIT_BYTES)
    measured: dict[str, list[tuple[float, float, float]]] = {"SQLite default": [], "Lore": []}
    for i in range(args.runs):
        for name, (pages, limit) in (("SQLite default", (1000, -1)), ("Lore", lore_settings)):
            cpu, wall, peak = run(files, pages, limit)
            measured[name].append((cpu, wall, peak))
            print(f"run {i + 1}, {name}: CPU {cpu:.2f} s (the watcher thread included), wall "
                  f"{wall:.2f} s, largest WAL {peak / 1e6:.1f} MB")
    report = Report("wal_bench", **vars(args), files=len(files))
    for name, rows in measured.items():
        report.add(f"import, {name}: CPU", [r[0] for r in rows], unit="s", quiet=True,
                   wall=stats([r[1] for r in rows]), largest_wal_mb=round(max(r[2] for r in rows) / 1e6, 1),
                   baseline=None if name == "SQLite default" else "import, SQLite default: CPU")
    report.write()


if __name__ == "__main__":
    main()
