"""Re-ranking conversation search by a language model, measured on LoCoMo through the product.

    python -m bench.locomo.rerank DATA --ceiling            # recall@k of the search: what the model can reach
    python -m bench.locomo.rerank DATA --cost 3             # building a request: ms and tokens
    lore eval locomo DATA --rerank-prompts prompts/         # the requests, as the product sends them
    python -m bench.locomo.rerank DATA --replies replies/   # the replies scored, paired
    python -m bench.locomo.rerank DATA --live prompts/ replies/   # the same, through a live provider

``--ceiling`` prints the product's default search recall@k for k = 5 … 60, overall and per
category: a re-ranker reading the best n can at most bring the evidence among them into the top
10. It is what chose ``rerank_candidates`` (40); no re-ranked figure was looked at to choose it.

``--replies`` reads one reply per request (any model, or a reader shown one request file at a
time and nothing else: the requests hold no evidence ids, answers or categories) and prints the
default search against its re-ordering: recall@5 / @10 overall, per category and per
conversation, and a paired bootstrap interval (95 %, 2,000 resamples of the questions) for the
difference. Nothing is tuned on the replies, so these figures are out of sample.

``--live PROMPTS REPLIES`` checks the product's live path gives the same figures: a loopback
server speaking the Anthropic Messages API answers each request with the reply saved for the
request file whose text it received (an unknown request gets an error reply), and ``lore eval
locomo --rerank``'s code runs against it (the guard's redaction, budget and log, the provider,
the parsing, the fall-back on errors).

``--cost N``: N rounds over every question: the time to fetch the 40 excerpts' texts and build
the request (median / p90 ms, on top of the search), and the request's input tokens (4
characters a token).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from lore.config import default_settings
from lore.measure import locomo

KS = (5, 10, 20, 30, 40, 60)
CATS = ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial")


def ceiling(data: Path) -> None:
    samples = locomo.load(data)
    found: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory() as tmp, locomo.opened(default_settings(Path(tmp)), None) as lore:
        for q in locomo.each_question(lore, samples, {"dropped": 0, "skipped": 0}):
            hits = lore.conversations.search(q.text, project=q.sid, limit=max(KS))
            dias = locomo.dia_ids(lore, [h.chunk_id for h in hits], q.sid)
            for k in KS:
                share = len(q.evidence & set(dias[:k])) / len(q.evidence)
                found["all"][k].append(share)
                found[q.category][k].append(share)
    print("| the default search, recall@k | " + " | ".join(f"@{k}" for k in KS) + " |")
    print("|---|" + "---|" * len(KS))
    for cat in ("all", *CATS):
        row = found[cat]
        print(f"| {cat} ({len(row[5])}) | " + " | ".join(f"{100 * statistics.fmean(row[k]):.1f}"
                                                      for k in KS) + " |")


def cost(data: Path, rounds: int) -> None:
    samples = locomo.load(data)
    times: list[float] = []
    tokens: list[int] = []
    with tempfile.TemporaryDirectory() as tmp, locomo.opened(default_settings(Path(tmp)), None) as lore:
        conv = lore.conversations
        questions = list(locomo.each_question(lore, samples, {"dropped": 0, "skipped": 0}))
        # Every conversation is indexed now; search once, then time the request alone.
        hits = {q.number: conv.search(q.text, project=q.sid, limit=conv.tuning.rerank_candidates)
                for q in questions}
        for r in range(rounds):
            for q in questions:
                started = time.perf_counter()
                rr = conv.rerank_request(q.text, hits[q.number], 10)
                times.append((time.perf_counter() - started) * 1000)
                if r == 0:
                    tokens.append(rr.input_tokens)
    times.sort()
    tokens.sort()
    print(f"building a request ({len(questions)} questions x {rounds} rounds): median "
          f"{statistics.median(times):.2f} ms, p90 {times[int(0.9 * len(times))]:.2f} ms")
    print(f"input tokens a request: median {statistics.median(tokens):.0f}, p90 "
          f"{tokens[int(0.9 * len(tokens))]}, max {tokens[-1]}")


def bootstrap(pairs: list[tuple[float, float]], n: int = 2000, seed: int = 7) -> tuple[float, float]:
    rng = random.Random(seed)
    diffs = []
    for _ in range(n):
        sample = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        diffs.append(100 * statistics.fmean(b - a for a, b in sample))
    diffs.sort()
    return diffs[int(0.025 * n)], diffs[int(0.975 * n)]


def replies(data: Path, folder: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        got = locomo.rerank_figures(data, default_settings(Path(tmp)), folder, per_question=True)
    rows: list[dict[str, Any]] = got["per_question"]
    print(f"{got['questions']} questions; replies read {got['replies_read']}, missing "
          f"{len(got['replies_missing'])}, unreadable {len(got['replies_unreadable'])}; tokens a "
          f"request: input {got['tokens']['input_per_request']}, output "
          f"{got['tokens']['output_per_request']}\n")
    d, r = got["default"], got["reranked"]
    print("| LoCoMo dev | @5 | @10 | " + " | ".join(CATS) + " |")
    print("|---|---|---|" + "---|" * len(CATS))
    for name, b in (("default search", d), (f"re-ranked (the best {got['rerank_candidates']})", r)):
        cats = " | ".join(f"{b['categories'][c]['recall@5']} / {b['categories'][c]['recall@10']}"
                          if c in b["categories"] else "" for c in CATS)
        print(f"| {name} | {b['recall@5']} | {b['recall@10']} | {cats} |")
    print()
    for k in (5, 10):
        lo, hi = bootstrap([(x[f"default@{k}"], x[f"reranked@{k}"]) for x in rows])
        print(f"difference @{k}: {r[f'recall@{k}'] - d[f'recall@{k}']:+.1f} (95 % {lo:+.1f} to {hi:+.1f})")
    print("\n| conversation | questions | default @5 / @10 | re-ranked @5 / @10 |\n|---|---|---|---|")
    for conv, v in d["conversations"].items():
        w = r["conversations"][conv]
        print(f"| {conv} | {v['questions']} | {v['recall@5']} / {v['recall@10']} | "
              f"{w['recall@5']} / {w['recall@10']} |")


def live(data: Path, prompts: Path, folder: Path) -> None:
    import json
    import os
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from lore.config import Config, Settings
    from lore.llm.base import USER_HEADER

    answers = {}
    for file in prompts.iterdir():
        user = file.read_text(encoding="utf-8").split(f"\n{USER_HEADER}\n", 1)[1]
        reply = folder / file.name
        if reply.is_file():
            answers[user.rstrip()] = reply.read_text(encoding="utf-8")
    served = {"known": 0, "unknown": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            text = answers.get(body["messages"][0]["content"].rstrip())
            served["known" if text is not None else "unknown"] += 1
            payload = {"id": "msg_bench", "type": "message", "role": "assistant",
                       "model": "replies-from-files", "stop_reason": "end_turn",
                       "content": [{"type": "text", "text": text or "(no saved reply)"}],
                       "usage": {"input_tokens": 0, "output_tokens": 0}}
            raw = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Config.model_validate({"llm": {
                "provider": "anthropic", "base_url": f"http://127.0.0.1:{server.server_address[1]}",
                "max_retries": 0, "daily_token_budget": None}})
            settings = Settings(config=config, home=Path(tmp), config_path=Path(tmp) / "config.yaml")
            got = locomo.evaluate(data, settings, rerank=True)
    finally:
        server.shutdown()
        server.server_close()
    r = got["reranked"]
    print(f"through the live path: default {got['recall@5']} / {got['recall@10']}, re-ranked "
          f"{r['recall@5']} / {r['recall@10']} ({r['failed']} calls failed; requests answered "
          f"from a saved reply {served['known']}, unknown {served['unknown']})")
    for c, v in r["categories"].items():
        print(f"  {c}: {v['recall@5']} / {v['recall@10']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--ceiling", action="store_true")
    ap.add_argument("--cost", type=int, default=0, metavar="ROUNDS")
    ap.add_argument("--replies", type=Path)
    ap.add_argument("--live", type=Path, nargs=2, metavar=("PROMPTS", "REPLIES"))
    args = ap.parse_args()
    if not (args.ceiling or args.cost or args.replies or args.live):
        ap.error("give --ceiling, --cost, --replies or --live")
    if args.ceiling:
        ceiling(args.data)
    if args.cost:
        cost(args.data, args.cost)
    if args.replies:
        replies(args.data, args.replies)
    if args.live:
        live(args.data, *args.live)


if __name__ == "__main__":
    sys.exit(main())
