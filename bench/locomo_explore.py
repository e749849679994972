"""Retrieval exploration on LoCoMo: which configuration finds the evidence turns?

    python bench/locomo_explore.py /path/to/locomo-dev.json
    python bench/locomo_explore.py /path/to/locomo-dev.json --limit-conversations 1
    python bench/locomo_explore.py DATA --only bm25 --only best   # configs whose name contains...

Each conversation is indexed as conversation memory with one unit per dialogue turn
(fields: text, speaker, session date; optionally the shared photo's caption). Every
question is asked against its own conversation, and evidence recall@k (share of the
question's evidence turns in the top k, averaged over questions) is reported for k=5
and k=10, overall and per category.

Keyword scores come from real SQLite FTS5 tables (sqlean) built per conversation in
memory; vector scores from the product's default embedder (all-MiniLM-L6-v2 int8).
Document embeddings are cached in bench/.cache as .npy keyed by a hash of the texts.
The data file is only read from the path given; nothing of it is written elsewhere
except those embedding caches.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sqlean as sqlite3

CACHE = Path(__file__).parent / ".cache"
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
    caption: str


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


def load(path: str, limit: int | None) -> tuple[list[Conv], dict[str, int]]:
    data = json.loads(Path(path).read_text())
    if limit:
        data = data[:limit]
    stats = {"questions": 0, "no_evidence": 0, "ids_fixed": 0, "ids_dropped": 0}
    convs = []
    for sample in data:
        c = sample["conversation"]
        speakers = [c["speaker_a"], c["speaker_b"]]
        units: list[Unit] = []
        sessions = sorted(
            int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k) and c[k]
        )
        for s in sessions:
            date = c.get(f"session_{s}_date_time", "")
            for j, t in enumerate(c[f"session_{s}"]):
                units.append(Unit(len(units), t["dia_id"], s, j, t["speaker"], t["text"], date,
                                  t.get("blip_caption", "") or ""))
        by_id = {u.dia_id: u.idx for u in units}
        qs = []
        for q in sample["qa"]:
            stats["questions"] += 1
            ev: list[int] = []
            for raw in q.get("evidence", []):
                found = _EVID.findall(raw)
                if len(found) != 1 or f"D{found[0][0]}:{found[0][1]}" != raw.strip():
                    stats["ids_fixed"] += 1
                for a, b in found:
                    key = f"D{int(a)}:{int(b)}"
                    if key in by_id:
                        if by_id[key] not in ev:
                            ev.append(by_id[key])
                    else:
                        stats["ids_dropped"] += 1
            if not ev:
                stats["no_evidence"] += 1
                continue
            qs.append(Question(q["question"], int(q["category"]), ev))
        conv = Conv(sample["sample_id"], speakers, units, qs)
        n = len(units)
        conv.session_of = np.array([u.session for u in units])
        prev = np.arange(n) - 1
        nxt = np.arange(n) + 1
        prev[0] = -1
        nxt[-1] = -1
        for i in range(n):
            if prev[i] >= 0 and units[prev[i]].session != units[i].session:
                prev[i] = -1
            if nxt[i] >= 0 and units[nxt[i]].session != units[i].session:
                nxt[i] = -1
        conv.prev, conv.next = prev, nxt
        convs.append(conv)
    return convs, stats


# --------------------------------------------------------------------------------------
# query processing

# The product's list (lore.store.lessons._STOPWORDS), copied so the script stands alone.
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
# Question-framing words that rarely occur in the answering turn.
QUESTION_WORDS = frozenset("""
kind type sort likely might many much long often name names mention mentioned
""".split())

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


@dataclass(frozen=True)
class QP:
    """How a question becomes keyword terms."""

    stop: str = "product"  # none | product | ext | ext+q
    names: str = "keep"  # keep | drop  (speaker first names found in the question)
    min_len: int = 1


def query_terms(q: str, qp: QP, speakers: list[str]) -> tuple[list[str], list[str]]:
    """(terms, speaker names mentioned)."""
    ws = words(q)
    first = {s.split()[0].lower(): s for s in speakers}
    named = [first[w] for w in dict.fromkeys(ws) if w in first]
    stop = {
        "none": frozenset(), "product": PRODUCT_STOP, "ext": EXT_STOP,
        "ext+q": EXT_STOP | QUESTION_WORDS,
    }[qp.stop]
    kept = [w for w in ws if w not in stop and len(w) >= qp.min_len]
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
    caption: bool = False  # photo caption inside the text column
    context: int = 0  # neighbours on each side in a separate 'context' column
    before: int | None = None  # override: previous turns in the context column
    after: int | None = None  # override: following turns in the context column


COLUMNS = ("text", "speaker", "date", "context")


def unit_text(u: Unit, caption: bool) -> str:
    if caption and u.caption:
        return f"{u.text} [shares {u.caption}]"
    return u.text


def build_fts(conv: Conv, lay: Layout) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, speaker, date, context, "
               f"tokenize='{lay.tokenizer}')")
    rows = []
    for u in conv.units:
        ctx = []
        b = lay.context if lay.before is None else lay.before
        a = lay.context if lay.after is None else lay.after
        for j in neighbours(conv, u.idx, b, a):
            ctx.append(unit_text(conv.units[j], lay.caption))
        rows.append((u.idx + 1, unit_text(u, lay.caption), u.speaker, u.date, " ".join(ctx)))
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


def fts_scores(db, n: int, match: str, weights: tuple[float, ...]) -> np.ndarray:
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
    def __init__(self) -> None:
        self._emb = None
        CACHE.mkdir(exist_ok=True)

    @property
    def emb(self):
        if self._emb is None:
            from lore.config import EmbeddingConfig
            from lore.embed import create_embedder

            self._emb = create_embedder(EmbeddingConfig())
        return self._emb

    def docs(self, texts: list[str], tag: str = "d") -> np.ndarray:
        h = hashlib.sha1(("\x1e".join([tag, *texts])).encode()).hexdigest()[:20]
        path = CACHE / f"locomo-{tag}-{h}.npy"
        if path.exists():
            return np.load(path)
        if tag == "q":
            arr = np.vstack([self.emb.embed_query(t) for t in texts]).astype(np.float32)
        else:
            arr = np.asarray(self.emb.embed_documents(texts), dtype=np.float32)
        np.save(path, arr)
        return arr


def doc_text(conv: Conv, u: Unit, kind: str) -> str:
    """What is embedded for a turn."""
    cap = "cap" in kind
    t = unit_text(u, cap)
    if kind.startswith("turn"):
        return t
    if kind.startswith("spk"):
        return f"{u.speaker}: {t}"
    if kind.startswith("date"):
        return f"{u.date}. {u.speaker}: {t}"
    if kind.startswith("win"):  # previous turn, the turn, next turn (w=1), speakers shown
        w = int(kind[3])
        idx = sorted([*neighbours(conv, u.idx, w), u.idx])
        return " ".join(f"{conv.units[j].speaker}: {unit_text(conv.units[j], cap)}" for j in idx)
    if kind.startswith("prev"):  # previous turn then the turn
        idx = [j for j in [conv.prev[u.idx]] if j >= 0] + [u.idx]
        return " ".join(f"{conv.units[j].speaker}: {unit_text(conv.units[j], cap)}" for j in idx)
    if kind.startswith("w"):  # wBA: B turns before, A after, speakers shown ("w21")
        b, a = int(kind[1]), int(kind[2])
        idx = sorted([*neighbours(conv, u.idx, b, a), u.idx])
        return " ".join(f"{conv.units[j].speaker}: {unit_text(conv.units[j], cap)}" for j in idx)
    if kind.startswith("t"):  # tBA: same without speaker names
        b, a = int(kind[1]), int(kind[2])
        idx = sorted([*neighbours(conv, u.idx, b, a), u.idx])
        return " ".join(unit_text(conv.units[j], cap) for j in idx)
    raise ValueError(kind)


# --------------------------------------------------------------------------------------
# per-conversation component cache


class Ctx:
    """Score vectors for one conversation, computed lazily and memoised."""

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

    def db(self, lay: Layout):
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

    # ---- components
    def bm25(self, q: str, qp: QP = QP(), lay: Layout = Layout(),
             w: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0),
             speaker_term: bool = False, mode: str = "or") -> np.ndarray:
        key = ("bm25", q, qp, lay, w, speaker_term, mode)
        if key in self._memo:
            return self._memo[key]
        terms, named = query_terms(q, qp, self.conv.speakers)
        cols = [c for c, wt in zip(COLUMNS, w, strict=True) if wt > 0 and c != "speaker"]
        colspec = "{" + " ".join(cols) + "} : " if cols else ""
        parts = [colspec + quote(t) for t in terms] if cols else []
        if speaker_term and named:
            parts += [f"speaker : {quote(nm.split()[0].lower())}" for nm in named]
        db = self.db(lay)
        if mode == "or":
            s = fts_scores(db, self.n, " OR ".join(parts), w)
        else:  # "and-first": rows matching all terms first, then the OR ranking
            s = fts_scores(db, self.n, " OR ".join(parts), w)
            if len(parts) > 1:
                a = fts_scores(db, self.n, " AND ".join(parts), w)
                s = s + (a > 0) * (s.max() + 1.0)
        self._memo[key] = s
        return s

    def cos(self, qi: int, kind: str, qkind: str = "q") -> np.ndarray:
        return self.dvec(kind) @ self._qvec[qkind][qi]

    def named_mask(self, q: str) -> np.ndarray:
        _, named = query_terms(q, QP(), self.conv.speakers)
        if not named or len(named) == 2:
            return np.zeros(self.n, dtype=bool)
        return np.isin(self.speaker_idx, [self.conv.speakers.index(nm) for nm in named])


# --------------------------------------------------------------------------------------
# score combinators


def ranks(s: np.ndarray) -> np.ndarray:
    """1-based rank of each unit (stable: earlier unit wins ties)."""
    order = np.argsort(-s, kind="stable")
    r = np.empty(len(s), dtype=np.int64)
    r[order] = np.arange(1, len(s) + 1)
    return r


def rrf(parts: list[tuple[float, np.ndarray]], k: float = 60, depth: int | None = None,
        valid: list[np.ndarray | None] | None = None) -> np.ndarray:
    out = np.zeros(len(parts[0][1]))
    for i, (w, s) in enumerate(parts):
        r = ranks(s).astype(float)
        contrib = w / (k + r)
        if valid is not None and valid[i] is not None:
            contrib = contrib * valid[i]
        if depth is not None:
            contrib = contrib * (r <= depth)
        out += contrib
    return out


def minmax(s: np.ndarray) -> np.ndarray:
    lo, hi = s.min(), s.max()
    return (s - lo) / (hi - lo) if hi > lo else np.zeros_like(s)


def bm_norm(s: np.ndarray) -> np.ndarray:
    """BM25 divided by its best value: 0 for non-matches, 1 for the top hit."""
    hi = s.max()
    return s / hi if hi > 0 else s


def zscore(s: np.ndarray) -> np.ndarray:
    sd = s.std()
    return (s - s.mean()) / sd if sd > 0 else s * 0


def smooth(conv: Conv, s: np.ndarray, beta: float, how: str = "max") -> np.ndarray:
    """Add beta × the neighbours' score (max or mean of previous and next in the session)."""
    p = np.where(conv.prev >= 0, s[np.maximum(conv.prev, 0)], 0.0)
    nx = np.where(conv.next >= 0, s[np.maximum(conv.next, 0)], 0.0)
    if how == "max":
        nb = np.maximum(p, nx)
    elif how == "next":
        nb = nx
    elif how == "prev":
        nb = p
    else:
        nb = (p + nx) / 2
    return s + beta * nb


