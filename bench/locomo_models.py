"""Embedding models compared on LoCoMo through the product's search pipeline.

    python bench/locomo_models.py /path/to/locomo-dev.json --model multilingual-e5-small-q4
    python bench/locomo_models.py DATA --model multilingual-e5-small-q4 --speed 3   # + timings

Builds on bench/locomo_explore.py (data, FTS5 tables, cached embeddings; another model's
vectors are cached under its own name) and bench/locomo_loco.py (the session term). For the
default model and each ``--model`` (an ``embedding.model`` name, or bench/e5_embedder.py's
``multilingual-e5-small-q4``) it prints recall@5/@10,
overall and per category, for:

- vector alone: the question without speaker names against "turn, previous, next turn";
- the product's default hybrid: keyword + a × cosine + named bonus, then the session term
  (0.5), with the default vector weight a = 2;
- the same with a chosen leave-one-conversation-out from A_GRID (for every fold, the best
  mean of recall@5 and @10 on the other four conversations, the first of the grid on a tie;
  held-out folds pooled);
- both models: keyword + a × cos(default) + b × cos(other) (two query embeddings), (a, b)
  chosen leave-one-conversation-out from BOTH_A × BOTH_B.

``--speed N``: N rounds, the models interleaved: one query embedding for each question of
the first conversation (median and p90 in ms, wall and the thread's CPU time; one thread, as
the product's query session) and the first conversation's chunk texts embedded in batches of
64 (ms per text, wall and process CPU; ``embedding.threads`` default: every core).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import locomo_explore as ex  # noqa: E402
import locomo_loco as loco  # noqa: E402

SESSION = 0.5  # conversations.session_weight
A_GRID = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 15.0)
BOTH_A = (1.5, 2.0, 2.5)  # both models: the default model's weight
BOTH_B = (2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0)  # … and the second model's
VEC = ex.P(kw=False, kinds=("c11",), vq="qn")

Scorer = Callable[[ex.Ctx, int, ex.Question], np.ndarray]
Result = dict[str, list[tuple[int, float, float]]]  # conversation -> (category, r5, r10)


def run(ctxs: list[ex.Ctx], scorer: Scorer) -> Result:
    out: Result = defaultdict(list)
    for x in ctxs:
        for qi, q in enumerate(x.conv.questions):
            top = np.argsort(-scorer(x, qi, q), kind="stable")[:10].tolist()
            ev = set(q.evidence)
            out[x.conv.sample_id].append(
                (q.category, len(ev & set(top[:5])) / len(ev), len(ev & set(top)) / len(ev)))
    return out


def summary(rows: list[tuple[int, float, float]]) -> str:
    def pair(rs):
        return f"{100 * np.mean([r[1] for r in rs]):5.1f} / {100 * np.mean([r[2] for r in rs]):5.1f}"

    by_cat = defaultdict(list)
    for r in rows:
        by_cat[r[0]].append(r)
    cats = "  ".join(f"{ex.CATEGORIES[c]} {pair(by_cat[c])}" for c in sorted(by_cat))
    return f"{pair(rows)}   {cats}"


def hybrid(a: float) -> Scorer:
    p = replace(ex.WIN, a=a)

    def score(x: ex.Ctx, qi: int, q: ex.Question) -> np.ndarray:
        return loco.fam_session(x, q, ex.score(x, qi, q, p), SESSION)

    return score


def loco_choice(ctxs: list[ex.Ctx], grid: dict) -> tuple[list, list]:
    pooled, chosen = [], []
    convs = [x.conv.sample_id for x in ctxs]
    for held in convs:
        def train(a, held: str = held) -> float:
            rs = [r for c in convs if c != held for r in grid[a][c]]
            return float(np.mean([(r[1] + r[2]) / 2 for r in rs]))

        best = max(grid, key=train)  # ties: the first in grid order
        chosen.append(best)
        pooled += grid[best][held]
    return pooled, chosen


class Both(ex.Ctx):
    """One conversation seen through two models: a × cos(first) + b × cos(second), as one
    cosine over the two vectors side by side (the second model's document side scaled b / a)."""

    def __init__(self, one: ex.Ctx, two: ex.Ctx, ratio: float) -> None:
        super().__init__(one.conv, one.embeds)
        self._dbs, self._memo = one._dbs, one._memo  # share the FTS5 tables
        self.one, self.two, self.ratio = one, two, ratio

    def dvec(self, kind: str) -> np.ndarray:
        return np.hstack([self.one.dvec(kind), self.ratio * self.two.dvec(kind)])

    def qvec(self, qkind: str, qi: int) -> np.ndarray:
        return np.hstack([self.one.qvec(qkind, qi), self.two.qvec(qkind, qi)])


def speed(convs: list[ex.Conv], models: list[str | None], rounds: int) -> None:
    from e5_embedder import embedder

    conv = convs[0]
    questions = [ex.strip_names(q.text, conv.speakers) for q in conv.questions]
    docs = [ex.doc_text(conv, u, "c11") for u in conv.units][:512]
    embedders = {m: embedder(m) for m in models}
    q_ms: dict[str | None, list[float]] = defaultdict(list)
    q_cpu: dict[str | None, list[float]] = defaultdict(list)
    d_ms: dict[str | None, list[float]] = defaultdict(list)
    d_cpu: dict[str | None, list[float]] = defaultdict(list)
    for e in embedders.values():  # warm-up: sessions, page cache
        for t in questions[:10]:
            e.embed_query(t)
        e.embed_documents(docs[:64])
    for _ in range(rounds):
        for t in questions:
            for m, e in embedders.items():
                t0, c0 = time.perf_counter(), time.thread_time()
                e.embed_query(t)
                q_ms[m].append(1000 * (time.perf_counter() - t0))
                q_cpu[m].append(1000 * (time.thread_time() - c0))
        for i in range(0, len(docs), 64):
            for m, e in embedders.items():
                n = len(docs[i:i + 64])
                t0, c0 = time.perf_counter(), time.process_time()
                e.embed_documents(docs[i:i + 64])
                d_ms[m].append(1000 * (time.perf_counter() - t0) / n)
                d_cpu[m].append(1000 * (time.process_time() - c0) / n)
    for m in models:
        print(f"speed {m or ex_default()}: one query {pcts(q_ms[m])} wall, {pcts(q_cpu[m])} CPU "
              f"({len(q_ms[m])} queries); batches of 64, per text: {pcts(d_ms[m])} wall, "
              f"{pcts(d_cpu[m])} CPU", flush=True)


def pcts(ms: list[float]) -> str:
    s = sorted(ms)
    return f"median {statistics.median(s):.2f} / p90 {s[int(0.9 * (len(s) - 1))]:.2f} ms"


def ex_default() -> str:
    from lore.embed import DEFAULT_MODEL

    return DEFAULT_MODEL


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--model", action="append", default=[], help="an embedding.model name")
    ap.add_argument("--cache-dir", type=Path, default=ex.CACHE)
    ap.add_argument("--speed", type=int, default=0, metavar="ROUNDS")
    ap.add_argument("--a-grid", default=",".join(map(str, A_GRID)), metavar="A,B,…",
                    help="vector weights to choose from (default %(default)s)")
    ap.add_argument("--no-default", action="store_true", help="skip the default model's rows")
    ap.add_argument("--no-both", action="store_true", help="skip the two-model rows")
    args = ap.parse_args()
    grid_a = tuple(float(a) for a in args.a_grid.split(","))

    convs, _ = ex.load(args.data, None)
    models: list[str | None] = [None, *args.model]
    ctxs = {m: ex.contexts(convs, ex.Embeds(args.cache_dir, m)) for m in models}
    for m in models:
        if m is None and args.no_default:
            continue
        name = m or ex_default()
        vec = run(ctxs[m], lambda x, qi, q: ex.score(x, qi, q, VEC))
        print(f"{name:28s} vector alone          {summary([r for v in vec.values() for r in v])}")
        grid = {a: run(ctxs[m], hybrid(a)) for a in grid_a}
        if 2.0 in grid:
            print(f"{name:28s} default hybrid (a=2)  {summary([r for v in grid[2.0].values() for r in v])}")
        pooled, chosen = loco_choice(ctxs[m], grid)
        print(f"{name:28s} a held out {chosen}  {summary(pooled)}")
        for a in grid_a:
            print(f"    a={a}: {summary([r for v in grid[a].values() for r in v])}")
        for a in grid:
            by_conv = {c: summary(v).split("   ")[0].strip() for c, v in grid[a].items()}
            print(f"    per conversation (a={a}): {by_conv}", flush=True)
    for m in [] if args.no_both else args.model:
        same = [Both(one, two, 1.0) for one, two in zip(ctxs[None], ctxs[m], strict=True)]
        vec = run(same, lambda x, qi, q: ex.score(x, qi, q, VEC))
        print(f"both models, vector alone (the mean of the two cosines)  "
              f"{summary([r for v in vec.values() for r in v])}")
        grid2: dict = {}
        for a, b in product(BOTH_A, BOTH_B):
            both = [Both(one, two, b / a) for one, two in zip(ctxs[None], ctxs[m], strict=True)]
            grid2[(a, b)] = run(both, hybrid(a))
            print(f"    both models, a={a} b={b}: "
                  f"{summary([r for v in grid2[(a, b)].values() for r in v])}", flush=True)
        pooled, chosen = loco_choice(ctxs[None], grid2)
        print(f"both models, (a, b) held out {chosen}  {summary(pooled)}")
    if args.speed:
        speed(convs, models, args.speed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
