"""scripts/train_detector.py end to end on a small labelled file written for this test."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "scripts" / "train_detector.py"
DONE = "I've switched the session store to Redis and updated the config."
POSITIVE = ["No, don't use {a}, use {b} instead", "you didn't update the {a}",
            "that's not right, the {a} goes in {b}", "from now on always use {b}",
            "revert that, the old {a} was fine", "why did you delete the {a}? put it back"]
NEGATIVE = ["thanks, looks good", "can you add {a} to the {b} page?", "what does {a} do?",
            "run the tests", "no it still doesn't work", "add a footer with {a} and {b} links",
            "perfect", "the {a} page loads now, next the {b} one"]
WORDS = ["Redis", "pnpm", "npm", "the changelog", "tabs", "the README", "jq", "Postgres"]


def test_the_training_report_runs_on_written_data(tmp_path: Path):
    rng = random.Random(3)
    rows = []
    for repo in range(12):
        for n in range(8):
            positive = n < 3
            shape = rng.choice(POSITIVE if positive else NEGATIVE)
            rows.append({"text": shape.format(a=rng.choice(WORDS), b=rng.choice(WORDS)),
                         "label": "correction" if positive else "none",
                         "durable": positive and "instead" in shape or "always" in shape,
                         "prev_agent": DONE, "source": {"repo": f"owner/repo-{repo}"}})
    path = tmp_path / "written.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run([sys.executable, str(BENCH), str(path)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    report = out.stdout
    assert "96 messages from 12 repositories; 36 positive" in report
    assert "| written.jsonl | 36 of 36 | 1.000 |" in report  # the pre-filter passes every positive
    for section in ("Nested cross-validation by repository",
                    "Precision/recall of the same nested predictions",
                    "Positive rate of the weighed messages per probability band",
                    "second-opinion band: ±", "hand-written rule (shipped)",
                    "learned (logistic, nested)", "shipped: groups"):
        assert section in report, section
    assert "wrote" not in report  # no --write: the shipped weights are untouched


def test_per_cue_weights_and_pruning_score_every_message(tmp_path: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))
    import train_detector as T

    said = [("No, don't use npm, use pnpm instead", "correction", repo) for repo in range(3)]
    said += [("from now on always use pnpm", "correction", 0)]
    said += [(n.format(a="npm", b="pnpm"), "none", repo) for repo in range(6) for n in NEGATIVE[:4]]
    said += [(p.format(a="npm", b="pnpm"), "correction", repo) for repo in range(3, 6)
             for p in POSITIVE[1:3]]
    rows = [{"text": t, "label": label, "durable": False, "prev_agent": DONE,
             "source": {"repo": f"owner/repo-{repo}"}} for t, label, repo in said]
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = T.load([path])
    every = T.nested(data, ((False, None, 10.0),), prune=2)
    assert every.prob.shape == (len(rows),) and len(every.chosen[0]) == 6
    assert all(c.startswith("groups + per-cue weights (L2 10)") for c in every.chosen[0])
    # Pruning keeps only the cues seen on the positives of more than two repositories.
    kept = T.spread_cues(data, data.y | ~data.y, 2)
    assert kept is not None and "opens_no" in kept and "always_never" not in kept
    assert T.spread_cues(data, data.y, 0) is None
