"""Held-out tests of candidate expansion for conversation search (LoCoMo).

    python bench/locomo_expand.py /path/to/locomo-dev.json            # every idea
    python bench/locomo_expand.py DATA --only session --only neighbour

The product's search scores the union of two candidate lists (the 100 best of each side).
Some evidence turns are in neither list (on average 9.9 % of a multi-hop question's, 22.8 %
of an open-domain question's). These ideas bring more turns into the scored pool, then score
the pool with the product's formula (BM25 / best BM25 + 2 x cosine, + 0.5 x the best
relevance of the turn's session among the pool, + the speaker bonus, + the length prior
0.3 x ln(1 + words, at most 80), - 0.5 for a turn that ends asking). An added turn's BM25 is
what the same FTS5 query gives it (0 when it matches no term) and its cosine comes from its
stored vector, as the product could read them for given rowids.

- session: every turn of the M best sessions (by the best score of their candidates) joins
  the pool; in every idea an added turn loses p (0: scored as any other; p < 0: it gains)
- neighbour: the k turns before and after each of the N best candidates join the pool
- speaker: for a question naming one speaker, that speaker's turns of the M best sessions
- second hop: the n turns outside the pool nearest the mean vector of the k best candidates
  (vector feedback as a second search, not a rescoring of the pool)
- combinations of the first three

--reweigh: no expansion; the BM25 context and date column weights and the vector weight
chosen again on top of the length prior and the question penalty (each point of the grid
changes the candidate lists too).

Protocol as bench/locomo_loco.py: for every idea and every fold the constants are chosen on
four conversations (best mean of recall@5 and @10; "off" when nothing beats the default
there) and scored on the fifth; the five held-out folds are pooled. Also printed: the turns
added to the pool per question (mean, p90) and the extra time of the step (median ms).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import locomo_explore as ex  # noqa: E402
from locomo_learn import qtype, words_of  # noqa: E402
from locomo_loco import held_out, table_row  # noqa: E402

WIN = ex.WIN
SESSION, LENGTH, CAP, QUESTION = 0.5, 0.3, 80, 0.5  # the product's ConversationTuning
DEPTH = 100


@dataclass
class Conv:
    """What scoring needs per turn of one conversation."""

    session_of: np.ndarray
    prev: np.ndarray
    next: np.ndarray
    prior: np.ndarray  # length prior - question penalty
    n_sessions: int
    vectors: np.ndarray  # each turn's stored vector (turn, previous, next)


@dataclass
class QF:
    c: Conv
    evidence: list[int]
    category: int
    kind: str
    bmn: np.ndarray  # BM25 / best BM25 over every turn (0: no term matched)
    cos: np.ndarray  # cosine over every turn
    named: np.ndarray  # 1.0 where the question's one named speaker said the turn
    base: np.ndarray  # bool: in either candidate list


def prepare(x: ex.Ctx) -> list[QF]:
    conv = x.conv
    units = conv.units
    words = np.log1p(np.minimum([words_of(u.text) for u in units], CAP))
    asks = np.array([u.text.rstrip(" \t\n)\"'").endswith("?") for u in units], dtype=np.float64)
    c = Conv(conv.session_of, conv.prev, conv.next, LENGTH * words - QUESTION * asks,
             int(conv.session_of.max()) + 1, x.dvec("c11"))
    D = c.vectors
    out = []
    for qi, q in enumerate(conv.questions):
        bm = x.bm25(q.text, WIN.qp(), WIN.layout(), WIN.weights())
        cos = (D @ x.qvec("qn", qi)).astype(np.float64)
        kr, vr = ex.ranks(bm), ex.ranks(cos)
        base = ((kr <= DEPTH) & (bm > 0)) | (vr <= DEPTH)
        out.append(QF(c, q.evidence, q.category, qtype(q.text), ex.bm_norm(bm), cos,
                      x.named_mask(q.text).astype(np.float64), base))
    return out


def scores(d: QF, pool: np.ndarray, added_penalty: float = 0.0) -> np.ndarray:
    """The product's total over the pool (-inf outside it)."""
    rel = d.bmn + WIN.a * d.cos
    sb = np.zeros(d.c.n_sessions)
    np.maximum.at(sb, d.c.session_of[pool], rel[pool])
    tot = rel + SESSION * sb[d.c.session_of] + WIN.named * d.named + d.c.prior
    if added_penalty:
        tot = tot - added_penalty * (pool & ~d.base)
    return np.where(pool, tot, -np.inf)


def recall_of(d: QF, s: np.ndarray) -> tuple[float, float]:
    top = np.argsort(-s, kind="stable")[:10].tolist()
    e = set(d.evidence)
    return len(e & set(top[:5])) / len(e), len(e & set(top)) / len(e)


def top_sessions(d: QF, s: np.ndarray, m: int) -> np.ndarray:
    best = np.full(d.c.n_sessions, -np.inf)
    np.maximum.at(best, d.c.session_of[d.base], s[d.base])
    return np.argsort(-best, kind="stable")[:m]


