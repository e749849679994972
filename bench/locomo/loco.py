"""Leave-one-conversation-out choice of the extras on conversation search (LoCoMo).

    python -m bench.locomo.loco /path/to/locomo-dev.json

Builds on bench/locomo/explore.py (same data loading, FTS5 tables, cached embeddings and the
default pipeline WIN). Each *family* below is one idea with one or two constants on a flat
grid; for every family and every fold the constants are chosen on four conversations (best
mean of recall@5 and recall@10 over their questions) and the figures are those of the fifth,
then the five held-out folds are pooled (every question is scored exactly once, by a
configuration that never saw its conversation). "default" is WIN with no extra.

Families (all use only what the default search already computed: no model call per query
beyond the one question embedding):

- session: + g x (best fused score among the candidates of the turn's session); the product's
  conversations.session_weight
- session-top2: the same with the mean of the session's two best
- session-keep: the session term, but the default's first k turns stay first
- session-topn: the session term for the n best sessions only
- session+diversify, session+spread: the session term with one of the two below
- spread: a candidate loses d x (turns of its session ranked above it)
- neighbour: + b x max(fused score of the previous turn, of the next turn), same session
- session-count: + g x (number of the session's turns in the first-pass top 10) / 10
- kw2: a second keyword query made of the rarest words of the first-pass top 3 turns
  (terms the question did not have), its normalised BM25 added with weight w
- diversify: a candidate whose same-session neighbour (|turn distance| <= 1) is ranked
  above it loses d (greedy, in rank order)

Also printed: the median time of the extra step per question (ms, measured in this run,
on top of the default's own scoring).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from itertools import product
from pathlib import Path

import numpy as np

from bench.locomo import explore as ex

WIN = ex.WIN
TOP = 10


def base_scores(x: ex.Ctx, qi: int, q: ex.Question) -> np.ndarray:
    return ex.score(x, qi, q, WIN)


def candidates(s: np.ndarray) -> np.ndarray:
    return s > -1e8


def fam_session(x: ex.Ctx, q, s: np.ndarray, g: float) -> np.ndarray:
    c = candidates(s)
    out = s.copy()
    for v in np.unique(x.conv.session_of[c]):
        m = (x.conv.session_of == v) & c
        out[m] += g * s[m].max()
    return out


def fam_session_top2(x: ex.Ctx, q, s: np.ndarray, g: float) -> np.ndarray:
    c = candidates(s)
    out = s.copy()
    for v in np.unique(x.conv.session_of[c]):
        m = (x.conv.session_of == v) & c
        best = np.sort(s[m])[::-1][:2]
        out[m] += g * (best.sum() / 2)
    return out


def fam_session_div(x: ex.Ctx, q, s: np.ndarray, g: float, d: float) -> np.ndarray:
    return fam_diversify(x, q, fam_session(x, q, s, g), d)


def fam_spread(x: ex.Ctx, q, s: np.ndarray, d: float) -> np.ndarray:
    order = np.argsort(-s, kind="stable")[:30]
    out = s.copy()
    seen: dict[int, int] = defaultdict(int)
    for i in order:
        v = int(x.conv.session_of[i])
        out[i] -= d * seen[v]
        seen[v] += 1
    return out


def fam_session_spread(x: ex.Ctx, q, s: np.ndarray, g: float, d: float) -> np.ndarray:
    return fam_spread(x, q, fam_session(x, q, s, g), d)


def fam_session_keep(x: ex.Ctx, q, s: np.ndarray, g: float, k: int) -> np.ndarray:
    """The default's first k turns stay first; the session term orders the rest."""
    out = fam_session(x, q, s, g)
    keep = np.argsort(-s, kind="stable")[:k]
    out[keep] = out.max() + 1 + s[keep]
    return out


def fam_session_topn(x: ex.Ctx, q, s: np.ndarray, g: float, n: int) -> np.ndarray:
    """The session term for the n sessions with the best candidates only."""
    c = candidates(s)
    best: dict[int, float] = {}
    for i in np.flatnonzero(c):
        v = int(x.conv.session_of[i])
        best[v] = max(best.get(v, 0.0), float(s[i]))
    top = sorted(best, key=lambda v: -best[v])[:n]
    out = s.copy()
    for v in top:
        m = (x.conv.session_of == v) & c
        out[m] += g * best[v]
    return out


def fam_neighbour(x: ex.Ctx, q, s: np.ndarray, b: float) -> np.ndarray:
    c = candidates(s)
    z = np.where(c, s, 0.0)
    conv = x.conv
    p = np.where(conv.prev >= 0, z[np.maximum(conv.prev, 0)], 0.0)
    n = np.where(conv.next >= 0, z[np.maximum(conv.next, 0)], 0.0)
    return np.where(c, s + b * np.maximum(p, n), s)


def fam_session_count(x: ex.Ctx, q, s: np.ndarray, g: float) -> np.ndarray:
    top = np.argsort(-s, kind="stable")[:TOP]
    counts = defaultdict(int)
    for i in top:
        counts[int(x.conv.session_of[i])] += 1
    c = candidates(s)
    bonus = np.array([counts.get(int(v), 0) for v in x.conv.session_of]) / TOP
    return np.where(c, s + g * bonus, s)