def session_boost(conv: Conv, s: np.ndarray, gamma: float, how: str = "max") -> np.ndarray:
    sess = conv.session_of
    out = s.copy()
    for v in np.unique(sess):
        m = sess == v
        agg = s[m].max() if how == "max" else np.sort(s[m])[-3:].sum() / 3
        out[m] += gamma * agg
    return out


# --------------------------------------------------------------------------------------
# configurations

PORTER = "porter unicode61 remove_diacritics 2"
UNICODE = "unicode61 remove_diacritics 2"

Config = Callable[[Ctx, int, Question], np.ndarray]
CONFIGS: dict[str, Config] = {}


def config(name: str):
    def deco(fn):
        CONFIGS[name] = fn
        return fn
    return deco


def C(name: str, fn: Config) -> None:
    CONFIGS[name] = fn


# ---- baselines (product defaults: porter, product stop words, OR of quoted terms, text only)
C("B0 bm25 (porter, product stop, text)", lambda x, i, q: x.bm25(q.text))
C("B1 vector (turn text)", lambda x, i, q: x.cos(i, "turn"))
C("B2 rrf k60 1:1", lambda x, i, q: rrf([(1, x.bm25(q.text)), (1, x.cos(i, "turn"))]))
C("B3 rrf k60 product weights kw.3 vec.7",
  lambda x, i, q: rrf([(0.3, x.bm25(q.text)), (0.7, x.cos(i, "turn"))]))

