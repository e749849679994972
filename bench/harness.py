"""What every speed benchmark shares: timed runs, median and p90, the baseline measured in the
same run, and the results written as JSON.

A benchmark is a module of this package, run from the repository's root::

    python -m bench.search_bench --sizes 10000

It prints its figures as it goes and, through :class:`Report`, writes them to
``bench/results/<name>.json`` (``$LORE_BENCH_RESULTS`` to put them elsewhere), which
``python -m bench.tables`` turns into the tables of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"


def results_dir() -> Path:
    return Path(os.environ.get("LORE_BENCH_RESULTS") or RESULTS)


def pct(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank: a value that was measured, not interpolated."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def stats(values: Sequence[float]) -> dict[str, float]:
    """Runs, median and p90 of ``values``."""
    return {"runs": len(values), "median": float(statistics.median(values)),
            "p90": float(pct(values, 0.9))}


def fmt(values: Sequence[float], unit: str = "ms", digits: int = 1) -> str:
    s = stats(values)
    return f"median {s['median']:.{digits}f}, p90 {s['p90']:.{digits}f} {unit}"


def timed(fn: Callable[[], object], runs: int, warmup: int = 1) -> list[float]:
    """Milliseconds of ``runs`` calls of ``fn`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def process(argv: Sequence[str], env: dict[str, str] | None = None,
            stdin: bytes | None = None) -> tuple[float, float]:
    """Wall and CPU milliseconds of one whole process (its children's CPU included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(list(argv), env=env, input=stdin, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000


class Report:
    """The rows of one benchmark run: printed as they come, written as JSON at the end.

    A row is a label and its samples; ``baseline`` names the row of the same run it is to be
    read against (the bare interpreter, a search with nothing to find, ...).
    """

    def __init__(self, name: str, **params: Any) -> None:
        self.name = name
        self.params = params
        self.rows: list[dict[str, Any]] = []
        self.started = datetime.now(UTC)

    def add(self, label: str, values: Sequence[float], *, unit: str = "ms",
            baseline: str | None = None, quiet: bool = False, **extra: Any) -> dict[str, Any]:
        row: dict[str, Any] = {"label": label, **stats(values), "unit": unit}
        if baseline is not None:
            row["baseline"] = baseline
        row.update(extra)
        self.rows.append(row)
        if not quiet:
            note = f" (baseline: {baseline})" if baseline else ""
            more = "".join(f", {k} {v}" for k, v in extra.items())
            print(f"- {label}: {fmt(values, unit)}{more}{note}", flush=True)
        return row

    def value(self, label: str, value: float, *, unit: str = "", **extra: Any) -> None:
        """One figure that is not a distribution (a recall, a size, a count)."""
        self.rows.append({"label": label, "value": value, "unit": unit, **extra})
        print(f"- {label}: {value}{' ' + unit if unit else ''}", flush=True)

    def record(self, figures: dict[str, Any], where: str) -> None:
        """Every figure of ``figures`` at ``where`` (a size): lists of samples as distributions,
        numbers and flags as values; quietly, as the benchmark prints its own table."""
        for key, value in figures.items():
            label = f"{key}, {where}"
            if isinstance(value, list) and value and all(isinstance(v, int | float) for v in value):
                self.add(label, value, quiet=True)
            elif isinstance(value, bool | int | float | str):
                self.rows.append({"label": label, "value": value})

    def write(self) -> Path:
        folder = results_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.name}.json"
        data = {"bench": self.name, "params": self.params, "started": self.started.isoformat(),
                "seconds": round((datetime.now(UTC) - self.started).total_seconds(), 1),
                "machine": {"python": platform.python_version(), "system": platform.system(),
                            "machine": platform.machine(), "cpus": os.cpu_count(),
                            "load": round(os.getloadavg()[0], 2)},
                "rows": self.rows}
        path.write_text(json.dumps(data, indent=1, default=str) + "\n")
        print(f"results: {path}", flush=True)
        return path


class HashEmbedder:
    """Vectors without a model, for benchmarks that time something other than embedding: a
    seeded random direction per word, summed, so texts sharing words are close."""

    def __init__(self, dims: int = 64) -> None:
        self.name = "bench-hash"
        self.dimensions = dims

    def _word(self, word: str) -> np.ndarray:
        return np.random.default_rng(zlib.crc32(word.encode())).standard_normal(self.dimensions)

    def embed_query(self, text: str) -> np.ndarray:
        words = text.lower().split() or ["."]
        v = np.sum([self._word(w) for w in words], axis=0).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.vstack([self.embed_query(t) for t in texts])


def settings(home: Path, **config: Any) -> Any:
    """Settings for a Lore home of the benchmark's own, ``config`` being config.yaml's sections."""
    from lore.config import Config, Settings

    return Settings(config=Config.model_validate(config), home=home,
                    config_path=home / "config.yaml")


@contextmanager
def serving(lore: Any) -> Iterator[str]:
    """``lore serve``'s app for ``lore`` on a loopback socket bound here; yields the base URL."""
    import uvicorn

    from lore.web import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    host, port = sock.getsockname()
    server = uvicorn.Server(uvicorn.Config(create_app(lore), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(1000):
        if server.started or not thread.is_alive():
            break
        time.sleep(0.02)
    if not server.started:
        sock.close()
        raise RuntimeError("the server did not start")
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
