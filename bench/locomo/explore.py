"""The configuration of conversation search, found on LoCoMo: which parts find the evidence turns?

    python -m bench.locomo.explore /path/to/locomo-dev.json
    python -m bench.locomo.explore DATA --limit-conversations 1          # quick run
    python -m bench.locomo.explore DATA --only WIN --by-conversation     # some rows, per conversation

Each conversation is indexed with one unit per dialogue turn (its text, speaker and session
date). Every question is asked against its own conversation, and evidence recall@k (the share
of the question's evidence turns in the top k, averaged over questions) is printed for k = 5
and 10, overall and per category. Malformed evidence ids ("D:11:26", "D8:6; D9:17") are
normalised; ids of missing turns are dropped and counted, as are questions left without
evidence.

Keyword scores come from real SQLite FTS5 tables (sqlean) built per conversation in memory;
vector scores from the product's default embedder (all-MiniLM-L6-v2 int8). Every row of the
table is a `P` (see CONFIGS): the baselines, each part the product adopted added one at a time,
the winner `WIN` (the constants of ConversationTuning in lore/recall/conversations.py), and the
winner with one part taken out. In short, WIN is

    score = bm25 / best bm25  +  2.0 * cos(question without speaker names,
                                          embedding of "turn prev-turn next-turn")
            + 0.1 if the turn is spoken by the one speaker the question names

with BM25 over FTS5 columns text (1.0), date "8 May, 2023" (1.0) and context = the texts
of the 2 turns before and 2 after in the same session (0.3), porter tokenizer, and the
question's words minus an extended stop list and the speakers' names, quoted and OR-ed.
The alternatives that lost (docs/benchmarks.md keeps their figures) are in this file's history.

Document and question embeddings are cached in bench/.cache (--cache-dir) as .npy
keyed by a hash of the texts: a cold run takes a few minutes on 2 cores, a warm one
under a minute. The data file is only read from the path given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import sqlean as sqlite3

CACHE = Path(os.environ.get("LORE_BENCH_CORPUS_CACHE") or Path(__file__).parents[1] / ".cache")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-dom", 4: "single-hop", 5: "adversar"}

# --------------------------------------------------------------------------------------
# data


@dataclass
class Unit:
    idx: int
    dia_id: str
    session: int
    turn: int
    speaker: str
    text: str
    date: str


@dataclass
class Question:
    text: str
    category: int
    evidence: list[int]


@dataclass
class Conv:
    sample_id: str
    speakers: list[str]
    units: list[Unit]
    questions: list[Question]
    session_of: np.ndarray = field(default=None)  # type: ignore[assignment]
    prev: np.ndarray = field(default=None)  # type: ignore[assignment]  # index of previous turn in session or -1
    next: np.ndarray = field(default=None)  # type: ignore[assignment]


_EVID = re.compile(r"D:?(\d+):(\d+)")


def evidence_of(raw_ids: list[str], by_id: dict[str, int], stats: dict[str, int]) -> list[int]:
    ev: list[int] = []
    for raw in raw_ids:
        found = _EVID.findall(raw)
        if len(found) != 1 or f"D{found[0][0]}:{found[0][1]}" != raw.strip():
            stats["ids_fixed"] += 1
        for a, b in found:
            key = f"D{int(a)}:{int(b)}"
            if key not in by_id:
                stats["ids_dropped"] += 1
            elif by_id[key] not in ev:
                ev.append(by_id[key])
    return ev


def load(path: str, limit: int | None) -> tuple[list[Conv], dict[str, int]]:
    data = json.loads(Path(path).read_text())
    if limit:
        data = data[:limit]
    stats = {"questions": 0, "no_evidence": 0, "ids_fixed": 0, "ids_dropped": 0}
    convs = []
    for sample in data:
        c = sample["conversation"]
        units: list[Unit] = []
        sessions = sorted(
            int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k) and c[k]
        )
        for s in sessions:
            date = c.get(f"session_{s}_date_time", "")
            for j, t in enumerate(c[f"session_{s}"]):
                units.append(Unit(len(units), t["dia_id"], s, j, t["speaker"], t["text"], date))
        by_id = {u.dia_id: u.idx for u in units}
        qs = []
        for q in sample["qa"]:
            stats["questions"] += 1
            ev = evidence_of(q.get("evidence", []), by_id, stats)
            if not ev:
                stats["no_evidence"] += 1
                continue
            qs.append(Question(q["question"], int(q["category"]), ev))
        convs.append(linked(Conv(sample["sample_id"], [c["speaker_a"], c["speaker_b"]], units, qs)))
    return convs, stats


def linked(conv: Conv) -> Conv:
    """The conversation with each turn's session and its previous and next turn in it (-1)."""
    units, n = conv.units, len(conv.units)
    conv.session_of = np.array([u.session for u in units])
    prev, nxt = np.arange(n) - 1, np.arange(n) + 1
    prev[0], nxt[-1] = -1, -1
    for i in range(n):
        if prev[i] >= 0 and units[prev[i]].session != units[i].session:
            prev[i] = -1
        if nxt[i] >= 0 and units[nxt[i]].session != units[i].session:
            nxt[i] = -1
    conv.prev, conv.next = prev, nxt
    return conv


