"""MCP server benchmarks through a real client over stdio (the official SDK's Client).

    python -m bench.mcp_bench                # start-up to initialize; search at 10,000 lessons
    python -m bench.mcp_bench --size 2000 --queries 50
    python -m bench.mcp_bench --first-list-only --startups 21

Start-up is measured from spawning `lore mcp` to a completed `initialize` handshake.
First list: from spawning the server to the answer of `tools/list` sent right after
`initialize` (what a client that waits for the tools before its first model request waits
for), over raw pipes, for `lore mcp` (the default profile and ``admin``) and, interleaved in
the same run, a bare server on the MCP SDK with one tool (bench/mcp_bare_server.py): the
SDK's own cost. The tool schemas' size per profile is printed too.
Search is `lore_search` called through the client once the server is warm (model and
vectors loaded), including JSON-RPC over the pipes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from bench.corpus import make_queries
from bench.harness import Report, pct
from bench.search_bench import build
from lore.config import EmbeddingConfig
from lore.embed import create_embedder

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


def first_list(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(ms to the initialize answer, ms to the tools/list answer, CPU ms the process used
    until it was told to stop) from spawning ``cmd``. CPU time is what the server costs
    whatever else the machine runs; the wall times are what a client waits on this one."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: dict) -> None:
        proc.stdin.write((json.dumps(obj) + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    json.loads(proc.stdout.readline())
    t1 = time.perf_counter()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert json.loads(proc.stdout.readline())["result"]["tools"]
    t2 = time.perf_counter()
    proc.kill()
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = -9
    proc.stdin.close()
    proc.stdout.close()
    return (t1 - t0) * 1000, (t2 - t0) * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def first_list_report(home: Path, runs: int, before: str | None = None) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env["LORE_HOME"] = str(home)
    bare = [sys.executable, str(Path(__file__).parent / "mcp_bare_server.py")]
    servers = {"bare MCP SDK server, one tool": bare, "`lore mcp` (session)": [LORE, "mcp"],
               "`lore mcp --profile admin`": [LORE, "mcp", "--profile", "admin"]}
    if before:  # another Lore's src/ folder, e.g. an earlier commit's (git archive)
        servers["`lore mcp` of --before"] = [sys.executable, "-m", "lore", "mcp"]
    got: dict[str, list[tuple[float, float, float]]] = {name: [] for name in servers}
    for _ in range(runs):  # interleaved: every server sees the same machine load
        for name, cmd in servers.items():
            run_env = env
            if name.endswith("--before"):
                run_env = {**env, "PYTHONPATH": str(before)}
            got[name].append(first_list(cmd, run_env))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    for name, times in got.items():
        print(f"- {name}: initialize {summary([a for a, _, _ in times])}; "
              f"tools/list {summary([b for _, b, _ in times])}; "
              f"CPU {summary([c for _, _, c in times])} ({runs} runs)")
    from lore.config import load_config
    from lore.mcp.server import build_server, schema_size

    for profile in ("session", "admin", "canonical", "all"):
        server, _ = build_server(load_config(), profile)
        tools = anyio.run(server.list_tools)
        print(f"- profile {profile}: {len(tools)} tools, {schema_size(tools):,} bytes of schemas")


def summary(ms: list[float]) -> str:
    return f"median {statistics.median(ms):.1f} ms, p90 {pct(ms, 0.9):.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--startups", type=int, default=15)
    ap.add_argument("--first-list-only", action="store_true",
                    help="Only the spawn-to-tools/list comparison with a bare SDK server.")
    ap.add_argument("--before", help="Also measure the Lore in this src/ folder (an earlier "
                    "version, e.g. `git archive COMMIT src | tar -x -C DIR`, then DIR/src).")
    args = ap.parse_args()
    if args.first_list_only:
        with tempfile.TemporaryDirectory() as tmp:
            first_list_report(Path(tmp), args.startups, args.before)
        return
    real = create_embedder(EmbeddingConfig())
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        build(home, args.size, real)
        start = anyio.run(startup_times, home, args.startups)
        print(f"- `lore mcp` spawn to completed initialize ({args.startups} runs): {summary(start)}")
        report = Report("mcp_bench", **vars(args))
        report.add("lore mcp spawn to completed initialize", start, quiet=True)
        searches, first = anyio.run(search_times, home, make_queries(args.queries))
        print(f"- lore_search through the SDK client over stdio at {args.size:,} lessons, warm "
              f"({args.queries} queries): {summary(searches)}; first call after start "
              f"{first:.0f} ms")
        report.add(f"lore_search over stdio at {args.size:,} lessons, warm", searches, quiet=True,
                   first_call_ms=round(first, 1))
        report.write()


if __name__ == "__main__":
    main()