# ---- keyword: tokenizer and query handling
for lab, qp in [("no stop", QP(stop="none")), ("ext stop", QP(stop="ext")),
                ("ext+q stop", QP(stop="ext+q")), ("ext stop, drop names", QP(stop="ext", names="drop")),
                ("product stop, drop names", QP(names="drop"))]:
    C(f"K bm25 {lab}", lambda x, i, q, qp=qp: x.bm25(q.text, qp))
C("K bm25 unicode61 (no stemming)", lambda x, i, q: x.bm25(q.text, lay=Layout(tokenizer=UNICODE)))
C("K bm25 unicode61, ext stop", lambda x, i, q: x.bm25(q.text, QP(stop="ext"), Layout(tokenizer=UNICODE)))
C("K bm25 and-first", lambda x, i, q: x.bm25(q.text, mode="and"))
C("K bm25 +caption", lambda x, i, q: x.bm25(q.text, lay=Layout(caption=True)))

QX = QP(stop="ext")
QXN = QP(stop="ext", names="drop")

# ---- keyword: columns
for wsp in (0.5, 1.0, 2.0):
    C(f"K names->speaker col w{wsp}",
      lambda x, i, q, wsp=wsp: x.bm25(q.text, QXN, w=(1, wsp, 0, 0), speaker_term=True))
