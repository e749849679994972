"""The packaged model's optimised graph, cached: the same vectors, a damaged or unwritable cache
costs nothing, and a command that embeds creates one ONNX session per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.embed.fastembed_backend import PackagedModel
from lore.embed.packaged import graph_cache, packaged_model_file

SRC = str(Path(__file__).resolve().parents[2] / "src")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def texts() -> list[str]:
    """Real transcript lines, long and short, and a few edge cases."""
    out: list[str] = ["", "a", "ECONNRESET", "why did we drop redis? " * 40]
    for path in sorted(FIXTURES.rglob("*.jsonl"))[:3]:
        for line in path.read_text(encoding="utf-8").splitlines()[:15]:
            out.append(line[:1500])
    return out


def vectors(model: PackagedModel, items: list[str]) -> np.ndarray:
    return np.vstack(list(model.embed(items, batch_size=16)))


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """The vectors of a session that optimises the graph itself (no cache)."""
    return vectors(PackagedModel(packaged_model_file(), 1, None), texts())


def cached_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.onnx"))


def test_the_cached_graph_gives_the_same_vectors(tmp_path, reference):
    cache = tmp_path / "models"
    first = PackagedModel(packaged_model_file(), 1, cache)  # optimises, writes the graph
    [written] = cached_files(cache)
    assert written.stat().st_size > 0 and written.stat().st_mode & 0o777 == 0o600
    assert cache.stat().st_mode & 0o777 == 0o700
    assert not list(cache.glob(".*.tmp"))  # written under a temporary name, then renamed
    second = PackagedModel(packaged_model_file(), 2, cache)  # loads it as it is
    assert cached_files(cache) == [written]
    np.testing.assert_allclose(vectors(first, texts()), reference, atol=1e-6)
    np.testing.assert_allclose(vectors(second, texts()), reference, atol=1e-6)


def test_a_damaged_cache_file_is_replaced(tmp_path, reference):
    cache = tmp_path / "models"
    PackagedModel(packaged_model_file(), 1, cache)
    [written] = cached_files(cache)
    written.write_bytes(b"not a model")
    model = PackagedModel(packaged_model_file(), 1, cache)
    np.testing.assert_allclose(vectors(model, texts()), reference, atol=1e-6)
    # Dropped on the failed load and written again by the load that followed.
    assert cached_files(cache) == [written] and written.stat().st_size > 1000


def test_a_cache_that_cannot_be_written_costs_nothing(tmp_path, reference):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    model = PackagedModel(packaged_model_file(), 1, blocker / "models")
    np.testing.assert_allclose(vectors(model, texts()), reference, atol=1e-6)
    assert blocker.read_text() == ""


def test_where_the_graph_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert graph_cache(None) == tmp_path / "xdg" / "lore" / "models"
    assert graph_cache(str(tmp_path / "mine")) == tmp_path / "mine"  # embedding.cache_dir wins
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert graph_cache(None) == tmp_path / "user" / ".cache" / "lore" / "models"


COUNT = """
import json, sys
import onnxruntime
made = []
real = onnxruntime.InferenceSession
class Counted(real):
    def __init__(self, *a, **k):
        made.append(str(a[0])[-40:])
        super().__init__(*a, **k)
onnxruntime.InferenceSession = Counted
from lore.cli import main
sys.argv = ["lore", *json.loads(sys.argv[1])]
try:
    main()
finally:
    print("SESSIONS=" + json.dumps(made), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [
    ["recall", "conversations", "why did the build fail", "--project", "all"],
    ["search", "build timeout"],
    ["learn", "add", "Retry the flaky upload three times", "then give up"],
])
def test_a_command_that_embeds_creates_one_session(lore_home, tmp_path, args):
    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder("all-MiniLM-L6-v2", 384)) as lore:
        lore.lessons.add("Build timeouts", "raise the build timeout")
        lore.conversations.add_turns("s1", "test", "/p", [
            ("u1", "user", "why did the build fail", "2026-11-01T10:00:00Z"),
            ("u2", "assistant", "the upload timed out", "2026-11-01T10:01:00Z")])
    env = {**os.environ, "LORE_HOME": str(lore_home), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for _ in range(2):  # the first run writes the graph, the second reads it
        proc = subprocess.run([sys.executable, "-c", COUNT, json.dumps(args)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        made = json.loads(proc.stderr.rsplit("SESSIONS=", 1)[1])
        assert len(made) == 1, made
    assert "-ort" in made[0]  # the second run loaded the cached graph
    assert len(list((tmp_path / "cache" / "lore" / "models").glob("*.onnx"))) == 1


def test_a_command_that_loaded_the_model_ends_with_its_whole_output_and_status(lore_home,
                                                                                tmp_path):
    """It skips the interpreter's teardown (lore.entry.quick_exit), not its output (a status
    other than 0 after the model loaded: tests/core/test_reembed.py, SIGTERM exits 130)."""
    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder("all-MiniLM-L6-v2", 384)) as lore:
        for i in range(60):
            lore.lessons.add(f"Build timeout rule {i}", "raise the timeout " * 30)
    env = {**os.environ, "LORE_HOME": str(lore_home), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    ok = subprocess.run([sys.executable, "-m", "lore", "search", "build timeout",
                         "--limit", "60", "--json"], env=env, capture_output=True, text=True,
                        timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert len(json.loads(ok.stdout)["results"]) == 60  # every byte was flushed before the exit