_IDF: dict[str, dict[str, float]] = {}


def idf(x: ex.Ctx) -> dict[str, float]:
    key = x.conv.sample_id
    if key not in _IDF:
        df: dict[str, int] = defaultdict(int)
        for u in x.conv.units:
            for w in set(ex.words(u.text)):
                df[w] += 1
        n = len(x.conv.units)
        _IDF[key] = {w: float(np.log((n - d + 0.5) / (d + 0.5) + 1)) for w, d in df.items()}
    return _IDF[key]


def fam_kw2(x: ex.Ctx, q, s: np.ndarray, w: float, nterms: int = 5) -> np.ndarray:
    top = np.argsort(-s, kind="stable")[:3]
    qwords = set(ex.words(q.text))
    first = {sp.split()[0].lower() for sp in x.conv.speakers}
    table = idf(x)
    seen: dict[str, float] = {}
    for i in top:
        for t in ex.words(x.conv.units[i].text):
            if (t in qwords or t in ex.EXT_STOP or t in first or len(t) < 3 or t.isdigit()):
                continue
            seen[t] = table.get(t, 0.0)
    terms = sorted(seen, key=lambda t: -seen[t])[:nterms]
    if not terms:
        return s
    bm = x.bm25(" ".join(terms), WIN.qp(), WIN.layout(), WIN.weights())
    c = candidates(s) | (bm > 0)
    out = np.where(c, np.maximum(s, 0) + w * ex.bm_norm(bm), s)
    return out


def fam_diversify(x: ex.Ctx, q, s: np.ndarray, d: float) -> np.ndarray:
    order = np.argsort(-s, kind="stable")[:30]
    out = s.copy()
    picked: list[int] = []
    for i in order:
        i = int(i)
        if any(x.conv.session_of[j] == x.conv.session_of[i] and abs(j - i) <= 1 for j in picked):
            out[i] -= d
        picked.append(i)
    return out


FAMILIES = {
    "session": (fam_session, [(g,) for g in (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)]),
    "session-top2": (fam_session_top2, [(g,) for g in (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)]),
    "session+diversify": (fam_session_div, [(g, d) for g, d in product(
        (0.3, 0.5, 0.75, 1.0), (0.05, 0.1, 0.2))]),
    "session-keep": (fam_session_keep, [(g, k) for g, k in product(
        (0.3, 0.5, 0.75, 1.0), (1, 2, 3))]),
    "session-topn": (fam_session_topn, [(g, n) for g, n in product(
        (0.3, 0.5, 0.75, 1.0), (1, 2, 3))]),
    "spread": (fam_spread, [(d,) for d in (0.02, 0.05, 0.1, 0.2, 0.3)]),
    "session+spread": (fam_session_spread, [(g, d) for g, d in product(
        (0.2, 0.3, 0.5, 0.75), (0.02, 0.05, 0.1, 0.2))]),
    "neighbour": (fam_neighbour, [(b,) for b in (0.05, 0.1, 0.2, 0.3, 0.5)]),
    "session-count": (fam_session_count, [(g,) for g in (0.1, 0.2, 0.3, 0.5, 1.0)]),
    "kw2": (fam_kw2, [(w, n) for w, n in product((0.1, 0.2, 0.3, 0.5), (3, 5, 8))]),
    "diversify": (fam_diversify, [(d,) for d in (0.05, 0.1, 0.2, 0.4)]),
}


def recall_of(s: np.ndarray, ev: list[int]) -> tuple[float, float]:
    top = np.argsort(-s, kind="stable")[:10].tolist()
    e = set(ev)
    return len(e & set(top[:5])) / len(e), len(e & set(top)) / len(e)


def table_row(rows: list[tuple[int, float, float]]) -> dict:
    out = {"n": len(rows), "r5": 100 * np.mean([a for _, a, _ in rows]),
           "r10": 100 * np.mean([b for _, _, b in rows])}
    for c in ex.CATEGORIES:
        vs = [(a, b) for cat, a, b in rows if cat == c]
        out[c] = (100 * np.mean([a for a, _ in vs]), 100 * np.mean([b for _, b in vs]))
    return out


def goal(rows: list) -> float:
    """What a choice maximises: the mean of recall@5 + recall@10 over the questions."""
    return float(np.mean([a + b for _, a, b in rows]))


def held_out(results: dict[tuple, list[list]], default: list[list]) -> tuple[list, list[str]]:
    """Leave one conversation out: for each fold k, the grid point best on the other folds
    (``results[params][fold]`` = rows), or "off" (the default's rows) when none beats the
    default there; the held-out rows pooled, and what each fold chose."""
    held: list = []
    chosen: list[str] = []
    for k in range(len(default)):
        train = {p: [r for ci, rows in enumerate(pc) if ci != k for r in rows]
                 for p, pc in results.items()}
        base_train = [r for ci, rows in enumerate(default) if ci != k for r in rows]
        best = max(train, key=lambda p: goal(train[p]))
        if goal(train[best]) <= goal(base_train):
            chosen.append("off")
            held += default[k]
        else:
            chosen.append(",".join(str(v) for v in best))
            held += results[best][k]
    return held, chosen


