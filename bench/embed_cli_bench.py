"""Commands that embed, as whole processes: time to the first result, the model's load, and how
many times a process loads it, against `lore --version` in the same run.

    python -m bench.embed_cli_bench [--runs 10] [--lessons 100] [--before-src DIR]

A temporary home gets ``--lessons`` lessons and the conversations of
tests/fixtures/transcripts (imported and embedded by the real model). Then each command runs as
its own process, round after round so that a busy moment falls on all alike, bytecode cached as
a user has it. Two variants of the model's load run interleaved in the same rounds:

- ``cached``: the optimised graph of the packaged model kept in the user's cache folder
  (``$XDG_CACHE_HOME``, a folder of this run; written by the first load) and loaded without
  optimising again;
- ``uncached``: ``$XDG_CACHE_HOME`` names a file, so nothing can be cached and every process
  optimises the graph while it loads (the behaviour before the cache).

- ``before`` (with ``--before-src DIR``, the ``src`` folder of an earlier version, e.g.
  ``git archive main src | tar -x -C /tmp/before``): that version's code, same home.

None sets a ``LORE_*`` variable: a home with nothing configured starts as a user's does.

Reported per command and variant: the time to the first byte on stdout (the first result) and
the whole process (median and p90), its CPU time (user + system, median), which a busy machine
disturbs less. One more run of each, instrumented (``--probe``), counts the ONNX Runtime
sessions created and the time spent creating them.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.abc
import importlib.machinery
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import Report, pct, stats

ROOT = Path(__file__).resolve().parents[1]
QUERY = "why did the build fail with a timeout"
COMMANDS: list[tuple[str, list[str]]] = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ("lore --version", ["--version"]),
    ("lore search", ["search", QUERY]),
    ("lore recall conversations", ["recall", "conversations", QUERY, "--project", "all"]),
    ("lore learn add", ["learn", "add", "Run the linter before pushing {n}",
                        "It catches unused imports {n}", "--json"]),
    ("lore learn correction", ["learn", "correction",
                               "No, don't retry forever, give up after three tries {n}",
                               "--global", "--json"]),
]
EMBEDS = {"lore search", "lore recall conversations", "lore learn add",
          "lore learn correction"}


# ---- the instrumented process (--probe) --------------------------------------------------

class _CountSessions(importlib.abc.MetaPathFinder):
    """Wraps onnxruntime.InferenceSession once onnxruntime is imported (not before: the
    probe must not import it for commands that never do)."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "onnxruntime":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader, record = spec.loader, self.record

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)  # type: ignore[attr-defined]
                real = module.InferenceSession

                class Counted(real):  # type: ignore[misc, valid-type]
                    def __init__(self, *args: Any, **kwargs: Any) -> None:
                        start = time.perf_counter()
                        super().__init__(*args, **kwargs)
                        record["sessions"] += 1
                        record["session_ms"] += (time.perf_counter() - start) * 1000

                module.InferenceSession = Counted
                record["onnxruntime_imported"] = True

        spec.loader = Loader()
        return spec


def probe(out: str, argv: list[str]) -> None:
    record: dict[str, Any] = {"sessions": 0, "session_ms": 0.0, "onnxruntime_imported": False}
    sys.meta_path.insert(0, _CountSessions(record))
    atexit.register(lambda: Path(out).write_text(json.dumps(record)))
    from lore.cli import main as lore_main

    sys.argv = ["lore", *argv]
    lore_main()


# ---- the runs ----------------------------------------------------------------------------

