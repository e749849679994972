"""Held-out tests of recall ideas for multi-hop and open-domain questions (LoCoMo).

    python -m bench.locomo.learn /path/to/locomo-dev.json            # every idea
    python -m bench.locomo.learn DATA --only prf --only mmr           # some
    python -m bench.locomo.learn DATA --length 0.3                    # on top of the length prior
    python -m bench.locomo.learn DATA --only none --product 0.3       # the product, prior off / on

Builds on bench/locomo/explore.py (data, FTS5 tables, cached embeddings) and follows
bench/locomo/loco.py: for every idea and every fold, its constants are chosen on four
conversations (best mean of recall@5 and @10; "off" when nothing beats the default there)
and scored on the fifth; the five held-out folds are pooled. The default here is the
product's search: WIN of locomo_explore plus the session term (0.5 × the best relevance
among the candidates of the turn's session), scored over the union of both candidate lists
(the 100 best of each side).

Ideas (each uses only the candidates the default already has, and their stored vectors):

- words, words-80, length, chars, chars-400: + b × ln(1 + the turn's words or characters,
  capped); "words-80" is the product's length prior (length_weight, length_cap_words of
  ConversationTuning in lore/recall/conversations.py); "+session", "+vector": chosen with
  the session or vector weight
- named: the speaker bonus chosen
- question-end: − q for a turn whose text ends with a question mark (the product's
  question_penalty); question-mark: − q for one with a question mark anywhere;
  "words-80+question-end": both terms chosen together
- learned: a linear model over per-candidate features, fitted on the four training
  conversations (pairwise logistic loss, numpy), its weights used on the fifth
- learned-ca: the same features, weights by coordinate ascent on the training recall
- sess-centroid: + h × cos(question, mean vector of the session's candidates)
- sess-centroid-all: the same with the mean of all the session's turns (needs a stored
  session vector; harness only)
- prf: the question vector + a × mean of the top-k fused candidates' vectors, a second
  cosine over the candidates, fused again
- mmr: greedy top 10, a candidate loses m × its best cosine to the turns picked before it
- reserve: the best turn of the 2nd..(n+1)th best session takes one of the last n places
- route:<idea>: the idea's constants chosen per question type (from the question's words:
  temporal, multi-hop, open-domain, other), each type on its own training questions

Also printed: the median extra time per question of each idea (ms).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import numpy as np

from bench.locomo import explore as ex
from bench.locomo.loco import goal, held_out, table_row  # (the same choice and table)

WIN = ex.WIN
SESSION = 0.5  # the product's conversations.session_weight
DEPTH = 100


@dataclass
class QD:
    """One question's candidates and what scoring them needs."""

    ctx: ex.Ctx
    q: ex.Question
    cand: np.ndarray  # unit indices of the candidates
    bmn: np.ndarray  # BM25 / best BM25
    cos: np.ndarray  # cosine of the question (names removed) and the turn+neighbours vector
    named: np.ndarray  # 1 where the candidate's speaker is the one the question names
    sess: np.ndarray  # session number of each candidate
    qv: np.ndarray
    krank: np.ndarray
    vrank: np.ndarray
    kind: str  # question type from its words


def qtype(text: str) -> str:
    """The question's type from its words alone (never the benchmark's label)."""
    t = text.lower()
    w = set(ex.words(t))
    if w & {"when", "date", "year", "month", "week", "long", "how"} and (
            "when" in w or "how long" in t or "what year" in t or "what date" in t
            or "which month" in t or "which year" in t):
        return "temporal"
    if w & {"would", "likely", "might", "could", "probably", "considered", "if"}:
        return "open"
    if (w & {"both", "common", "share", "all", "activities", "things", "ways", "kinds",
             "types", "events"} or " and " in t or re.search(r"\bwhat (are|were) \w+'s\b", t)):
        return "multi"
    return "other"