C("K text+date cols (1,0,.5,0)", lambda x, i, q: x.bm25(q.text, QX, w=(1, 0, 0.5, 0)))
C("K all cols unrestricted (1,1,1,0)", lambda x, i, q: x.bm25(q.text, QX, w=(1, 1, 1, 0)))
for b in (0.25, 0.5, 1.0):
    C(f"K ext stop, named-speaker x{1+b}",
      lambda x, i, q, b=b: x.bm25(q.text, QX) * (1 + b * x.named_mask(q.text)))

# ---- keyword: neighbours
for wc in (0.1, 0.2, 0.3, 0.5):
    C(f"K context col w{wc} (win1)",
      lambda x, i, q, wc=wc: x.bm25(q.text, QX, Layout(context=1), w=(1, 0, 0, wc)))
C("K context col w0.2 (win2)",
  lambda x, i, q: x.bm25(q.text, QX, Layout(context=2), w=(1, 0, 0, 0.2)))
for beta in (0.2, 0.35, 0.5):
    C(f"K smooth max-neigh b{beta}", lambda x, i, q, b=beta: smooth(x.conv, x.bm25(q.text, QX), b))
C("K smooth mean-neigh b0.5", lambda x, i, q: smooth(x.conv, x.bm25(q.text, QX), 0.5, "mean"))
C("K session boost max g0.3", lambda x, i, q: session_boost(x.conv, x.bm25(q.text, QX), 0.3))

# ---- vector: what is embedded
for kind in ("spk", "date", "prev", "win1", "turn+cap", "win1+cap"):
    C(f"V vector {kind}", lambda x, i, q, kind=kind: x.cos(i, kind))
C("V vector query without names", lambda x, i, q: x.cos(i, "turn", "qn"))
C("V vector spk, query as is + named x", lambda x, i, q: x.cos(i, "spk") + 0.05 * x.named_mask(q.text))
C("V vector turn + win1 mean", lambda x, i, q: x.cos(i, "turn") + x.cos(i, "win1"))
C("V vector smooth max b0.5", lambda x, i, q: smooth(x.conv, x.cos(i, "turn"), 0.5))