# --------------------------------------------------------------------------------------
# query processing

# The product's list (lore.store.sqlite.lessons._STOPWORDS), copied so the script stands alone.
PRODUCT_STOP = frozenset(
    "a an and are as at be by do does for from how i in is it of on or that the this to was "
    "what when where which why with you your we our can should".split()
)
# A fuller English function-word list plus the verbs/adverbs questions are built from.
EXT_STOP = PRODUCT_STOP | frozenset("""
about above after again against all am any because been before being below between both but
could did doing down during each few further had has have having he her here hers herself him
himself his its itself just me more most my myself no nor not now off once only other ours
ourselves out over own same she so some such than their theirs them themselves then there these
they those through too under until up very were while who whom whose will would yours yourself
yourselves s t don isn wasn didn doesn ve ll re d m o y also into ever
""".split())

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


@dataclass(frozen=True)
class QP:
    """How a question becomes keyword terms."""

    stop: str = "product"  # product | ext
    names: str = "keep"  # keep | drop  (speaker first names found in the question)


def query_terms(q: str, qp: QP, speakers: list[str]) -> tuple[list[str], list[str]]:
    """(terms, speaker names mentioned)."""
    ws = words(q)
    first = {s.split()[0].lower(): s for s in speakers}
    named = [first[w] for w in dict.fromkeys(ws) if w in first]
    stop = EXT_STOP if qp.stop == "ext" else PRODUCT_STOP
    kept = [w for w in ws if w not in stop]
    if qp.names == "drop":
        kept = [w for w in kept if w not in first]
    if not kept:
        kept = [w for w in ws if w not in first] or ws
    return list(dict.fromkeys(kept)), named


def quote(t: str) -> str:
    return '"' + t.replace('"', '""') + '"'


# --------------------------------------------------------------------------------------
# FTS5 indexes


@dataclass(frozen=True)
class Layout:
    """Which columns a unit's FTS5 row has. context = neighbouring turns' text."""

    tokenizer: str = "porter unicode61 remove_diacritics 2"
    context: int = 0  # neighbours on each side in a separate 'context' column
    day_only: bool = False  # date column holds "8 May, 2023" instead of "1:56 pm on 8 May, 2023"


COLUMNS = ("text", "speaker", "date", "context")


def build_fts(conv: Conv, lay: Layout) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, speaker, date, context, "
               f"tokenize='{lay.tokenizer}')")
    rows = []
    for u in conv.units:
        ctx = [conv.units[j].text for j in neighbours(conv, u.idx, lay.context)]
        date = u.date.split(" on ", 1)[-1] if lay.day_only else u.date
        rows.append((u.idx + 1, u.text, u.speaker, date, " ".join(ctx)))
    db.executemany("INSERT INTO t(rowid, text, speaker, date, context) VALUES (?,?,?,?,?)", rows)
    return db


def neighbours(conv: Conv, i: int, w: int, after: int | None = None) -> list[int]:
    """Turns of the same session up to w before and `after` (default w) after turn i."""
    out = []
    j = i
    for _ in range(w):
        j = conv.prev[j]
        if j < 0:
            break
        out.append(int(j))
    j = i
    for _ in range(w if after is None else after):
        j = conv.next[j]
        if j < 0:
            break
        out.append(int(j))
    return out


