"""Secret redaction: the corpus figures, the cost on real transcripts and on the hook path.

    python -m bench.redact_bench [--transcripts DIR] [--runs 15] [--seeds 5] [--before SRC]

1. tests/data/secrets_corpus.jsonl: secrets caught, look-alikes kept; the generated corpus
   (bench/secret_corpus.py, every format and look-alike drawn with ``--seeds`` seeds):
   secrets caught of those drawn, look-alikes redacted of those drawn, secret-named JSON fields.
2. Every text of the transcripts in DIR (default ../shared/data/transcripts): how many the
   redactor changes (each one is printed for review: on real work a change is more often a
   false positive than a secret) and its throughput, rules compiled beforehand; with
   ``--before``, the other tree's figures too, measured in the same run.
3. What the hook path pays, in CPU time of fresh processes (robust on a busy machine):
   importing the redactor, and redacting four payloads (both trees, interleaved).
4. `lore hook` as whole processes on the same four payloads, with `python -c pass` in the
   same run: medians and 90th percentiles of wall time.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import Report, pct, stats

ROOT = Path(__file__).resolve().parents[1]

REPORT = Report("redact_bench")

HOOK_CODE = r"""
import json, sys, time
t0 = time.process_time()
from lore.hooks import redact_payload
t1 = time.process_time()
redact_payload(json.loads(sys.argv[1]))
t2 = time.process_time()
print(json.dumps([(t1 - t0) * 1000, (t2 - t1) * 1000]))
"""


def corpus() -> None:
    from lore.redact import redact

    rows = [json.loads(line) for line in
            (ROOT / "tests" / "data" / "secrets_corpus.jsonl").read_text().splitlines()]
    secrets = [r for r in rows if r["expect"] == "redacted"]
    kept = [r for r in rows if r["expect"] == "kept"]
    caught = sum(r["secret"] not in redact(r["text"]) for r in secrets)
    survived = sum(redact(r["text"]) == r["text"] for r in kept)
    formats = len({r["format"] for r in secrets})
    print(f"- corpus: {caught}/{len(secrets)} secrets caught ({formats} formats), "
          f"{survived}/{len(kept)} look-alikes kept")


def generated(seeds: int) -> None:
    from bench.secret_corpus import (
        LOOK_ALIKES,
        SECRETS,
        STRUCTURED,
        look_alike_cases,
        secret_cases,
        structured_case,
    )
    from lore.redact import redact, redact_value

    cases = secret_cases(seeds)
    missed = sorted({f for f, text, secret in cases if secret in redact(text)})
    caught = sum(secret not in redact(text) for _, text, secret in cases)
    alikes = look_alike_cases(seeds)
    eaten = sorted({n for n, text in alikes if redact(text) != text})
    redacted = sum(redact(text) != text for _, text in alikes)
    fields = [structured_case(v, seed) for _, v in STRUCTURED for seed in range(seeds)]
    kept_fields = sum(any(s in json.dumps(redact_value(v)) for s in found) for v, found in fields)
    print(f"- generated corpus, {seeds} draws each: {caught}/{len(cases)} secrets caught "
          f"({len(SECRETS) - len(missed)}/{len(SECRETS)} formats on every draw); "
          f"{redacted}/{len(alikes)} look-alikes redacted ({len(eaten)}/{len(LOOK_ALIKES)} "
          f"kinds, {100 * redacted / len(alikes):.1f} %); secret-named JSON fields: "
          f"{len(fields) - kept_fields}/{len(fields)} tool inputs redacted")
    for name in missed:
        print(f"    missed: {name}")
    for name in eaten:
        print(f"    redacted look-alike: {name}")


def texts_of(folder: Path) -> list[str]:
    out: list[str] = []
    for path in sorted(folder.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                message = json.loads(line).get("message")
            except (ValueError, AttributeError):
                continue
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                for block in content:
                    if not isinstance(block, dict):
                        continue
                    out += [block[k] for k in ("text", "content") if isinstance(block.get(k), str)]
                    if "input" in block:
                        out.append(json.dumps(block["input"]))
    return out


REAL_CODE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from bench.redact_bench import texts_of
from pathlib import Path
from lore import redact as r
texts = texts_of(Path(sys.argv[2]))
for rule in r._RULES:
    rule.pattern()
t0 = time.process_time()
changed = sum(r.redact(t) != t for t in texts)
print(json.dumps([time.process_time() - t0, changed]))
"""