def add_sessions(d: QF, s: np.ndarray, m: int) -> np.ndarray:
    return np.isin(d.c.session_of, top_sessions(d, s, m))


def add_neighbours(d: QF, s: np.ndarray, k: int, n: int) -> np.ndarray:
    extra = np.zeros(len(s), dtype=bool)
    for i in np.argsort(-s, kind="stable")[:n].tolist():
        for step in (d.c.prev, d.c.next):
            j = i
            for _ in range(k):
                j = int(step[j])
                if j < 0:
                    break
                extra[j] = True
    return extra


def add_speaker(d: QF, s: np.ndarray, m: int) -> np.ndarray:
    if not d.named.any():
        return np.zeros(len(s), dtype=bool)
    return add_sessions(d, s, m) & (d.named > 0)


def add_second_hop(d: QF, s: np.ndarray, k: int, n: int) -> np.ndarray:
    """The n turns outside the pool nearest the mean vector of the k best candidates."""
    D = d.c.vectors
    q2 = D[np.argsort(-s, kind="stable")[:k]].mean(0)
    sim = D @ q2
    sim[d.base] = -np.inf
    extra = np.zeros(len(s), dtype=bool)
    extra[np.argsort(-sim, kind="stable")[:n]] = True
    return extra


def expanded(d: QF, extra: Callable[[np.ndarray], np.ndarray], p: float) -> tuple[np.ndarray, int]:
    s = scores(d, d.base)
    pool = d.base | extra(s)
    return scores(d, pool, p), int(pool.sum() - d.base.sum())


PEN = (-0.5, -0.25, 0.0, 0.1, 0.25)  # what an added turn loses (< 0: gains)
IDEAS: dict[str, tuple[Callable[..., Callable[[np.ndarray], np.ndarray]], list[tuple]]] = {}


def idea(name: str, grid: list[tuple]):
    def wrap(fn):
        IDEAS[name] = (fn, grid)
        return fn
    return wrap


@idea("session", [(m, p) for m, p in product((1, 2, 3, 4, 5), PEN)])
def x_session(d: QF, m: int, p: float):
    return expanded(d, lambda s: add_sessions(d, s, m), p)


@idea("neighbour", [(k, n, p) for k, n, p in product((1, 2, 3), (5, 10, 20), PEN)])
def x_neighbour(d: QF, k: int, n: int, p: float):
    return expanded(d, lambda s: add_neighbours(d, s, k, n), p)


@idea("speaker", [(m, p) for m, p in product((1, 2, 3, 5), PEN)])
def x_speaker(d: QF, m: int, p: float):
    return expanded(d, lambda s: add_speaker(d, s, m), p)


@idea("session+neighbour", [(m, k, n, p) for m, k, n, p in product(
    (1, 2, 3), (1, 2), (5, 10, 20), PEN)])
def x_sess_nb(d: QF, m: int, k: int, n: int, p: float):
    return expanded(d, lambda s: add_sessions(d, s, m) | add_neighbours(d, s, k, n), p)


@idea("neighbour+speaker", [(k, n, m, p) for k, n, m, p in product(
    (1, 2), (5, 10, 20), (1, 2, 3), PEN)])
def x_nb_spk(d: QF, k: int, n: int, m: int, p: float):
    return expanded(d, lambda s: add_neighbours(d, s, k, n) | add_speaker(d, s, m), p)


@idea("all three", [(m, k, n, ms, p) for m, k, n, ms, p in product(
    (1, 2), (1, 2), (5, 10), (2, 3), PEN)])
def x_all(d: QF, m: int, k: int, n: int, ms: int, p: float):
    return expanded(d, lambda s: (add_sessions(d, s, m) | add_neighbours(d, s, k, n)
                                  | add_speaker(d, s, ms)), p)


@idea("second hop", [(k, n, p) for k, n, p in product((1, 3, 5), (10, 20, 50), PEN)])
def x_hop(d: QF, k: int, n: int, p: float):
    return expanded(d, lambda s: add_second_hop(d, s, k, n), p)


def reach(every: list[QF]) -> None:
    """Of the multi-hop and open-domain evidence turns outside the pool: how many each
    expansion brings in, and how many of those the product's formula then ranks in the top 10
    (the grid point with p = 0)."""
    ways: dict[str, Callable[[QF, np.ndarray], np.ndarray]] = {
        "the 2 best sessions": lambda d, s: add_sessions(d, s, 2),
        "the 5 best sessions": lambda d, s: add_sessions(d, s, 5),
        "the 10 best sessions": lambda d, s: add_sessions(d, s, 10),
        "±2 turns of the 10 best": lambda d, s: add_neighbours(d, s, 2, 10),
        "±3 turns of the 20 best": lambda d, s: add_neighbours(d, s, 3, 20),
        "named speaker, 3 best sessions": lambda d, s: add_speaker(d, s, 3),
        "second hop, top 3, 50 turns": lambda d, s: add_second_hop(d, s, 3, 50),
        "every turn": lambda d, s: np.ones(len(s), dtype=bool),
    }
    for cat in (1, 3):
        miss = [(d, e) for d in every if d.category == cat for e in d.evidence if not d.base[e]]
        print(f"{ex.CATEGORIES[cat]}: {len(miss)} evidence turns outside the pool "
              f"({len({id(d) for d, _ in miss})} questions); brought in / then in the top 10:")
        for name, way in ways.items():
            got = top = 0
            for d, e in miss:
                pool = d.base | way(d, scores(d, d.base))
                if pool[e]:
                    got += 1
                    top += e in np.argsort(-scores(d, pool), kind="stable")[:10]
            print(f"  {name:32s} {got:3d} / {top}")


