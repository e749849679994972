"""Leave-one-conversation-out choice of what conversation search adds to the fused score (LoCoMo).

    python -m bench.locomo.loco /path/to/locomo-dev.json                # both steps
    python -m bench.locomo.loco DATA --only session                     # one of them
    python -m bench.locomo.loco DATA --product --rounds 2               # and through the product

Builds on bench/locomo/explore.py (data loading, FTS5 tables, cached embeddings and the fused
search WIN). Each step is one idea with one or two constants on a grid; for every fold the
constants are chosen on four conversations (best mean of recall@5 and recall@10 over their
questions; "off" when nothing beats the step's default there) and the figures are those of the
fifth, then the five held-out folds are pooled (every question is scored exactly once, by a
choice that never saw its conversation). The steps, in the order the product took them:

- session: + g × (best fused score among the candidates of the turn's session), over WIN; the
  product's conversations.session_weight (0.5)
- words: + b × ln(1 + the turn's words, at most cap), the words counted as the product does
  (spaces and line breaks + 1), over WIN and the session term at 0.5: the product's
  conversations.length_weight and length_cap_words (0.3, 80)
- words-80+question-end: the same at cap 80, and − q for a turn whose text ends with a question
  mark, chosen together: length_weight and conversations.question_penalty (0.3, 0.5)

Also printed: the median time of each step per question (ms, on top of WIN's own scoring). The
ideas that were measured the same way and not adopted (docs/benchmarks.md keeps their figures)
are in the history of this folder.

``--product`` runs the product's own search (``lore eval locomo``'s indexing, query embedding
included) with the default constants and with each step's off, interleaved question by question
in one process: recall per category and the time of each search.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo import explore as ex

WIN = ex.WIN
SESSION = 0.5  # the product's conversations.session_weight, under the priors
Rows = list[tuple[int, float, float]]  # (category, recall@5, recall@10) per question


def session_term(sess: np.ndarray, s: np.ndarray, keep: np.ndarray, g: float,
                 floor: float = -np.inf) -> np.ndarray:
    """``s`` + g × the best score of each kept unit's session among the kept units (at least
    ``floor``)."""
    best: dict[int, float] = {}
    for v, r in zip(sess[keep].tolist(), s[keep].tolist(), strict=True):
        best[v] = max(best.get(v, floor), r)
    bonus = np.array([best.get(v, 0.0) for v in sess.tolist()])
    return np.where(keep, s + g * bonus, s)


def words_of(text: str) -> int:
    return text.count(" ") + text.count("\n") + 1


def ends_asking(text: str) -> bool:
    """A turn whose text ends with a question mark (it asks and does not go on)."""
    return text.rstrip(" \t\n)\"'").endswith("?")


class Scored:
    """One question's WIN scores and what the steps read of its units."""

    def __init__(self, x: ex.Ctx, qi: int, q: ex.Question) -> None:
        self.q = q
        self.sess = x.conv.session_of
        self.win = ex.score(x, qi, q, WIN)
        self.keep = self.win > -1e8  # the union of both candidate lists
        # the relevance the priors build on: the fused score without the speaker bonus
        self.rel = ex.score(x, qi, q, replace(WIN, named=0.0))
        self.named = WIN.named * x.named_mask(q.text)
        units = x.conv.units
        self.words = np.array([words_of(u.text) for u in units], dtype=np.float64)
        self.asks = np.array([ends_asking(u.text) for u in units], dtype=np.float64)

    def under_priors(self) -> np.ndarray:
        """The product's search before the priors: WIN and the session term at SESSION (the
        session's best relevance counted without the speaker bonus, as the product does)."""
        fused = session_term(self.sess, self.rel, self.keep, SESSION, floor=0.0) + self.named
        return np.where(self.keep, fused, self.win)


def step_session(d: Scored, g: float) -> np.ndarray:
    return session_term(d.sess, d.win, d.keep, g)


def step_words(d: Scored, b: float, cap: float) -> np.ndarray:
    return np.where(d.keep, d.under_priors() + b * np.log1p(np.minimum(d.words, cap)), d.win)


def step_words_question(d: Scored, b: float, q: float) -> np.ndarray:
    return np.where(d.keep, d.under_priors() - q * d.asks + b * np.log1p(np.minimum(d.words, 80)),
                    d.win)


# name: (the step, its grid, the step's default: what it is added to)
STEPS: dict[str, tuple[Callable[..., np.ndarray], list[tuple], Callable[[Scored], np.ndarray]]] = {
    "session": (step_session, [(g,) for g in (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)],
                lambda d: d.win),
    "words": (step_words, list(product((0.1, 0.2, 0.3, 0.4, 0.5), (40, 60, 80, 120, 1e9))),
              Scored.under_priors),
    "words-80+question-end": (step_words_question, list(product((0.2, 0.3, 0.4),
                                                                (0.2, 0.3, 0.5, 0.75))),
                              Scored.under_priors),
}


def table_row(rows: Rows) -> dict:
    out: dict[Any, Any] = {"n": len(rows), "r5": 100 * np.mean([a for _, a, _ in rows]),
                           "r10": 100 * np.mean([b for _, _, b in rows])}
    for c in ex.CATEGORIES:
        vs = [(a, b) for cat, a, b in rows if cat == c]
        out[c] = (100 * np.mean([a for a, _ in vs]), 100 * np.mean([b for _, b in vs])) if vs \
            else (float("nan"), float("nan"))
    return out