def trees(before: Path | None) -> dict[str, str]:
    """PYTHONPATH of each tree measured: this one, and the one before when given."""
    import os

    if before is None:
        return {"": os.environ.get("PYTHONPATH", "")}
    return {"before: ": str(before), "after: ": str(ROOT / "src")}


def real(folder: Path, before: Path | None = None, rounds: int = 5) -> None:
    """Every transcript text redacted once, rules compiled beforehand; with ``before``, that
    tree's redactor measured in the same run, the two alternating in fresh processes."""
    import os

    from lore import redact as r

    texts = texts_of(folder)
    size = sum(map(len, texts)) / 1e6
    if before is not None:
        cpu: dict[str, list[float]] = {}
        changed: dict[str, int] = {}
        for _ in range(rounds):
            for tree, path in trees(before).items():
                out = subprocess.run([sys.executable, "-c", REAL_CODE, str(ROOT), str(folder)],
                                     env=dict(os.environ, PYTHONPATH=path), capture_output=True,
                                     text=True, check=True).stdout
                seconds, n = json.loads(out)
                cpu.setdefault(tree, []).append(seconds)
                changed[tree] = n
        for tree, xs in cpu.items():
            print(f"- {tree}{len(texts):,} texts ({size:.1f} MB) from {folder.name}: "
                  f"{changed[tree]} changed; {statistics.median(xs):.3f} s CPU median "
                  f"(p90 {pct(xs, 0.9):.3f}, {rounds} processes), "
                  f"{size / statistics.median(xs):.1f} MB/s")
    for rule in r._RULES:  # compile everything first: throughput, not start-up
        rule.pattern()
    t0 = time.process_time()
    redacted = [(t, r.redact(t)) for t in texts]
    seconds = time.process_time() - t0
    diffs = [(a, b) for a, b in redacted if a != b]
    print(f"- {len(texts):,} texts ({size:.1f} MB) from {folder.name}: {len(diffs)} changed; "
          f"{seconds:.2f} s CPU, {size / seconds:.1f} MB/s")
    for _, b in diffs:
        for m in re.finditer(r"\[REDACTED:[a-z-]+\]", b):
            print("    …" + b[max(0, m.start() - 60):m.end() + 20].replace("\n", " ") + "…")


def python_source(size: int = 20_000) -> str:
    """``size`` characters of Lore's own Python: its modules in name order, joined."""
    text = ""
    for path in sorted((ROOT / "src" / "lore").rglob("*.py")):
        text += path.read_text(encoding="utf-8")
        if len(text) >= size:
            break
    return text[:size]