def fts_scores(db: Any, n: int, match: str, weights: tuple[float, ...]) -> np.ndarray:
    s = np.zeros(n, dtype=np.float64)
    if not match:
        return s
    for rowid, b in db.execute(
        "SELECT rowid, bm25(t, ?, ?, ?, ?) FROM t WHERE t MATCH ?", (*weights, match)
    ):
        s[rowid - 1] = -b
    return s


# --------------------------------------------------------------------------------------
# embeddings


class Embeds:
    """The product's default embedder, with document/query vectors cached on disk."""

    def __init__(self, cache: Path) -> None:
        self._emb: Any = None
        self.cache = cache
        cache.mkdir(parents=True, exist_ok=True)

    @property
    def emb(self) -> Any:
        if self._emb is None:
            from lore.config import EmbeddingConfig
            from lore.embed import create_embedder

            self._emb = create_embedder(EmbeddingConfig())
        return self._emb

    def docs(self, texts: list[str], tag: str = "d") -> np.ndarray:
        h = hashlib.sha1(("\x1e".join([tag, *texts])).encode()).hexdigest()[:20]
        path = self.cache / f"locomo-{tag}-{h}.npy"
        if path.exists():
            return np.load(path)
        if tag == "q":
            arr = np.vstack([self.emb.embed_query(t) for t in texts]).astype(np.float32)
        else:
            arr = np.asarray(self.emb.embed_documents(texts), dtype=np.float32)
        np.save(path, arr)
        return arr


def doc_text(conv: Conv, u: Unit, kind: str) -> str:
    """What is embedded for a turn.

    turn: the text · spk: "Speaker: text" · cBA: the turn first, then its B turns before and
    A turns after (same session) in order, space-joined (c11: the product's)
    """
    if kind == "turn":
        return u.text
    if kind == "spk":
        return f"{u.speaker}: {u.text}"
    if re.fullmatch(r"c\d\d", kind):
        b, a = int(kind[1]), int(kind[2])
        idx = [u.idx, *sorted(neighbours(conv, u.idx, b, a))]
        return " ".join(conv.units[j].text for j in idx)
    raise ValueError(kind)


# --------------------------------------------------------------------------------------
# per-conversation component cache


class Ctx:
    """One conversation's indexes and vectors, built lazily and memoised."""

    def __init__(self, conv: Conv, embeds: Embeds) -> None:
        self.conv = conv
        self.n = len(conv.units)
        self.embeds = embeds
        self._dbs: dict[Layout, sqlite3.Connection] = {}
        self._dvec: dict[str, np.ndarray] = {}
        self._qvec: dict[str, np.ndarray] = {}
        self._memo: dict[tuple, np.ndarray] = {}
        self.speaker_idx = np.array([conv.speakers.index(u.speaker) if u.speaker in conv.speakers
                                     else -1 for u in conv.units])

    def db(self, lay: Layout) -> Any:
        if lay not in self._dbs:
            self._dbs[lay] = build_fts(self.conv, lay)
        return self._dbs[lay]

    def dvec(self, kind: str) -> np.ndarray:
        if kind not in self._dvec:
            texts = [doc_text(self.conv, u, kind) for u in self.conv.units]
            self._dvec[kind] = self.embeds.docs(texts)
        return self._dvec[kind]

    def set_queries(self, qvecs: dict[str, np.ndarray]) -> None:
        self._qvec = qvecs

    def qvec(self, qkind: str, qi: int) -> np.ndarray:
        return self._qvec[qkind][qi]

    def bm25(self, q: str, qp: QP, lay: Layout, w: tuple[float, float, float, float]) -> np.ndarray:
        """Positive BM25 (FTS5's bm25() negated) for every unit, 0 where nothing matched.

        Terms are quoted and OR-ed, and restricted to the columns of positive weight
        other than speaker.
        """
        key = (q, qp, lay, w)
        if key in self._memo:
            return self._memo[key]
        terms, _ = query_terms(q, qp, self.conv.speakers)
        cols = [c for c, wt in zip(COLUMNS, w, strict=True) if wt > 0 and c != "speaker"]
        colspec = "{" + " ".join(cols) + "} : "
        s = fts_scores(self.db(lay), self.n, " OR ".join(colspec + quote(t) for t in terms), w)
        self._memo[key] = s
        return s

    def named_mask(self, q: str) -> np.ndarray:
        """Units spoken by the one conversation speaker the question names (none if 0 or 2)."""
        _, named = query_terms(q, QP(), self.conv.speakers)
        if len(named) != 1:
            return np.zeros(self.n, dtype=bool)
        return self.speaker_idx == self.conv.speakers.index(named[0])