def goal(rows: Rows) -> float:
    """What a choice maximises: the mean of recall@5 + recall@10 over the questions."""
    return float(np.mean([a + b for _, a, b in rows]))


def held_out(results: dict[tuple, list[Rows]], default: list[Rows]) -> tuple[Rows, list[str]]:
    """Leave one conversation out: for each fold k, the grid point best on the other folds
    (``results[params][fold]`` = rows), or "off" (the default's rows) when none beats the
    default there; the held-out rows pooled, and what each fold chose."""
    held: Rows = []
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
            chosen.append(",".join(f"{v:g}" for v in best))
            held += results[best][k]
    return held, chosen


def fmt(name: str, r: dict) -> str:
    per = "  ".join(f"{r[c][0]:5.1f}/{r[c][1]:5.1f}" for c in ex.CATEGORIES)
    return f"  {name[:34]:34s} {r['r5']:5.1f} {r['r10']:5.1f}  {per}"


def run_step(name: str, folds: list[list[Scored]]) -> None:
    fn, grid, base = STEPS[name]
    default = [[(d.q.category, *ex.recall_of(base(d), d.q.evidence)) for d in f] for f in folds]
    results: dict[tuple, list[Rows]] = {}
    times: list[float] = []
    for params in grid:
        per = []
        for f in folds:
            rows = []
            for d in f:
                t = time.perf_counter()
                s = fn(d, *params)
                times.append(time.perf_counter() - t)
                rows.append((d.q.category, *ex.recall_of(s, d.q.evidence)))
            per.append(rows)
        results[params] = per
    print(f"-- {name}")
    print(fmt("default", table_row([r for f in default for r in f])))
    held, chosen = held_out(results, default)
    print(fmt("held out", table_row(held)) + f"   chosen: {' | '.join(chosen)}"
          f"   +{1000 * float(np.median(times)):.2f} ms/q")
    print("   in-sample (all conversations), every grid point:")
    for params, pc in results.items():
        print(fmt(" ".join(f"{v:g}" for v in params), table_row([r for rows in pc for r in rows])))


def through_product(data: str, rounds: int) -> None:
    """The product's search with its default constants and with each step off, interleaved
    question by question in one process (query embedding included)."""
    from lore import tuning
    from lore.api import Lore
    from lore.config import Config, Settings
    from lore.measure import locomo
    from lore.recall import conversations as recall

    base = recall.CONVERSATIONS
    variants = {"default": base,
                "session_weight 0": tuning.replace(base, {"session_weight": 0.0}),
                "length 0, question penalty 0": tuning.replace(
                    base, {"length_weight": 0.0, "question_penalty": 0.0})}
    rows: dict[str, Rows] = {v: [] for v in variants}
    times: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="lore-loco-") as tmp:
        settings = Settings(config=Config(), home=Path(tmp), config_path=Path(tmp) / "c.yaml")
        settings.config.database = str(Path(tmp) / "lore.db")
        with Lore.open(settings) as lore:
            conv = lore.conversations
            for sample in json.loads(Path(data).read_text()):
                turn_ids, _ = locomo.index(lore, sample)
                conv.embed_pending()
                sid = str(sample.get("sample_id", "conv"))
                for qa in sample["qa"][:10]:  # warm-up: model, page cache
                    conv.search(str(qa["question"]), project=sid, limit=10)
                for r in range(rounds):
                    for qa in sample["qa"]:
                        ev = {f"D{a}:{b}" for e in qa.get("evidence", [])
                              for a, b in locomo.EVIDENCE.findall(str(e))} & turn_ids
                        if not ev:
                            continue
                        for name, variant in variants.items():
                            conv.tuning = variant
                            t = time.perf_counter()
                            hits = conv.search(str(qa["question"]), project=sid, limit=10)
                            times[name].append(1000 * (time.perf_counter() - t))
                            if r == 0:
                                dias = locomo.dia_ids(lore, [h.chunk_id for h in hits], sid)
                                rows[name].append((int(qa["category"]),
                                                   len(ev & set(dias[:5])) / len(ev),
                                                   len(ev & set(dias)) / len(ev)))
            conv.tuning = base
    print("-- through the product")
    for name in variants:
        xs = sorted(times[name])
        print(fmt(name, table_row(rows[name]))
              + f"   median {np.median(xs):.2f} ms  p90 {xs[int(0.9 * (len(xs) - 1))]:.2f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--cache-dir", type=Path, default=ex.CACHE)
    ap.add_argument("--only", action="append", default=[], choices=list(STEPS),
                    help="only these steps")
    ap.add_argument("--product", action="store_true",
                    help="also run the product's search with each step off (interleaved)")
    ap.add_argument("--rounds", type=int, default=1, help="timing rounds with --product")
    args = ap.parse_args()
    t0 = time.time()
    convs, _ = ex.load(args.data, None)
    folds = [[Scored(x, qi, q) for qi, q in enumerate(x.conv.questions)]
             for x in ex.contexts(convs, ex.Embeds(args.cache_dir))]
    print(f"{'held-out folds pooled':36s} R@5  R@10    multi-hop     temporal     "
          f"open-dom   single-hop     adversar")
    for name in args.only or STEPS:
        run_step(name, folds)
    if args.product:
        through_product(args.data, args.rounds)
    print(f"({time.time() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