def fmt(name: str, r: dict) -> str:
    per = "  ".join(f"{r[c][0]:5.1f}/{r[c][1]:5.1f}" for c in ex.CATEGORIES)
    return f"  {name[:34]:34s} {r['r5']:5.1f} {r['r10']:5.1f}  {per}"


def product_timing(data: str, weight: float, rounds: int = 3) -> dict[str, float]:
    """Median and p90 ms of the product's conversation search (query embedding included) on
    the first conversation, with the session term off and at ``weight``, interleaved in one
    process so both see the same machine state."""
    import json
    import tempfile

    from lore.api import Lore
    from lore.config import Config, Settings
    from lore.measure.locomo import index
    from lore.tuning import replace

    sample = json.loads(Path(data).read_text())[0]
    questions = [str(q["question"]) for q in sample["qa"]]
    times: dict[float, list[float]] = {0.0: [], weight: []}
    with tempfile.TemporaryDirectory(prefix="lore-loco-") as tmp:
        settings = Settings(config=Config(), home=Path(tmp), config_path=Path(tmp) / "c.yaml")
        settings.config.database = str(Path(tmp) / "lore.db")
        with Lore.open(settings) as lore:
            index(lore, sample)
            lore.conversations.embed_pending()
            conv = lore.conversations
            base = conv.tuning
            sid = str(sample.get("sample_id", "conv"))
            for q in questions[:20]:  # warm-up: model, page cache
                lore.conversations.search(q, project=sid, limit=10)
            for _ in range(rounds):
                for q in questions:
                    for w in times:
                        conv.tuning = replace(base, {"session_weight": w})
                        t = time.perf_counter()
                        lore.conversations.search(q, project=sid, limit=10)
                        times[w].append(1000 * (time.perf_counter() - t))
            conv.tuning = base

    def stats(xs: list[float]) -> dict[str, float]:
        xs = sorted(xs)
        return {"median": float(np.median(xs)), "p90": xs[int(0.9 * (len(xs) - 1))]}

    return {f"session_weight {w}": stats(v) for w, v in times.items()}  # type: ignore[misc]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--cache-dir", type=Path, default=ex.CACHE)
    ap.add_argument("--only", action="append", default=[], help="only these families")
    ap.add_argument("--timing", type=float, default=None, metavar="WEIGHT",
                    help="also time the product's search with session_weight 0 and WEIGHT")
    args = ap.parse_args()
    t0 = time.time()
    convs, _ = ex.load(args.data, None)
    embeds = ex.Embeds(args.cache_dir)
    ctxs = ex.contexts(convs, embeds)
    base = {(ci, qi): base_scores(x, qi, q) for ci, x in enumerate(ctxs)
            for qi, q in enumerate(x.conv.questions)}
    # results[family][params][conv index] = [(category, r5, r10)]
    default = [[(q.category, *recall_of(base[ci, qi], q.evidence))
                for qi, q in enumerate(x.conv.questions)] for ci, x in enumerate(ctxs)]
    fams = {k: v for k, v in FAMILIES.items() if not args.only or k in args.only}
    results: dict[str, dict[tuple, list[list]]] = {}
    cost: dict[str, float] = {}
    for name, (fn, grid) in fams.items():
        results[name] = {}
        times = []
        for params in grid:
            per_conv = []
            for ci, x in enumerate(ctxs):
                rows = []
                for qi, q in enumerate(x.conv.questions):
                    t = time.perf_counter()
                    s = fn(x, q, base[ci, qi], *params)
                    times.append(time.perf_counter() - t)
                    rows.append((q.category, *recall_of(s, q.evidence)))
                per_conv.append(rows)
            results[name][params] = per_conv
        cost[name] = 1000 * float(np.median(times))

    print(f"{'LOCO (held-out folds pooled)':36s} R@5  R@10    multi-hop     temporal     "
          f"open-dom   single-hop     adversar")
    print(fmt("default (WIN)", table_row([r for rows in default for r in rows])))
    for name in fams:
        held, chosen = held_out(results[name], default)
        print(fmt(f"{name}", table_row(held)) + f"   chosen: {' | '.join(chosen)}"
              f"   extra {cost[name]:.2f} ms/q")
    print("in-sample (all five conversations), every point of the session grid:")
    for params, pc in results.get("session", {}).items():
        print(fmt(f"session {params}", table_row([r for rows in pc for r in rows])))
    print("in-sample (all five conversations), best of each grid:")
    for name in fams:
        allrows = {p: [r for rows in pc for r in rows] for p, pc in results[name].items()}
        best = max(allrows, key=lambda p: goal(allrows[p]))
        print(fmt(f"{name} {best}", table_row(allrows[best])))
    if args.timing is not None:
        print("product search per query (ms, query embedding included, first conversation):")
        for name, st in product_timing(args.data, args.timing).items():
            print(f"  {name:22s} median {st['median']:.2f}  p90 {st['p90']:.2f}")
    print(f"({time.time() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