# --------------------------------------------------------------------------------------
# score helpers


def ranks(s: np.ndarray) -> np.ndarray:
    """1-based rank of each unit (stable: the earlier unit wins ties)."""
    order = np.argsort(-s, kind="stable")
    r = np.empty(len(s), dtype=np.int64)
    r[order] = np.arange(1, len(s) + 1)
    return r


def bm_norm(s: np.ndarray) -> np.ndarray:
    """BM25 divided by the best hit's: 1 for the top keyword hit, 0 for non-matches."""
    hi = s.max()
    return s / hi if hi > 0 else s


# --------------------------------------------------------------------------------------
# the pipeline: every configuration is a P


PORTER = "porter unicode61 remove_diacritics 2"
UNICODE = "unicode61 remove_diacritics 2"


@dataclass(frozen=True)
class P:
    # keyword side (kw=False: no keyword retrieval)
    kw: bool = True
    tokenizer: str = PORTER
    stop: str = "product"  # product | ext   (see query_terms)
    bm_names: str = "keep"  # keep | drop: speaker names in the keyword query
    context: int = 0  # neighbouring turns (same session, each side) in the 'context' column
    w_text: float = 1.0  # bm25() column weights (the speaker column's is 0)
    w_date: float = 0.0
    w_context: float = 0.0
    day_only: bool = False  # date column without the time of day
    # vector side ("": no vector retrieval)
    kind: str = ""  # what is embedded (doc_text kinds)
    vq: str = "q"  # q: question as asked | qn: speaker names removed
    # fusion
    fusion: str = "score"  # score: bm25/max + a·cos | rrf: reciprocal ranks, k 60, 1:1
    a: float = 1.0
    depth: int = 100  # candidates per list (vector top-depth, keyword top-depth)
    named: float = 0.0  # + named × [unit spoken by the speaker the question names]

    def qp(self) -> QP:
        return QP(stop=self.stop, names=self.bm_names)

    def layout(self) -> Layout:
        return Layout(tokenizer=self.tokenizer, context=self.context, day_only=self.day_only)

    def weights(self) -> tuple[float, float, float, float]:
        return (self.w_text, 0.0, self.w_date, self.w_context)


def score(x: Ctx, qi: int, q: Question, p: P) -> np.ndarray:
    bm = x.bm25(q.text, p.qp(), p.layout(), p.weights()) if p.kw else None
    cos = x.dvec(p.kind) @ x.qvec(p.vq, qi) if p.kind else None
    if bm is None:
        assert cos is not None
        s = cos.astype(np.float64)
    elif cos is None:
        s = bm_norm(bm)
    else:
        keep = np.zeros(x.n, dtype=bool)  # the union of both candidate lists
        kr, vr = ranks(bm), ranks(cos)
        keep[(kr <= p.depth) & (bm > 0)] = True
        keep[vr <= p.depth] = True
        if p.fusion == "rrf":
            s = ((bm > 0) & (kr <= p.depth)) / (60.0 + kr) + (vr <= p.depth) / (60.0 + vr)
        else:
            s = bm_norm(bm) + p.a * cos
        s = np.where(keep, s, -1e9)
    if p.named:
        s = s + p.named * x.named_mask(q.text)
    return s


# ---- the configurations, in table order: (section, name, P)
BM0 = P()  # product keyword search as it is: porter, product stop words, OR, text only
VEC0 = P(kw=False, kind="turn")
VEC0S = P(kw=False, kind="spk")
# best keyword-only: extended stop list, names dropped, context column, date column
KW = P(stop="ext", bm_names="drop", context=2, w_context=0.3, w_date=1.0, day_only=True)
# the winner: KW fused with the (names-free) question against turn+prev+next embeddings
WIN = replace(KW, kind="c11", vq="qn", a=2.0, named=0.1)