def prepare(x: ex.Ctx) -> list[QD]:
    D = x.dvec("c11")
    out = []
    for qi, q in enumerate(x.conv.questions):
        bm = x.bm25(q.text, WIN.qp(), WIN.layout(), WIN.weights())
        qv = x.qvec("qn", qi)
        cos = D @ qv
        kr, vr = ex.ranks(bm), ex.ranks(cos)
        keep = ((kr <= DEPTH) & (bm > 0)) | (vr <= DEPTH)
        c = np.flatnonzero(keep)
        out.append(QD(x, q, c, ex.bm_norm(bm)[c], cos[c].astype(np.float64),
                      x.named_mask(q.text)[c].astype(np.float64), x.conv.session_of[c],
                      qv, kr[c], vr[c], qtype(q.text)))
    return out


def session_best(sess: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """For each candidate, the best relevance among its session's candidates (>= 0)."""
    best: dict[int, float] = {}
    for v, r in zip(sess.tolist(), rel.tolist(), strict=True):
        if r > best.get(v, 0.0):
            best[v] = r
    return np.array([best.get(v, 0.0) for v in sess.tolist()])


BASE_LENGTH = 0.0  # --length: the turn-length prior in the default these ideas build on
BASE_QUESTION = 0.0  # --question: the penalty for a turn that ends by asking, likewise


def default_scores(d: QD, g: float = SESSION, cos: np.ndarray | None = None) -> np.ndarray:
    rel = d.bmn + WIN.a * (d.cos if cos is None else cos)
    out = rel + g * session_best(d.sess, rel) + WIN.named * d.named
    if BASE_LENGTH:
        out = out + BASE_LENGTH * word_count(d, 80)
    if BASE_QUESTION:
        out = out - BASE_QUESTION * ends_asking(d)
    return out


def recall_of(d: QD, s: np.ndarray) -> tuple[float, float]:
    top = d.cand[np.argsort(-s, kind="stable")[:10]].tolist()
    e = set(d.q.evidence)
    return len(e & set(top[:5])) / len(e), len(e & set(top)) / len(e)


# ---------------------------------------------------------------------------------------
# ideas: f(d, *params) -> scores over d.cand


def fam_session(d: QD, g: float) -> np.ndarray:
    return default_scores(d, g)


def centroid_cos(d: QD, D: np.ndarray, members: dict[int, np.ndarray]) -> np.ndarray:
    sims = {}
    for v, idx in members.items():
        m = D[idx].mean(0)
        sims[v] = float(m @ d.qv / (np.linalg.norm(m) or 1.0))
    return np.array([sims[v] for v in d.sess.tolist()])


def fam_centroid(d: QD, h: float) -> np.ndarray:
    D = d.ctx.dvec("c11")
    members = {int(v): d.cand[d.sess == v] for v in np.unique(d.sess)}
    return default_scores(d) + h * centroid_cos(d, D, members)


_ALL: dict[int, dict[int, np.ndarray]] = {}


def fam_centroid_all(d: QD, h: float) -> np.ndarray:
    conv = d.ctx.conv
    members = _ALL.setdefault(id(conv), {int(v): np.flatnonzero(conv.session_of == v)
                                         for v in np.unique(conv.session_of)})
    return default_scores(d) + h * centroid_cos(d, d.ctx.dvec("c11"), members)


def prf_cos(d: QD, a: float, k: int) -> np.ndarray:
    """Cosine of the candidates with the question vector + a × mean of the top k's vectors."""
    D = d.ctx.dvec("c11")
    s = default_scores(d)
    top = d.cand[np.argsort(-s, kind="stable")[:k]]
    qv2 = d.qv + a * D[top].mean(0)
    qv2 = qv2 / np.linalg.norm(qv2)
    return (D[d.cand] @ qv2).astype(np.float64)


def fam_prf(d: QD, a: float, k: int) -> np.ndarray:
    return default_scores(d, cos=prf_cos(d, a, k))


def fam_mmr(d: QD, m: float, n: int = 30) -> np.ndarray:
    D = d.ctx.dvec("c11")
    s = default_scores(d)
    order = np.argsort(-s, kind="stable")[:n]
    V = D[d.cand[order]]
    sim = V @ V.T
    left = list(range(len(order)))
    picked: list[int] = []
    while left and len(picked) < 10:
        if picked:
            pen = sim[np.ix_(left, picked)].max(1)
        else:
            pen = np.zeros(len(left))
        j = int(np.argmax(s[order[left]] - m * pen))
        picked.append(left.pop(j))
    out = s.copy()
    hi = s.max() + 10
    for r, j in enumerate(picked):
        out[order[j]] = hi - r
    return out


def fam_reserve(d: QD, n: int) -> np.ndarray:
    s = default_scores(d)
    order = np.argsort(-s, kind="stable")
    first_sess = int(d.sess[order[0]])
    seen = {first_sess}
    extra = []
    for i in order[1:]:
        v = int(d.sess[i])
        if v not in seen:
            seen.add(v)
            extra.append(int(i))
            if len(extra) == n:
                break
    top = [int(i) for i in order[:10]]
    need = [i for i in extra if i not in top]
    out = s.copy()
    if not need:
        return out
    keep = [i for i in top if i not in extra][: 10 - len(extra)]
    final = sorted(keep + extra, key=lambda i: -s[i])
    hi = s.max() + 10
    for r, i in enumerate(final):
        out[i] = hi - r
    return out


# ---- learned fusion ------------------------------------------------------------------

FEATURES = ("bm25/best", "cos", "named", "session best", "session centroid", "neighbour best",
            "1/keyword rank", "1/vector rank", "log length", "cos after feedback")


def features(d: QD) -> np.ndarray:
    conv = d.ctx.conv
    rel = d.bmn + WIN.a * d.cos
    D = d.ctx.dvec("c11")
    members = {int(v): d.cand[d.sess == v] for v in np.unique(d.sess)}
    pos = {int(c): j for j, c in enumerate(d.cand.tolist())}
    nb = np.zeros(len(d.cand))
    for j, c in enumerate(d.cand.tolist()):
        for o in (conv.prev[c], conv.next[c]):
            if o >= 0 and int(o) in pos:
                nb[j] = max(nb[j], rel[pos[int(o)]])
    length = word_count(d, 80)
    kr = np.where(d.bmn > 0, 1.0 / (10 + d.krank), 0.0)
    return np.column_stack([
        d.bmn, d.cos, d.named, session_best(d.sess, rel), centroid_cos(d, D, members), nb,
        kr, 1.0 / (10 + d.vrank), length, prf_cos(d, 0.35, 5)])


_FEATS: dict[int, np.ndarray] = {}


def feats(d: QD) -> np.ndarray:
    if id(d) not in _FEATS:
        _FEATS[id(d)] = features(d)
    return _FEATS[id(d)]


def pair_diffs(train: list[QD], hard: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Feature differences of (evidence turn, other candidate) pairs and their weights (every
    question weighs the same); the other candidates are the default's top ``hard`` plus every
    5th of the rest."""
    diffs, wts = [], []
    for d in train:
        f = feats(d)
        ev = set(d.q.evidence)
        pos = [j for j, c in enumerate(d.cand.tolist()) if c in ev]
        if not pos:
            continue
        order = np.argsort(-default_scores(d), kind="stable")
        neg = [int(j) for j in order[:hard] if int(d.cand[j]) not in ev]
        neg += [int(j) for j in order[hard::5] if int(d.cand[j]) not in ev]
        if not neg:
            continue
        P, N = f[pos], f[neg]
        diffs.append((P[:, None, :] - N[None, :, :]).reshape(-1, f.shape[1]))
        wts.append(np.full(len(pos) * len(neg), 1.0 / (len(pos) * len(neg))))
    X, wt = np.vstack(diffs), np.concatenate(wts)
    return X, wt / wt.sum()


def fit_pairwise(train: list[QD], learn: tuple[int, ...] = tuple(range(len(FEATURES))),
                 fixed: dict[int, float] | None = None, l2: float = 1e-3,
                 steps: int = 400) -> np.ndarray:
    """Weights minimising the pairwise logistic loss (numpy gradient descent). ``fixed``
    features keep the weight given (an offset); ``learn`` are fitted; the rest are 0."""
    fixed = fixed or {}
    X, wt = pair_diffs(train)
    off = sum((v * X[:, k] for k, v in fixed.items()), np.zeros(len(X)))
    L = X[:, list(learn)]
    v = np.zeros(len(learn))
    lr = 4.0 / (np.max(np.sum(L * L, 1)) + l2)
    for _ in range(steps):
        z = off + L @ v
        g = -(wt * (1 / (1 + np.exp(z)))) @ L + l2 * v
        v -= lr * g
    w = np.zeros(len(FEATURES))
    for k, val in fixed.items():
        w[k] = val
    w[list(learn)] = v
    return w


def fit_ca(train: list[QD], rounds: int = 2, frozen: tuple[int, ...] = (0,)) -> np.ndarray:
    """Coordinate ascent on the training recall (mean of @5 and @10) from the default (with
    the length prior at BASE_LENGTH); ``frozen`` features keep their starting weight."""
    F = [feats(d) for d in train]
    w = np.zeros(len(FEATURES))
    w[0], w[1], w[2], w[3], w[8] = 1.0, 2.0, WIN.named, SESSION, BASE_LENGTH

    def fitness(w: np.ndarray) -> float:
        return float(np.mean([sum(recall_of(d, f @ w)) for d, f in zip(train, F, strict=True)]))

    best = fitness(w)
    for _ in range(rounds):
        for k in range(len(FEATURES)):
            if k in frozen:
                continue
            for delta in (-1.0, -0.5, -0.25, -0.1, 0.1, 0.25, 0.5, 1.0):
                w2 = w.copy()
                w2[k] += delta
                v = fitness(w2)
                if v > best + 1e-9:
                    best, w = v, w2
    return w


# ---------------------------------------------------------------------------------------

def turn_length(d: QD) -> np.ndarray:
    units = d.ctx.conv.units
    return np.log1p([len(units[c].text.split()) for c in d.cand.tolist()])


def fam_length(d: QD, b: float) -> np.ndarray:
    return default_scores(d) + b * turn_length(d)


def char_length(d: QD, cap: float) -> np.ndarray:
    """log(1 + characters of the turn), the characters capped (what the product can read
    from the chunk row: a chunk of grouped messages can be thousands of characters long)."""
    units = d.ctx.conv.units
    return np.log1p(np.minimum([len(units[c].text) for c in d.cand.tolist()], cap))


def word_count(d: QD, cap: float) -> np.ndarray:
    """log(1 + words of the turn), the words counted as the product does (spaces and line
    breaks + 1) and capped."""
    units = d.ctx.conv.units
    return np.log1p(np.minimum([words_of(units[c].text) for c in d.cand.tolist()], cap))


def words_of(text: str) -> int:
    return text.count(" ") + text.count("\n") + 1


def fam_words(d: QD, b: float, cap: float) -> np.ndarray:
    return default_scores(d) + b * word_count(d, cap)


def fam_words_session(d: QD, b: float, g: float, cap: float = 80) -> np.ndarray:
    return default_scores(d, g) + b * word_count(d, cap)


def fam_chars(d: QD, b: float, cap: float) -> np.ndarray:
    return default_scores(d) + b * char_length(d, cap)


def fam_chars_session(d: QD, b: float, g: float, cap: float = 400) -> np.ndarray:
    return default_scores(d, g) + b * char_length(d, cap)


def fam_chars_vector(d: QD, b: float, a: float, cap: float = 400) -> np.ndarray:
    rel = d.bmn + a * d.cos
    return (rel + SESSION * session_best(d.sess, rel) + WIN.named * d.named
            + b * char_length(d, cap))


def fam_question(d: QD, qp: float) -> np.ndarray:
    """− qp for a turn that asks (has a question mark)."""
    units = d.ctx.conv.units
    asks = np.array([("?" in units[c].text) for c in d.cand.tolist()], dtype=np.float64)
    return default_scores(d) - qp * asks


def ends_asking(d: QD) -> np.ndarray:
    """1 for a turn whose text ends with a question mark (it asks and does not go on)."""
    units = d.ctx.conv.units
    return np.array([units[c].text.rstrip(" \t\n)\"'").endswith("?") for c in d.cand.tolist()],
                    dtype=np.float64)


def fam_question_end(d: QD, qp: float) -> np.ndarray:
    return default_scores(d) - qp * ends_asking(d)


def fam_words_question(d: QD, b: float, qp: float) -> np.ndarray:
    """The length prior and the question penalty, chosen together."""
    return fam_question_end(d, qp) + b * word_count(d, 80)


def fam_named(d: QD, nb: float) -> np.ndarray:
    return default_scores(d) + (nb - WIN.named) * d.named


GRIDS: dict[str, tuple[Callable[..., np.ndarray], list[tuple]]] = {
    "question-mark": (fam_question, [(q,) for q in (0.1, 0.2, 0.3, 0.5, 0.75, 1.0)]),
    "question-end": (fam_question_end, [(q,) for q in (0.1, 0.2, 0.3, 0.5, 0.75, 1.0)]),
    "words-80+question-end": (fam_words_question, [(b, q) for b, q in product(
        (0.2, 0.3, 0.4), (0.2, 0.3, 0.5, 0.75))]),
    "named": (fam_named, [(nb,) for nb in (0.05, 0.15, 0.2, 0.3, 0.45, 0.6)]),
    "words": (fam_words, [(b, cap) for b, cap in product(
        (0.1, 0.2, 0.3, 0.4, 0.5), (40, 60, 80, 120, 1e9))]),
    "words-80": (fam_words, [(b, 80) for b in (0.1, 0.2, 0.3, 0.4, 0.5)]),
    "words+session": (fam_words_session, [(b, g) for b, g in product(
        (0.2, 0.3, 0.4, 0.5), (0.25, 0.5, 0.75, 1.0))]),
    "chars": (fam_chars, [(b, cap) for b, cap in product(
        (0.1, 0.2, 0.3, 0.4, 0.5), (200, 300, 400, 600, 1e9))]),
    "chars-400": (fam_chars, [(b, 400) for b in (0.1, 0.2, 0.3, 0.4, 0.5)]),
    "chars+session": (fam_chars_session, [(b, g) for b, g in product(
        (0.2, 0.3, 0.4, 0.5), (0.25, 0.5, 0.75, 1.0))]),
    "chars+vector": (fam_chars_vector, [(b, a) for b, a in product(
        (0.2, 0.3, 0.4, 0.5), (1.5, 2.0, 2.5, 3.0))]),
    "length": (fam_length, [(b,) for b in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)]),
    "session": (fam_session, [(g,) for g in (0.0, 0.25, 0.5, 0.75, 1.0)]),
    "sess-centroid": (fam_centroid, [(h,) for h in (0.1, 0.25, 0.5, 1.0, 1.5)]),
    "sess-centroid-all": (fam_centroid_all, [(h,) for h in (0.1, 0.25, 0.5, 1.0, 1.5)]),
    "prf": (fam_prf, [(a, k) for a, k in product((0.1, 0.2, 0.35, 0.5, 1.0), (3, 5, 10))]),
    "mmr": (fam_mmr, [(m,) for m in (0.05, 0.1, 0.2, 0.3, 0.5, 0.8)]),
    "reserve": (fam_reserve, [(n,) for n in (1, 2, 3)]),
}
TYPES = ("temporal", "multi", "open", "other")


def fmt(name: str, r: dict) -> str:
    per = "  ".join(f"{r[c][0]:5.1f}/{r[c][1]:5.1f}" for c in ex.CATEGORIES)
    return f"  {name[:30]:30s} {r['r5']:5.1f} {r['r10']:5.1f}  {per}"


def product_compare(data: str, weight: float, rounds: int = 1) -> None:
    """The product's search (``lore eval locomo``'s indexing, hybrid mode, query embedding
    included) with neither the length prior nor the question penalty, and with the prior at
    ``weight`` and the penalty at the product's, interleaved question by question in one
    process: recall per category and the time of each search."""
    import json
    import tempfile

    from lore import tuning
    from lore.api import Lore
    from lore.config import Config, Settings
    from lore.measure import locomo
    from lore.recall import conversations as recall

    samples = json.loads(Path(data).read_text())
    weights = (0.0, weight)
    rows: dict[float, list[tuple[int, float, float]]] = {w: [] for w in weights}
    times: dict[float, list[float]] = {w: [] for w in weights}
    penalty = recall.CONVERSATIONS.question_penalty
    variants = {w: tuning.replace(recall.CONVERSATIONS, {
        "length_weight": w, "question_penalty": penalty if w else 0.0}) for w in weights}
    with tempfile.TemporaryDirectory(prefix="lore-learn-") as tmp:
        settings = Settings(config=Config(), home=Path(tmp), config_path=Path(tmp) / "c.yaml")
        settings.config.database = str(Path(tmp) / "lore.db")
        with Lore.open(settings) as lore:
            for sample in samples:
                turn_ids, _ = locomo.index(lore, sample)
                lore.conversations.embed_pending()
                sid = str(sample.get("sample_id", "conv"))
                for qa in sample["qa"][:10]:  # warm-up
                    lore.conversations.search(str(qa["question"]), project=sid, limit=10)
                for r in range(rounds):
                    for qa in sample["qa"]:
                        ev = {f"D{a}:{b}" for e in qa.get("evidence", [])
                              for a, b in locomo.EVIDENCE.findall(str(e))} & turn_ids
                        if not ev:
                            continue
                        for w in weights:  # 0: neither the prior nor the penalty
                            lore.conversations.tuning = variants[w]
                            t = time.perf_counter()
                            hits = lore.conversations.search(str(qa["question"]), project=sid,
                                                             limit=10)
                            times[w].append(1000 * (time.perf_counter() - t))
                            if r == 0:
                                dias = locomo.dia_ids(lore, [h.chunk_id for h in hits], sid)
                                rows[w].append((int(qa["category"]),
                                                len(ev & set(dias[:5])) / len(ev),
                                                len(ev & set(dias)) / len(ev)))
    for w in weights:
        xs = sorted(times[w])
        print(fmt(f"product, length {w}, question {penalty if w else 0.0}", table_row(rows[w]))
              + f"   median {np.median(xs):.2f} ms  p90 {xs[int(0.9 * (len(xs) - 1))]:.2f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--cache-dir", type=Path, default=ex.CACHE)
    ap.add_argument("--only", action="append", default=[], help="only these ideas")
    ap.add_argument("--types", action="store_true", help="print the question-type counts")
    ap.add_argument("--length", type=float, default=0.0, metavar="B",
                    help="the default these ideas build on gets + B x log(1 + words, up to 80)")
    ap.add_argument("--product", type=float, default=None, metavar="B",
                    help="also run the product's search with the length prior at 0 and B")
    ap.add_argument("--rounds", type=int, default=1, help="timing rounds with --product")
    ap.add_argument("--depth", type=int, default=100,
                    help="candidates per list (the product's conversations.candidates)")
    ap.add_argument("--question", type=float, default=0.0, metavar="Q",
                    help="the default these ideas build on loses Q for a turn that ends asking")
    args = ap.parse_args()
    global BASE_LENGTH, BASE_QUESTION, DEPTH
    BASE_LENGTH, BASE_QUESTION, DEPTH = args.length, args.question, args.depth
    t0 = time.time()
    convs, _ = ex.load(args.data, None)
    embeds = ex.Embeds(args.cache_dir)
    folds: list[list[QD]] = [prepare(x) for x in ex.contexts(convs, embeds)]
    every = [d for f in folds for d in f]
    if args.types:
        for t in TYPES:
            cats = [d.q.category for d in every if d.kind == t]
            print(t, len(cats), {ex.CATEGORIES[c]: cats.count(c) for c in ex.CATEGORIES})

    def rows_of(ds: list[QD], score: Callable[[QD], np.ndarray]) -> list:
        return [(d.q.category, *recall_of(d, score(d))) for d in ds]

    default = [rows_of(f, default_scores) for f in folds]
    print(f"{'held-out folds pooled':32s} R@5  R@10    multi-hop     temporal     "
          f"open-dom   single-hop     adversar")
    print(fmt(f"default (length {BASE_LENGTH}, question {BASE_QUESTION})",
              table_row([r for f in default for r in f])))
    sel = [k for k in GRIDS if not args.only or k in args.only]
    # results[idea][params][fold] = rows; cost[idea] = median ms
    results: dict[str, dict[tuple, list[list]]] = {}
    for name in sel:
        fn, grid = GRIDS[name]
        results[name] = {}
        times = []
        for params in grid:
            per = []
            for f in folds:
                rows = []
                for d in f:
                    t = time.perf_counter()
                    s = fn(d, *params)
                    times.append(time.perf_counter() - t)
                    rows.append((d.q.category, *recall_of(d, s)))
                per.append(rows)
            results[name][params] = per
        held, chosen = held_out(results[name], default)
        print(fmt(name, table_row(held)) + f"   {' | '.join(chosen)}"
              f"   +{1000 * float(np.median(times)):.2f} ms/q", flush=True)
        # routed: the same grid (plus off) chosen per question type
        held, chosen = [], []
        for k in range(len(folds)):
            pick = {}
            for t in TYPES:
                idx = {ci: [i for i, d in enumerate(folds[ci]) if d.kind == t]
                       for ci in range(len(folds))}
                options = {p: [pc[ci][i] for ci in range(len(folds)) if ci != k for i in idx[ci]]
                           for p, pc in results[name].items()}
                options[None] = [default[ci][i] for ci in range(len(folds)) if ci != k
                                 for i in idx[ci]]
                pick[t] = max(options, key=lambda p: (goal(options[p]), p is None))
            chosen.append("/".join("off" if pick[t] is None else ",".join(map(str, pick[t]))
                                   for t in TYPES))
            for i, d in enumerate(folds[k]):
                p = pick[d.kind]
                held.append(default[k][i] if p is None else results[name][p][k][i])
        print(fmt("route:" + name, table_row(held)) + f"   {' | '.join(chosen)}", flush=True)

    named_fixed = {0: 1.0, 2: WIN.named}  # BM25 pins the scale; the speaker bonus as today
    learners: dict[str, Callable[[list[QD]], np.ndarray]] = {
        "learned": fit_pairwise,
        "learned-ca": fit_ca,
        "learned-ca, named fixed": lambda t: fit_ca(t, frozen=(0, 2)),
        "learned-ca: cos session length": lambda t: fit_ca(t, frozen=(0, 2, 4, 5, 6, 7, 9)),
        "learned, named fixed": lambda t: fit_pairwise(t, (1, 3, 4, 5, 6, 7, 8, 9), named_fixed),
        "learned: cos session length": lambda t: fit_pairwise(t, (1, 3, 8), named_fixed),
        "learned: + neighbour": lambda t: fit_pairwise(t, (1, 3, 5, 8), named_fixed),
        "learned: + feedback cos": lambda t: fit_pairwise(t, (1, 3, 8, 9), named_fixed),
        "learned: + neighbour, feedback": lambda t: fit_pairwise(t, (1, 3, 5, 8, 9), named_fixed),
        "learned: + centroid": lambda t: fit_pairwise(t, (1, 3, 4, 8), named_fixed),
        "learned: + ranks": lambda t: fit_pairwise(t, (1, 3, 6, 7, 8), named_fixed),
        "learned: no length": lambda t: fit_pairwise(t, (1, 3, 4, 5, 6, 7, 9), named_fixed),
    }
    for name, fit in learners.items():
        if args.only and name not in args.only and not any(
                o.startswith("learned") and name.startswith(o) for o in args.only):
            continue
        held, ws, times = [], [], []
        for k in range(len(folds)):
            train = [d for ci, f in enumerate(folds) if ci != k for d in f]
            w = fit(train)
            ws.append(w)
            for d in folds[k]:
                t = time.perf_counter()
                s = features(d) @ w
                times.append(time.perf_counter() - t)
                held.append((d.q.category, *recall_of(d, s)))
        print(fmt(name, table_row(held)) + f"   +{1000 * float(np.median(times)):.2f} ms/q "
              "(features from scratch)", flush=True)
        for w in ws:
            w = w / (w[0] or 1.0)
            print("      " + "  ".join(f"{n} {v:+.2f}" for n, v in zip(FEATURES, w, strict=True)
                                       if v))
    if args.product is not None:
        product_compare(args.data, args.product, args.rounds)
    print(f"({time.time() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