def seed(home: Path, lessons: int) -> None:
    env = {**os.environ, "LORE_HOME": str(home), "LORE_WORKER_AUTOSTART": "0"}
    code = ("import os\nfrom lore.api import Lore\nfrom lore.config import load_config\n"
            f"with Lore.open(load_config()) as lore:\n    for i in range({lessons}):\n"
            "        lore.lessons.add(f'Use tool {i} for build step {i % 17}', "
            "f'Because of timeout reason {i}.', kind='preference', tags=[f't{i % 9}'])\n")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    subprocess.run([sys.executable, "-m", "lore", "ingest", "--wait",
                    str(ROOT / "tests" / "fixtures" / "transcripts")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(ms to the first byte on stdout, ms to the end, CPU ms of the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.read(1)
    first = time.perf_counter() - start
    proc.stdout.read()
    proc.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return first * 1000, wall * 1000, cpu * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--lessons", type=int, default=100)
    ap.add_argument("--before-src", help="the src folder of the version to compare with")
    ap.add_argument("--probe", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe:
        probe(args.probe[0], args.probe[1:])
        return
    lore = str(Path(sys.executable).parent / "lore")
    variants = ["cached", "uncached"] + (["before"] if args.before_src else [])
    with tempfile.TemporaryDirectory(prefix="lore-embed-bench-") as tmp:
        home = Path(tmp) / "home"
        no_cache = Path(tmp) / "not-a-folder"
        no_cache.write_text("")
        envs = {"cached": {"XDG_CACHE_HOME": str(Path(tmp) / "cache")},
                "uncached": {"XDG_CACHE_HOME": str(no_cache)},
                "before": {"XDG_CACHE_HOME": str(no_cache),
                           "PYTHONPATH": str(Path(args.before_src or ".").resolve())}}
        base = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONDONTWRITEBYTECODE", "LORE_MODEL_CACHE")}
        base |= {"LORE_HOME": str(home), "LORE_WORKER_AUTOSTART": "0"}
        seed(home, args.lessons)
        n = 0

        def argv_of(argv: list[str]) -> list[str]:
            return argv if argv[0] == sys.executable else [
                lore, *(a.replace("{n}", str(n)) for a in argv)]

        for variant in variants:  # warm the bytecode, the page cache and the model cache
            for _, argv in COMMANDS:
                n += 1
                timed(argv_of(argv), base | envs[variant])
        firsts: dict[tuple[str, str], list[float]] = {}
        walls: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.runs):
            for variant in variants:
                for name, argv in COMMANDS:
                    if name not in EMBEDS and variant != variants[0]:
                        continue
                    n += 1
                    f, w, c = timed(argv_of(argv), base | envs[variant])
                    firsts.setdefault((name, variant), []).append(f)
                    walls.setdefault((name, variant), []).append(w)
                    cpus.setdefault((name, variant), []).append(c)
        probes: dict[tuple[str, str], dict[str, Any]] = {}
        for variant in variants:
            for name, argv in COMMANDS:
                if argv[0] == sys.executable or (name not in EMBEDS and variant != variants[0]):
                    continue
                n += 1
                out = Path(tmp) / "probe.json"
                subprocess.run([sys.executable, "-m", "bench.embed_cli_bench", "--probe", str(out),
                                *argv_of(argv)[1:]], env=base | envs[variant],
                               cwd=Path(__file__).resolve().parents[1],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
                probes[(name, variant)] = json.loads(out.read_text())
        cache = Path(tmp) / "cache"
        size = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) if cache.exists() else 0
        shutil.rmtree(cache, ignore_errors=True)
    base_wall = statistics.median(walls[("lore --version", variants[0])])
    print(f"{args.runs} rounds; load average {os.getloadavg()[0]:.1f}; model cache "
          f"{size / 1e6:.0f} MB")
    print("| command | variant | first result median / p90 | process median / p90 | "
          "CPU median | x --version (wall) | ONNX sessions, ms creating them |")
    print("|---|---|---|---|---|---|---|")
    for (name, variant), values in walls.items():
        pr = probes.get((name, variant))
        made = f"{pr['sessions']}, {pr['session_ms']:.0f} ms" if pr else "-"
        f = firsts[(name, variant)]
        print(f"| `{name}` | {variant if name in EMBEDS else ''} | "
              f"{statistics.median(f):.0f} / {pct(f, 0.9):.0f} ms | "
              f"{statistics.median(values):.0f} / {pct(values, 0.9):.0f} ms | "
              f"{statistics.median(cpus[(name, variant)]):.0f} ms | "
              f"{statistics.median(values) / base_wall:.1f} | {made} |")
    report = Report("embed_cli_bench", **vars(args))
    for (name, variant), values in walls.items():
        pr = probes.get((name, variant))
        report.add(f"{name} ({variant})" if name in EMBEDS else name, values, quiet=True,
                   first_result=stats(firsts[(name, variant)]), cpu=stats(cpus[(name, variant)]),
                   baseline="lore --version", **({"onnx_sessions": pr["sessions"]} if pr else {}))
    report.write()


if __name__ == "__main__":
    main()