CONFIGS: list[tuple[str, str, P]] = [
    ("baselines", "BM25 (porter, product stop words, OR, text column)", BM0),
    ("baselines", "vector: turn text", VEC0),
    ("baselines", "vector: 'Speaker: text'", VEC0S),
    ("baselines", "RRF k60 1:1 (BM25 + vector 'Speaker: text')",
     replace(BM0, kind="spk", fusion="rrf")),
    # keyword side, one change from BM25 baseline
    ("keyword: one change", "stop words: extended list", replace(BM0, stop="ext")),
    ("keyword: one change", "speaker names dropped from query", replace(BM0, bm_names="drop")),
    ("keyword: one change", "unicode61 (no porter stemming)", replace(BM0, tokenizer=UNICODE)),
    ("keyword: one change", "date column w 1.0 (day only)", replace(BM0, w_date=1.0, day_only=True)),
    ("keyword: one change", "context column 2+2, w .3", replace(BM0, context=2, w_context=0.3)),
    # keyword side, cumulative
    ("keyword: cumulative", "+ extended stop list", replace(BM0, stop="ext")),
    ("keyword: cumulative", "+ names dropped", replace(BM0, stop="ext", bm_names="drop")),
    ("keyword: cumulative", "+ context 2+2 w .3",
     replace(BM0, stop="ext", bm_names="drop", context=2, w_context=0.3)),
    ("keyword: cumulative", "+ date column (day only) w 1.0  = KW", KW),
    *[("keyword: cumulative", f"KW, context w {w}", replace(KW, w_context=w)) for w in (0.2, 0.4)],
    ("keyword: cumulative", "KW, context 1+1 w .5", replace(KW, context=1, w_context=0.5)),
    ("keyword: cumulative", "KW, context 3+3", replace(KW, context=3)),
    # vector side
    ("vector", "turn, question without names", replace(VEC0, vq="qn")),
    ("vector", "'Speaker: text', question without names", replace(VEC0S, vq="qn")),
    ("vector", "turn+prev+next (turn first), q without names", P(kw=False, kind="c11", vq="qn")),
    ("vector", "turn+prev+next, question as asked", P(kw=False, kind="c11")),
    # fusion of KW with the turn+prev+next vectors (no named bonus)
    ("fusion (KW + vec c11, qn)", "RRF k60 1:1", replace(KW, kind="c11", vq="qn", fusion="rrf")),
    *[("fusion (KW + vec c11, qn)", f"bm25/max + {a} cos", replace(KW, kind="c11", vq="qn", a=a))
      for a in (0.5, 1.0, 1.5, 2.0, 3.0)],
    ("fusion (KW + vec c11, qn)", "bm25/max + 2 cos, candidates top-20 each",
     replace(KW, kind="c11", vq="qn", a=2.0, depth=20)),
    # the named-speaker bonus on the fused score
    *[("named-speaker bonus (on bm25/max + 2 cos)", f"+{nb}", replace(WIN, named=nb))
      for nb in (0.05, 0.1, 0.15, 0.2)],
    # the winner and what each part is worth
    ("WINNER", "WIN = KW + 2 cos(c11, qn) + .1 named", WIN),
    ("WIN minus one part", "- context column", replace(WIN, context=0, w_context=0.0)),
    ("WIN minus one part", "- date column", replace(WIN, w_date=0.0)),
    ("WIN minus one part", "- date column day-only (full date-time)", replace(WIN, day_only=False)),
    ("WIN minus one part", "- extended stop list (product list)", replace(WIN, stop="product")),
    ("WIN minus one part", "- names dropped in BM25 query", replace(WIN, bm_names="keep")),
    ("WIN minus one part", "- names dropped in vector query", replace(WIN, vq="q")),
    ("WIN minus one part", "- porter (unicode61)", replace(WIN, tokenizer=UNICODE)),
    ("WIN minus one part", "- neighbours in embedding (turn only)", replace(WIN, kind="turn")),
    ("WIN minus one part", "- named-speaker bonus", replace(WIN, named=0.0)),
    ("WIN minus one part", "- score fusion (RRF k60 1:1 instead)",
     replace(WIN, fusion="rrf", named=0.0)),
    ("WIN minus one part", "- vectors (KW + named bonus only)", replace(WIN, kind="")),
]


# --------------------------------------------------------------------------------------
# main


def strip_names(text: str, speakers: list[str]) -> str:
    """The question without the speakers' first names (and their possessive 's)."""
    first = {s.split()[0].lower() for s in speakers}
    toks = re.findall(r"[\w']+|[^\w\s]", text)
    return " ".join(t for t in toks if t.lower().split("'")[0] not in first)


