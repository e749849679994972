"""`lore serve` latency at 10,000 lessons: warm API search through a real Uvicorn server, and
each dashboard page, measured server-side (the Server-Timing header) and end to end (httpx).

    python -m bench.serve_bench                  # 10,000 lessons, 200 searches
    python -m bench.serve_bench --size 2000 --queries 50

The lessons and their cached embeddings come from bench/search_bench.py (bench/corpus.py);
query embeddings are computed live by the real model and are part of the measured time.
Results are printed as Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.corpus import make_queries
from bench.harness import Report, pct, serving, stats
from bench.search_bench import build
from lore.api import Lore
from lore.config import EmbeddingConfig
from lore.embed import create_embedder
from lore.models import Filters


def server_ms(response: httpx.Response) -> float:
    return float(response.headers["server-timing"].split("dur=")[1])


REPORT = Report("serve_bench")


def row(name: str, server: list[float], total: list[float]) -> str:
    REPORT.add(name, total, quiet=True, server=stats(server),
               baseline=None if name.startswith("baseline") else "baseline: query embedding alone")
    return (f"| {name} | {statistics.median(server):.1f} | {pct(server, 0.9):.1f} | "
            f"{statistics.median(total):.1f} | {pct(total, 0.9):.1f} |")


def timed(client: httpx.Client, path: str, **params: object) -> tuple[float, float]:
    start = time.perf_counter()
    response = client.get(path, params=params)  # type: ignore[arg-type]
    total = (time.perf_counter() - start) * 1000
    response.raise_for_status()
    return server_ms(response), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pages", type=int, default=30, help="requests per dashboard page")
    args = parser.parse_args()

    real = create_embedder(EmbeddingConfig())
    real.embed_query("warm up")
    with tempfile.TemporaryDirectory() as tmp:
        settings, took = build(Path(tmp), args.size, real)
        print(f"built {args.size} lessons in {took:.1f} s", file=sys.stderr)
        with Lore.open(settings, embedder=real) as lore:
            _, some = lore.lessons.list(Filters(), 40)
            ids = [r["id"] for r in some]
            for a, b in zip(ids, ids[1:], strict=False):  # a chain: lesson pages draw a graph
                lore.lessons.link(a, b, "related_to")
            # Learned rules for the review queue and the digests: 60 corrections, 30 rules.
            for i in range(60):
                lore.learning.record(f"No, don't use library{i % 30} here, use tool{i % 30} instead",
                                    f"I'll add library{i % 30} to the module.", project=f"/srv/p{i % 4}",
                                    session_id=f"bench-{i}")
            lore.search.warm()
            queries = make_queries(args.queries)
            with serving(lore) as url, httpx.Client(base_url=url, timeout=60) as client:
                for q in queries[:10]:
                    timed(client, "/api/v1/search", q=q)
                server, total = zip(*(timed(client, "/api/v1/search", q=q, explain="true")
                                      for q in queries), strict=True)
                lines = [row("API search (hybrid, explain)", list(server), list(total))]
                # Baselines in the same run: the facade's search in-process, and the query
                # embedding alone (the machine's load moves every figure together).
                inproc, embed = [], []
                for q in queries:
                    t0 = time.perf_counter()
                    lore.search.query(q)
                    inproc.append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    real.embed_query(q)
                    embed.append((time.perf_counter() - t0) * 1000)
                lines.append(row("baseline: Lore.recall in-process", inproc, inproc))
                lines.append(row("baseline: query embedding alone", embed, embed))
                pages = {"search page": ("/", {"q": "connection pool timeout"}),
                         "lessons list": ("/lessons", {}),
                         "lesson page (graph, depth 2)": (f"/lessons/{ids[10]}", {}),
                         "rules": ("/rules", {}),
                         "stats": ("/stats", {}),
                         "review queue": ("/review", {}),
                         "trends (week digest, charts)": ("/trends", {}),
                         "trends (month)": ("/trends", {"period": "month"}),
                         "API lessons list": ("/api/v1/lessons", {"limit": 50}),
                         "API stats": ("/api/v1/stats", {})}
                for name, (path, params) in pages.items():
                    timed(client, path, **params)
                    s, t = zip(*(timed(client, path, **params) for _ in range(args.pages)),
                               strict=True)
                    lines.append(row(name, list(s), list(t)))
    print(f"\n{args.size:,} lessons, {args.queries} searches, {args.pages} requests per page; "
          f"{platform.processor() or platform.machine()}, Python {platform.python_version()}\n")
    print("| request | server median ms | server p90 ms | end-to-end median ms | end-to-end p90 ms |")
    print("|---|---|---|---|---|")
    print("\n".join(lines))
    REPORT.params.update(vars(args))
    REPORT.write()


if __name__ == "__main__":
    main()
