"""MCP server benchmarks through a real client over stdio (the official SDK's Client).

    python bench/mcp_bench.py                # start-up to initialize; search at 10,000 lessons
    python bench/mcp_bench.py --size 2000 --queries 50

Start-up is measured from spawning `lore mcp` to a completed `initialize` handshake.
Search is `lore_search` called through the client once the server is warm (model and
vectors loaded), including JSON-RPC over the pipes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))
from corpus import make_queries  # noqa: E402
from lore.config import EmbeddingConfig  # noqa: E402
from lore.embed import create_embedder  # noqa: E402
from search_bench import build, pct  # noqa: E402

LORE = str(Path(sys.executable).parent / "lore")


def server(home: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env["LORE_HOME"] = str(home)
    return StdioServerParameters(command=LORE, args=["mcp"], env=env)


async def startup_times(home: Path, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        async with Client(server(home)):
            out.append((time.perf_counter() - t0) * 1000)
    return out


async def search_times(home: Path, queries: list[str]) -> tuple[list[float], float]:
    async with Client(server(home)) as client:
        t0 = time.perf_counter()
        await client.call_tool("lore_search", {"query": "warm up", "project": "all"})
        first = (time.perf_counter() - t0) * 1000
        for q in queries[:5]:
            await client.call_tool("lore_search", {"query": q, "project": "all"})
        out = []
        for q in queries:
            t0 = time.perf_counter()
            r = await client.call_tool("lore_search", {"query": q, "project": "all"})
            out.append((time.perf_counter() - t0) * 1000)
            assert not r.is_error, r.content
        return out, first


def summary(ms: list[float]) -> str:
    return f"median {statistics.median(ms):.1f} ms, p90 {pct(ms, 0.9):.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--startups", type=int, default=15)
    args = ap.parse_args()
    real = create_embedder(EmbeddingConfig())
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        build(home, args.size, real)
        start = anyio.run(startup_times, home, args.startups)
        print(f"- `lore mcp` spawn to completed initialize ({args.startups} runs): {summary(start)}")
        searches, first = anyio.run(search_times, home, make_queries(args.queries))
        print(f"- lore_search through the SDK client over stdio at {args.size:,} lessons, warm "
              f"({args.queries} queries): {summary(searches)}; first call after start "
              f"{first:.0f} ms")


if __name__ == "__main__":
    main()
