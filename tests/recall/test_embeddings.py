"""Embedding backends: the offline default, OpenAI over loopback, model changes, laziness."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.cli import cli
from lore.config import EmbeddingConfig
from lore.embed import create_embedder, document_text
from lore.errors import BackendUnavailable, ConfigError, EmbeddingMismatch


def test_default_model_is_offline_and_semantic(real_embedder):
    assert real_embedder.name == "all-MiniLM-L6-v2" and real_embedder.dimensions == 384
    a, b, c = real_embedder.embed_documents([
        "Do not use Redis for sessions", "Keep session data out of Redis", "The cat sat on the mat"
    ])
    assert abs(np.linalg.norm(a) - 1) < 1e-4
    assert a @ b > 0.6 > a @ c


def test_document_text_is_title_blank_line_content():
    assert document_text("T", "C") == "T\n\nC"


# ---- OpenAI-compatible server on 127.0.0.1 ---------------------------------------------

class _FakeOpenAI(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def log_message(self, *args):  # keep test output clean
        pass

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                    "body": body})
        if self.headers.get("Authorization") != "Bearer sk-test":
            self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
            return
        dims = body.get("dimensions", 1536)
        data = []
        for i, text in enumerate(body["input"]):
            rng = np.random.default_rng(abs(hash(text)) % (2**32))
            vec = rng.standard_normal(dims).astype("<f4")
            emb = (base64.b64encode(vec.tobytes()).decode()
                   if body.get("encoding_format") == "base64" else vec.tolist())
            data.append({"object": "embedding", "index": i, "embedding": emb})
        self._send(200, {"object": "list", "data": data, "model": body["model"],
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def _send(self, code, payload):
        raw = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def openai_server():
    pytest.importorskip("openai", reason="the openai extra is part of the dev install")
    _FakeOpenAI.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_openai_backend_against_loopback_server(openai_server, lore_home):
    s = make_settings(lore_home, embedding={"backend": "openai", "model": "text-embedding-3-small",
                                            "api_key": "sk-test", "base_url": openai_server})
    with Lore.open(s) as lore:
        a = lore.lessons.add("Use file sessions", "not Redis")
        assert lore.admin.stored_model() == ("text-embedding-3-small", 1536)
        hits = lore.search.query("Use file sessions", track=False)
        assert hits[0].id == a.id
    sent = _FakeOpenAI.requests
    assert sent[0]["path"] == "/v1/embeddings"
    assert sent[0]["body"]["input"] == ["Use file sessions\n\nnot Redis"]
    assert sent[0]["body"]["model"] == "text-embedding-3-small"


def test_openai_dimensions_option(openai_server):
    emb = create_embedder(EmbeddingConfig(backend="openai", model="text-embedding-3-small",
                                          dimensions=256, api_key="sk-test",
                                          base_url=openai_server))
    vecs = emb.embed_documents(["a", "b", "c"])
    assert vecs.shape == (3, 256)
    assert _FakeOpenAI.requests[-1]["body"]["dimensions"] == 256


def test_openai_errors_are_clear(openai_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    no_key = create_embedder(EmbeddingConfig(backend="openai", base_url=openai_server))
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        no_key.embed_query("x")
    bad_key = create_embedder(EmbeddingConfig(backend="openai", api_key="sk-wrong",
                                              base_url=openai_server))
    with pytest.raises(BackendUnavailable, match="refused"):
        bad_key.embed_query("x")


# ---- model changes ---------------------------------------------------------------------

def test_model_mismatch_stops_and_reembed_rebuilds(settings):
    with Lore.open(settings, embedder=FakeEmbedder("model-a", 64)) as lore:
        a = lore.lessons.add("Alpha lesson", "first")
    with Lore.open(settings, embedder=FakeEmbedder("model-b", 32)) as lore:
        with pytest.raises(EmbeddingMismatch, match="lore admin reembed"):
            lore.search.query("alpha")
        with pytest.raises(EmbeddingMismatch):
            lore.lessons.add("Beta lesson", "second")
        assert lore.store.count() == 1  # nothing written
        assert lore.lessons.get(a.id).title == "Alpha lesson"  # reading needs no model
        done = []
        assert lore.admin.reembed(progress=lambda d, t: done.append((d, t))).total == 1
        assert done[-1] == (1, 1)
        assert lore.admin.stored_model() == ("model-b", 32)
        assert lore.search.query("alpha lesson", track=False)[0].id == a.id


def test_cli_mismatch_message_names_reembed(lore_home, real_embedder, monkeypatch):
    runner = CliRunner()
    added = runner.invoke(cli, ["learn", "add", "Alpha", "beta"], obj={"embedder": real_embedder})
    assert added.exit_code == 0, added.output
    monkeypatch.setenv("LORE_EMBEDDING_BACKEND", "openai")
    result = runner.invoke(cli, ["search", "alpha"])
    assert result.exit_code == 1
    assert "lore admin reembed" in result.stderr
    assert result.stderr.count("\n") == 1  # one line, no traceback


def test_commands_that_do_not_embed_never_load_the_model(lore_home):
    code = (
        "import sys\n"
        "from lore.cli import main\n"
        "for argv in (['lore', 'admin', 'init'], ['lore', 'recall', 'values', 'tags'],\n"
        "             ['lore', 'recall', 'values', 'kinds', '--json'], ['lore', 'stats', '--counts']):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as e:\n"
        "        assert not e.code, e.code\n"
        "print('LOADED', 'onnxruntime' in sys.modules, 'fastembed' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "LOADED False False" in out.stdout


def test_help_imports_nothing_heavy():
    code = (
        "import sys\n"
        "from lore.cli import main\n"
        "sys.argv = ['lore', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'pydantic', 'rich', 'onnxruntime', 'yaml') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert "HEAVY []" in out.stdout


# ---- sentence-transformers (optional extra, brings PyTorch) -----------------------------

class _StandInSentenceTransformer:
    """Records how the backend drives the library; the real one needs PyTorch."""

    made: list[dict] = []

    def __init__(self, name, device, cache_folder):
        type(self).made.append({"name": name, "device": device, "cache": cache_folder})

    def get_sentence_embedding_dimension(self):
        return 3

    def encode(self, texts, batch_size, normalize_embeddings, show_progress_bar):
        assert normalize_embeddings and not show_progress_bar
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)


def test_sentence_transformers_backend_drives_the_library(monkeypatch):
    import types

    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = _StandInSentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    emb = create_embedder(EmbeddingConfig(backend="sentence-transformers", batch_size=8))
    assert emb.name == "all-MiniLM-L6-v2" and emb.dimensions == 3
    vecs = emb.embed_documents(["ab", "abcd"])
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    made = _StandInSentenceTransformer.made[-1]
    assert made["name"] == "sentence-transformers/all-MiniLM-L6-v2" and made["device"] == "cpu"


def test_sentence_transformers_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    emb = create_embedder(EmbeddingConfig(backend="sentence-transformers"))
    with pytest.raises(BackendUnavailable, match=r"loreloop\[sentence-transformers\]"):
        emb.embed_query("x")
