"""Conversation memory benchmarks.

    python -m bench.conversation_bench [--transcripts DIR] [--chunks 100000] [--big-mb 200]

1. Import of every transcript in DIR (default ../shared/data/transcripts): messages per
   second without and with embeddings, and a second import of the unchanged files.
2. A synthetic transcript of --big-mb megabytes (real records repeated with new uuids),
   imported without embeddings in a child process: time and peak memory (VmHWM).
3. Conversation search in a warm process at --chunks chunks (bench corpus texts as turns,
   vectors from the bench cache; query embedding live): median and p90 over 200 queries.

``--compare-model NAME`` (an ``embedding.model``, repeatable) times step 3 for the default
model and each NAME on one index, the models taking turns query by query, each query embedded
live by its model. The chunk vectors are then random unit vectors (the search does the same
work whatever they hold; embedding 100,000 chunks with every model would take an hour).
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
import uuid
from pathlib import Path

from bench.corpus import corpus_vectors, make_corpus, make_queries
from bench.harness import Report, pct
from bench.search_bench import CachedEmbedder
from lore.api import Lore
from lore.config import EmbeddingConfig, load_config
from lore.embed import create_embedder

ROOT = Path(__file__).resolve().parents[1]
LORE = str(Path(sys.executable).parent / "lore")


REPORT = Report("conversation_bench")


def summary(ms: list[float]) -> str:
    return f"median {statistics.median(ms):.1f} ms, p90 {pct(ms, 0.9):.1f} ms"


def import_speed(transcripts: Path) -> None:
    for embed in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, LORE_HOME=tmp)
            args = [LORE, "ingest", str(transcripts), "--json"] + ([] if embed else ["--no-embed"])
            t0 = time.perf_counter()
            out = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
            took = time.perf_counter() - t0
            n = json.loads(out.stdout)["messages"]
            label = "with embeddings" if embed else "without embeddings"
            print(f"- import of {transcripts.name}/ ({n:,} messages) {label}: {took:.1f} s, "
                  f"{n / took:,.0f} messages/s (process start and model load included)")
            if not embed:
                t0 = time.perf_counter()
                subprocess.run(args, env=env, check=True, capture_output=True, text=True)
                print(f"- the same import again, files unchanged: {time.perf_counter() - t0:.2f} s "
                      "(whole process)")


def big_transcript(transcripts: Path, megabytes: int) -> None:
    source = max(transcripts.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    lines = [ln for ln in source.read_text(encoding="utf-8").splitlines() if ln.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{uuid.uuid4()}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            while fh.tell() < megabytes * 1_000_000:
                for line in lines:
                    rec = json.loads(line)
                    if "uuid" in rec:
                        rec["uuid"] = str(uuid.uuid4())
                    fh.write(json.dumps(rec) + "\n")
        size = path.stat().st_size / 1e6
        code = (
            "import sys, time\nfrom pathlib import Path\nfrom lore.api import Lore\n"
            "from lore.config import load_config\n"
            "t = time.perf_counter()\n"
            "with Lore.open(load_config()) as lore:\n"
            f"    r = lore.conversations.ingest([Path({str(path)!r})], embed=False)\n"
            "took = time.perf_counter() - t\n"
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
            "print(r.messages, took, int(hwm[0].split()[1]) // 1024 if hwm else -1)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, LORE_HOME=tmp),
                             check=True, capture_output=True, text=True)
        n, took, mb = out.stdout.split()
        print(f"- one {size:.0f} MB transcript ({int(n):,} messages), no embeddings: "
              f"{float(took):.1f} s, {int(n) / float(took):,.0f} messages/s, peak memory {mb} MB")


class CaseEmbedder(CachedEmbedder):
    """Cached vectors by the "(case N)" of the chunk's own turn, which comes first in the
    embedded text (the neighbours that follow it only shift the vector a little)."""

    def __init__(self, real, vecs) -> None:
        super().__init__(real, {})
        self.vecs = vecs

    def embed_documents(self, texts):
        import re

        import numpy as np

        return np.vstack([self.vecs[int(re.search(r"\(case (\d+)\)", t).group(1))] for t in texts])


class Switch:
    """Query embeddings from one of several models, chosen before each search, under the name
    the index was built with (the models compared all have 384 dimensions)."""

    def __init__(self, name: str, models: dict) -> None:
        self.name, self.models, self.current = name, models, None

    @property
    def dimensions(self) -> int:
        return 384

    def embed_query(self, text):
        return self.models[self.current].embed_query(text)


def search_speed(chunks: int, queries: int, compare: list[str] | None = None) -> None:
    real = create_embedder(EmbeddingConfig())
    docs = make_corpus(chunks)
    if compare:
        import numpy as np

        rng = np.random.default_rng(7)
        vecs = rng.standard_normal((chunks, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    else:
        vecs = corpus_vectors(docs, real, "minilm-int8")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LORE_HOME"] = tmp
        with Lore.open(load_config(), embedder=CaseEmbedder(real, vecs)) as lore:
            conv = lore.conversations
            per_session = 200
            t0 = time.perf_counter()
            for s in range(0, chunks, per_session):
                turns = [(f"t{i}", "user", f"{d.title}. {d.content}", "2026-10-01T00:00:00Z")
                         for i, d in zip(range(s, s + per_session), docs[s:s + per_session],
                                         strict=False)]
                conv.add_turns(f"session-{s}", "bench", f"/work/p{s % 7}", turns, per_turn=True)
            conv.embed_pending()
            built = time.perf_counter() - t0
            qs = make_queries(queries)
            if compare:
                compare_models(lore, real, compare, qs, chunks, built)
                return
            lore.engine.embedding.use(real)
            t0 = time.perf_counter()
            conv.search(qs[0], project=None)
            warm = (time.perf_counter() - t0) * 1000
            for q in qs[:5]:
                conv.search(q, project=None)
            every, scoped = [], []
            for q in qs:
                t0 = time.perf_counter()
                conv.search(q, project=None, limit=5)
                every.append((time.perf_counter() - t0) * 1000)
            for q in qs[: queries // 2]:
                t0 = time.perf_counter()
                conv.search(q, project="/work/p3", limit=5)
                scoped.append((time.perf_counter() - t0) * 1000)
            print(f"- conversation search at {chunks:,} chunks (built in {built:.0f} s; first "
                  f"search loads the vectors: {warm:.0f} ms), warm: every project "
                  f"{summary(every)}; one project (1/7 of the chunks) {summary(scoped)}")
            REPORT.add(f"conversation search at {chunks:,} chunks, warm, every project", every,
                       quiet=True, first_search_ms=round(warm, 1))
            REPORT.add(f"conversation search at {chunks:,} chunks, warm, one project (1/7)", scoped,
                       quiet=True)


def compare_models(lore, real, names: list[str], qs: list[str], chunks: int, built: float) -> None:
    from bench.e5_embedder import embedder

    models = {real.name: real, **{n: embedder(n) for n in names}}
    switch = Switch(real.name, models)
    lore.engine.embedding.use(switch)
    conv = lore.conversations
    for name in models:  # warm-up: sessions, the vectors, page cache
        switch.current = name
        for q in qs[:5]:
            conv.search(q, project=None)
    times: dict[str, list[float]] = {n: [] for n in models}
    cpu: dict[str, list[float]] = {n: [] for n in models}
    embed: dict[str, list[float]] = {n: [] for n in models}
    for q in qs:
        for name, model in models.items():
            switch.current = name
            t0, c0 = time.perf_counter(), time.process_time()
            conv.search(q, project=None, limit=5)
            times[name].append((time.perf_counter() - t0) * 1000)
            cpu[name].append((time.process_time() - c0) * 1000)
            t0 = time.perf_counter()
            model.embed_query(q)
            embed[name].append((time.perf_counter() - t0) * 1000)
    for name in models:
        print(f"- conversation search at {chunks:,} chunks (built in {built:.0f} s), warm, every "
              f"project, query embedded by {name}: {summary(times[name])} (CPU {summary(cpu[name])}); "
              f"the query embedding alone {summary(embed[name])}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--transcripts", type=Path,
                    default=ROOT.parent / "shared" / "data" / "transcripts")
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--big-mb", type=int, default=200)
    ap.add_argument("--compare-model", action="append", default=[], metavar="NAME")
    args = ap.parse_args()
    if args.compare_model:
        search_speed(args.chunks, args.queries, args.compare_model)
        return
    if args.transcripts.exists():
        import_speed(args.transcripts)
        if args.big_mb:
            big_transcript(args.transcripts, args.big_mb)
    else:
        print(f"(no transcripts at {args.transcripts}: import benchmarks skipped)")
    if args.chunks:
        search_speed(args.chunks, args.queries)
    REPORT.params.update(vars(args))
    REPORT.write()


if __name__ == "__main__":
    main()