def recall_of(s: np.ndarray, evidence: list[int]) -> tuple[float, float]:
    """Evidence recall@5 and @10 of the ranking by ``s`` (stable: the earlier unit wins ties)."""
    top = np.argsort(-s, kind="stable")[:10].tolist()
    ev = set(evidence)
    return len(ev & set(top[:5])) / len(ev), len(ev & set(top)) / len(ev)


def pct(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return 100 * float(np.mean([a for a, _ in pairs])), 100 * float(np.mean([b for _, b in pairs]))


def evaluate(ctxs: list[Ctx], p: P) -> dict:
    per_cat: dict[int, list[tuple[float, float]]] = defaultdict(list)
    per_conv: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for x in ctxs:
        for qi, q in enumerate(x.conv.questions):
            r = recall_of(score(x, qi, q, p), q.evidence)
            per_cat[q.category].append(r)
            per_conv[x.conv.sample_id].append(r)
    row: dict[Any, Any] = dict(zip(("r5", "r10"), pct([v for vs in per_cat.values() for v in vs]),
                                   strict=True))
    for c in CATEGORIES:
        row[c] = pct(per_cat[c]) if per_cat.get(c) else None
    row["conv"] = {k: pct(vs) for k, vs in per_conv.items()}
    return row


def contexts(convs: list[Conv], embeds: Embeds) -> list[Ctx]:
    """Each conversation's search context, with its questions embedded as they are and with the
    speakers' names taken out ("q" and "qn")."""
    ctxs = []
    for conv in convs:
        x = Ctx(conv, embeds)
        texts = [q.text for q in conv.questions]
        x.set_queries({"q": embeds.docs(texts, "q"),
                       "qn": embeds.docs([strip_names(t, conv.speakers) for t in texts], "q")})
        ctxs.append(x)
    return ctxs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="path to locomo-dev.json (or another LoCoMo-format file)")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N",
                    help="only the first N conversations (quick runs)")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="only configurations whose section or name contains TEXT (repeatable)")
    ap.add_argument("--cache-dir", type=Path, default=CACHE,
                    help="where embeddings are cached (default bench/.cache)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--by-conversation", action="store_true",
                    help="also print R@5/R@10 of each conversation under each row")
    args = ap.parse_args()

    t0 = time.time()
    convs, stats = load(args.data, args.limit_conversations)
    nq = sum(len(c.questions) for c in convs)
    print(f"{len(convs)} conversations, {sum(len(c.units) for c in convs)} turns, {nq} questions "
          f"scored (of {stats['questions']}; {stats['no_evidence']} without usable evidence); "
          f"evidence ids: {stats['ids_fixed']} malformed normalised, "
          f"{stats['ids_dropped']} pointing at missing turns dropped", flush=True)
    ctxs = contexts(convs, Embeds(args.cache_dir))

    chosen = [(sec, name, p) for sec, name, p in CONFIGS
              if not args.only or any(o in sec or o in name for o in args.only)]
    cats = "  ".join(f"{CATEGORIES[c]:>11s}" for c in CATEGORIES)
    if args.markdown:
        print("| section | config | R@5 | R@10 | "
              + " | ".join(f"{CATEGORIES[c]} @5/@10" for c in CATEGORIES) + " |")
        print("|" + "---|" * (4 + len(CATEGORIES)))
    else:
        print(f"{'config':60s}  R@5  R@10  {cats}   (per category: @5/@10)")
    section = None
    for sec, name, p in chosen:
        row = evaluate(ctxs, p)
        if args.markdown:
            per = " | ".join(f"{row[c][0]:.1f} / {row[c][1]:.1f}" if row[c] else "-"
                             for c in CATEGORIES)
            print(f"| {sec} | {name} | {row['r5']:.1f} | {row['r10']:.1f} | {per} |", flush=True)
            continue
        if sec != section:
            print(f"-- {sec}")
            section = sec
        per = "  ".join(f"{row[c][0]:5.1f}/{row[c][1]:5.1f}" if row[c] else f"{'-':>11s}"
                        for c in CATEGORIES)
        print(f"  {name[:58]:58s} {row['r5']:5.1f} {row['r10']:5.1f}  {per}", flush=True)
        if args.by_conversation:
            print("      " + "  ".join(f"{k} {a:.1f}/{b:.1f}" for k, (a, b) in row["conv"].items()))
    print(f"({time.time() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