def reweigh(ctxs: list[ex.Ctx], folds: list[list[QF]]) -> None:
    """The context and date column weights and the vector weight, chosen held out."""
    global WIN
    base = WIN
    default = [[(d.category, *recall_of(d, scores(d, d.base))) for d in f] for f in folds]
    results: dict[tuple, list[list]] = {}
    for wc, wd, a in product((0.2, 0.3, 0.45, 0.6, 0.8), (0.5, 1.0, 1.5), (1.5, 2.0, 2.5)):
        WIN = replace(base, w_context=wc, w_date=wd, a=a)
        results[wc, wd, a] = [[(d.category, *recall_of(d, scores(d, d.base)))
                               for d in prepare(x)] for x in ctxs]
    WIN = base
    print(fmt("default (product)", table_row([r for f in default for r in f])))
    held, chosen = held_out(results, default)
    print(fmt("context, date, vector", table_row(held)) + f"   {' | '.join(chosen)}")


def fmt(name: str, r: dict) -> str:
    per = "  ".join(f"{r[c][0]:5.1f}/{r[c][1]:5.1f}" for c in ex.CATEGORIES)
    return f"  {name[:26]:26s} {r['r5']:5.1f} {r['r10']:5.1f}  {per}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--cache-dir", type=Path, default=ex.CACHE)
    ap.add_argument("--only", action="append", default=[], help="only these ideas")
    ap.add_argument("--grid", action="store_true", help="print every grid point in-sample")
    ap.add_argument("--reweigh", action="store_true",
                    help="choose the context, date and vector weights again instead")
    args = ap.parse_args()
    t0 = time.time()
    convs, _ = ex.load(args.data, None)
    embeds = ex.Embeds(args.cache_dir)
    ctxs = ex.contexts(convs, embeds)
    folds: list[list[QF]] = [prepare(x) for x in ctxs]
    if args.reweigh:
        reweigh(ctxs, folds)
        return 0
    every = [d for f in folds for d in f]
    out_of_pool = {c: [] for c in ex.CATEGORIES}
    for d in every:
        out_of_pool[d.category].append(np.mean([not d.base[e] for e in d.evidence]))
    print("evidence outside the pool, mean per question: " + ", ".join(
        f"{ex.CATEGORIES[c]} {100 * np.mean(v):.1f} %" for c, v in out_of_pool.items()))
    print(f"pool size: mean {np.mean([d.base.sum() for d in every]):.0f}")
    default = [[(d.category, *recall_of(d, scores(d, d.base))) for d in f] for f in folds]
    reach(every)
    print(f"{'held-out folds pooled':28s} R@5  R@10    multi-hop     temporal     "
          f"open-dom   single-hop     adversar")
    print(fmt("default (product)", table_row([r for f in default for r in f])))
    print(fmt("every turn scored (bound)", table_row(
        [(d.category, *recall_of(d, scores(d, np.ones(len(d.base), dtype=bool))))
         for d in every])))
    for name, (fn, grid) in IDEAS.items():
        if args.only and name not in args.only:
            continue
        results: dict[tuple, list[list]] = {}
        added: dict[tuple, list[list[int]]] = {}
        times = []
        for params in grid:
            per, adds = [], []
            for f in folds:
                rows, a = [], []
                for d in f:
                    t = time.perf_counter()
                    s, n = fn(d, *params)
                    times.append(time.perf_counter() - t)
                    rows.append((d.category, *recall_of(d, s)))
                    a.append(n)
                per.append(rows)
                adds.append(a)
            results[params] = per
            added[params] = adds
        held, chosen = held_out(results, default)
        rows_added = []
        for k, ch in enumerate(chosen):
            if ch != "off":
                p = next(p for p in grid if ",".join(str(v) for v in p) == ch)
                rows_added += added[p][k]
            else:
                rows_added += [0] * len(folds[k])
        ra = sorted(rows_added)
        print(fmt(name, table_row(held)) + f"   {' | '.join(chosen)}   +{np.mean(ra):.0f} rows "
              f"(p90 {ra[int(0.9 * (len(ra) - 1))]})  {1000 * float(np.median(times)):.2f} ms/q",
              flush=True)
        if args.grid:
            for params, pc in results.items():
                a = [n for f in added[params] for n in f]
                print(fmt(f"  {params}", table_row([r for rows in pc for r in rows]))
                      + f"   +{np.mean(a):.0f} rows")
    print(f"({time.time() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
