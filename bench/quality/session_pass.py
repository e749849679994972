"""What the session passes propose on a folder of transcripts.

    python -m bench.quality.session_pass [FOLDER] [--replies DIR] [--show]

FOLDER (default: the transcripts under tests/fixtures) is searched for ``*.jsonl``. For every
transcript the pattern pass runs and its learnings are counted per category. The language
model's pass needs a model, which this machine does not have: with ``--replies DIR``, a
transcript that has a reply file there (``<transcript name>.json``, the JSON a model would
answer) is run through the real pass with that reply played back, and the report says how many
learnings the reply held, how many kept a quote found in the transcript, and how many were
dropped. The figures for the played-back replies measure the checks, not a model.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from lore.capture.readers import reader_for
from lore.extract.session_learnings import llm_session_learnings, messages_from_turns, session_learnings
from lore.llm.base import Completion, Request, estimate_tokens


class PlayedBack:
    """A provider that answers every request with one recorded reply (no model)."""

    name = "played-back"
    model = "recorded reply"

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        sent = sum(len(m.content) for m in request.messages) + len(request.system)
        return Completion(self.text, sent // 4, estimate_tokens(self.text), self.model, 0.0, estimated=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?",
                    default=str(Path(__file__).parents[2] / "tests" / "fixtures" / "transcripts"))
    ap.add_argument("--replies", help="a folder of recorded replies, <transcript name>.json")
    ap.add_argument("--show", action="store_true", help="print every learning")
    args = ap.parse_args()
    files = sorted(Path(args.folder).rglob("*.jsonl"))
    total: Counter[str] = Counter()
    messages_seen = 0
    played: list[str] = []
    t0 = time.perf_counter()
    for path in files:
        reader = reader_for(path)
        if reader is None:
            continue
        messages = messages_from_turns(reader.read(path))
        messages_seen += len(messages)
        found = session_learnings(messages, session_id=path.stem)
        total.update(x.category for x in found)
        for x in found if args.show else ():
            print(f"patterns  {path.name[:12]}  [{x.category}] {x.statement}")
        reply = Path(args.replies) / f"{path.stem}.json" if args.replies else None
        if reply is not None and reply.is_file():
            provider = PlayedBack(reply.read_text(encoding="utf-8"))
            result = llm_session_learnings(provider, messages, session_id=path.stem)
            played.append(f"{path.name}: {result.proposed} in the reply, {len(result.learnings)} kept, "
                          f"{result.dropped_unquoted} dropped (no quote in the transcript; "
                          f"{result.quotes_dropped} quotes not found), {result.messages_sent} messages sent, "
                          f"{result.messages_left_out} left out")
            for x in result.learnings if args.show else ():
                print(f"llm       {path.name[:12]}  [{x.category}] {x.statement}  <- "
                      + " | ".join(json.dumps(e.quote) for e in x.evidence))
    print(f"{len(files)} transcripts, {messages_seen} messages, read in {time.perf_counter() - t0:.1f} s")
    print(f"pattern pass: {sum(total.values())} learnings " + json.dumps(dict(sorted(total.items()))))
    for line in played:
        print(f"played-back reply: {line}")


if __name__ == "__main__":
    main()