# ---- exploration
QXN = QP(stop="ext", names="drop")
for b, a in [(1, 0), (0, 1), (2, 0), (0, 2), (2, 1), (1, 2), (2, 2), (3, 3), (3, 1), (1, 3)]:
    for wc in (0.1, 0.2, 0.3):
        C(f"X ctx b{b}a{a} w{wc} ext",
          lambda x, i, q, b=b, a=a, wc=wc: x.bm25(q.text, QX, Layout(before=b, after=a), w=(1, 0, 0, wc)))
for b, a in [(2, 2), (3, 3)]:
    for wc in (0.1, 0.2, 0.3):
        C(f"X ctx b{b}a{a} w{wc} ext nonames",
          lambda x, i, q, b=b, a=a, wc=wc: x.bm25(q.text, QXN, Layout(before=b, after=a), w=(1, 0, 0, wc)))
for kind in ("turn", "spk", "prev", "win1", "w10", "w01", "w21", "w12", "w22", "t11", "t22"):
    C(f"Y vec qn {kind}", lambda x, i, q, kind=kind: x.cos(i, kind, "qn"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="path to locomo-dev.json (or any LoCoMo-format file)")
    ap.add_argument("--limit-conversations", type=int, default=None)
    ap.add_argument("--only", action="append", default=[],
                    help="run configs whose name contains this text (repeatable)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = ap.parse_args()

    t0 = time.time()
    convs, stats = load(args.data, args.limit_conversations)
    nq = sum(len(c.questions) for c in convs)
    print(f"{len(convs)} conversations, {sum(len(c.units) for c in convs)} turns, "
          f"{nq} questions with evidence; {stats}", file=sys.stderr)
    embeds = Embeds()
    ctxs = []
    for conv in convs:
        x = Ctx(conv, embeds)
        qtexts = [q.text for q in conv.questions]
        first = {s.split()[0].lower() for s in conv.speakers}
        noname = [" ".join(w for w in re.findall(r"[\w']+|[^\w\s]", t)
                           if w.lower().split("'")[0] not in first) for t in qtexts]
        x.set_queries({"q": embeds.docs(qtexts, "q"), "qn": embeds.docs(noname, "q")})
        ctxs.append(x)
    print(f"loaded in {time.time() - t0:.1f}s", file=sys.stderr)

    names = [n for n in CONFIGS if not args.only or any(o in n for o in args.only)]
    rows = []
    for name in names:
        fn = CONFIGS[name]
        per_cat: dict[int, list[tuple[float, float]]] = defaultdict(list)
        t1 = time.time()
        for x in ctxs:
            for qi, q in enumerate(x.conv.questions):
                s = fn(x, qi, q)
                top = np.argsort(-s, kind="stable")[:10]
                ev = set(q.evidence)
                r5 = len(ev & set(top[:5].tolist())) / len(ev)
                r10 = len(ev & set(top.tolist())) / len(ev)
                per_cat[q.category].append((r5, r10))
        allr = [v for vs in per_cat.values() for v in vs]
        row = {"name": name, "r5": 100 * np.mean([a for a, _ in allr]),
               "r10": 100 * np.mean([b for _, b in allr]), "secs": time.time() - t1}
        for c in CATEGORIES:
            vs = per_cat.get(c, [])
            row[f"c{c}"] = (100 * np.mean([a for a, _ in vs]) if vs else float("nan"),
                            100 * np.mean([b for _, b in vs]) if vs else float("nan"))
        rows.append(row)
        print(fmt_row(row, args.markdown), flush=True)
    print(f"total {time.time() - t0:.0f}s", file=sys.stderr)
    return 0


def fmt_row(row, md: bool) -> str:
    cats = "  ".join(f"{row[f'c{c}'][0]:5.1f}/{row[f'c{c}'][1]:5.1f}" for c in CATEGORIES)
    if md:
        cats = " | ".join(f"{row[f'c{c}'][0]:.1f} / {row[f'c{c}'][1]:.1f}" for c in CATEGORIES)
        return f"| {row['name']} | {row['r5']:.1f} | {row['r10']:.1f} | {cats} |"
    return f"{row['name'][:52]:52s} {row['r5']:5.1f} {row['r10']:5.1f}   {cats}"


if __name__ == "__main__":
    raise SystemExit(main())