def hook(runs: int, before: Path | None = None) -> None:
    """CPU of importing the hook module and redacting each payload, in fresh processes (both
    trees interleaved when ``before`` is given)."""
    import os

    prompt = ("No, use the password Tr0ub4dor&3 for the staging box, not the default; "
              "AWS key AKIA" + "Z7Q2M4XK9TBR3WPL")
    source = python_source()
    payloads = {
        "post-tool-use (Edit)": {"session_id": "s1", "tool_name": "Edit", "tool_input": {
            "file_path": "/tmp/a.py", "old_string": "a", "new_string": "b"}},
        "prompt 'add a test'": {"session_id": "s1", "prompt": "add a test"},
        "prompt with a password and an AWS key": {"session_id": "s1", "prompt": prompt,
                                                  "lore_signals": {"user_message": prompt}},
        "post-tool-use (Write of 20 KB of Python)": {"session_id": "s1", "tool_name": "Write",
                                                     "tool_input": {"file_path": "/x/api.py",
                                                                    "content": source}},
    }
    for name, payload in payloads.items():
        imports: dict[str, list[float]] = {}
        work: dict[str, list[float]] = {}
        for _ in range(runs):
            for tree, path in trees(before).items():
                out = subprocess.run([sys.executable, "-c", HOOK_CODE, json.dumps(payload)],
                                     env=dict(os.environ, PYTHONPATH=path), capture_output=True,
                                     text=True, check=True).stdout
                a, b = json.loads(out)
                imports.setdefault(tree, []).append(a)
                work.setdefault(tree, []).append(b)
        for tree in imports:
            print(f"- {tree}hook, {name}: import {statistics.median(imports[tree]):.1f} ms, "
                  f"redaction {statistics.median(work[tree]):.2f} ms (p90 "
                  f"{pct(work[tree], 0.9):.2f}; CPU, median of {runs} processes)")
            REPORT.add(f"{tree}hook, {name}: redaction (CPU)", work[tree], quiet=True,
                       imports_cpu=stats(imports[tree]))


def processes(runs: int, before: Path | None = None) -> None:
    """`lore hook` as Claude Code runs it, the four kinds of payload interleaved, and the
    bare interpreter in the same run. With ``before`` (the ``src`` folder of another checkout,
    e.g. from `git archive`), that tree's hook runs interleaved with this one's."""
    import os
    import tempfile

    lore = str(Path(sys.executable).parent / "lore")
    prompt = ("No, use the password Tr0ub4dor&3 for the staging box, not the default; "
              "AWS key AKIA" + "Z7Q2M4XK9TBR3WPL")
    calls = {
        "user-prompt-submit 'add a test'": ("user-prompt-submit", {"prompt": "add a test"}),
        "user-prompt-submit, a password and an AWS key": ("user-prompt-submit", {"prompt": prompt}),
        "post-tool-use Bash": ("post-tool-use", {"tool_name": "Bash", "tool_input": {
            "command": "git commit -m 'fix the parser' && pytest -x -q --no-header"}}),
        "post-tool-use Write of 20 KB of Python": ("post-tool-use", {
            "tool_name": "Write", "tool_input": {
                "file_path": "/x/api.py",
                "content": python_source()}}),
    }
    paths = trees(before)
    times: dict[str, list[float]] = {f"{t}{name}": [] for name in calls for t in paths}
    times["python -c pass"] = []
    with tempfile.TemporaryDirectory() as home:
        for _ in range(runs):
            for name, (event, payload) in calls.items():
                data = json.dumps({"session_id": "s1", "cwd": "/tmp", **payload})
                for tree, path in paths.items():
                    env = dict(os.environ, LORE_HOME=home, PYTHONPATH=path)
                    t0 = time.perf_counter()
                    subprocess.run([lore, "hook", event], input=data, text=True, env=env,
                                   check=True, capture_output=True)
                    times[f"{tree}{name}"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            times["python -c pass"].append((time.perf_counter() - t0) * 1000)
    for name, ms in times.items():
        print(f"- {name}: median {statistics.median(ms):.1f} ms, p90 {pct(ms, 0.9):.1f} ms "
              f"({runs} processes, wall)")
        REPORT.add(name, ms, quiet=True, baseline=None if name == "python -c pass" else "python -c pass")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--transcripts", type=Path, default=ROOT.parent / "shared" / "data" / "transcripts")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--before", type=Path, help="src folder of another checkout: its hooks "
                    "run interleaved with this one's")
    args = ap.parse_args()
    corpus()
    generated(args.seeds)
    if args.transcripts.is_dir():
        real(args.transcripts, args.before)
    hook(args.runs, args.before)
    processes(args.runs * 2, args.before)
    REPORT.params.update(vars(args))
    REPORT.write()


if __name__ == "__main__":
    main()
