"""Hook and queue benchmarks (whole processes, interpreter start included).

    python -m bench.hook_bench [--runs 50] [--events 5000]
    python -m bench.hook_bench --checks-only --baseline-src OLD/src   # before/after, one run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Report, pct, stats
from lore.capture.queue import Queue

LORE = str(Path(sys.executable).parent / "lore")
TRANSCRIPT = (Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "transcripts"
              / "d-kimuson-claude-code-viewer")


BASE = "`python -c pass` (interleaved baseline)"


def hook_times(event: str, payload: dict, runs: int, home: str) -> list[float]:
    """Wall-clock milliseconds of whole `lore hook` processes (a worker's lock held)."""
    return interleaved([("", event, None, payload)], runs, home)[f"`lore hook {event}`, "][0]


def interleaved(cases: list, runs: int, home: str, baseline_src: str | None = None
                ) -> dict[str, tuple[list[float], list[float]]]:
    """Wall-clock and CPU (user + system of the child) milliseconds of each case, one run of
    each in turn after one `python -c pass`; with ``baseline_src``, each case also run by the
    Lore in that source folder (an earlier version), in the same turn. A case is (label, hook
    event, checks file or None, payload). This process holds the home's worker lock, so each
    hook finds a worker running (its check is measured) and starts none."""
    import fcntl
    import resource

    env = dict(os.environ, LORE_HOME=home)
    env.pop("LORE_WORKER_AUTOSTART", None)
    envs = [("", env)]
    if baseline_src:
        envs.append((" [baseline source]", dict(env, PYTHONPATH=baseline_src)))
    out: dict[str, tuple[list[float], list[float]]] = {BASE: ([], [])}
    src = os.path.join(home, "guards.json")

    def timed(key: str, argv: list[str], data: str | None, env: dict = env) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, input=data, text=True, env=env, check=True, capture_output=True)
        wall = (time.perf_counter() - t0) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
        out.setdefault(key, ([], []))
        out[key][0].append(wall)
        out[key][1].append(cpu)

    Path(home, "queue").mkdir(parents=True, exist_ok=True)
    lock = os.open(Path(home, "queue"), os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        for _ in range(runs):
            timed(BASE, [sys.executable, "-c", "pass"], None)
            for label, event, path, payload in cases:
                if path is None and os.path.exists(src):
                    os.replace(src, src + ".off")
                elif path is not None and not os.path.exists(src):
                    os.replace(src + ".off", src)
                for tag, case_env in envs:
                    timed(f"`lore hook {event}`, {label}{tag}", [LORE, "hook", event],
                          json.dumps(payload), case_env)
    finally:
        os.close(lock)
    return out


def guard_cases(home: str, base: dict):
    """PreToolUse without checks, then with 50 approved checks (the compiled file): a call
    none matches, and one a blocking check denies (the match is queued for the worker)."""
    from lore.apply.check_hook import write_compiled
    from lore.apply.checks import needle

    call = {**base, "tool_name": "Bash", "tool_input": {"command": "pytest -q tests/"}}
    path = os.path.join(home, "guards.json")
    entries = []
    for i in range(50):  # four shapes in turn, each check on its own program, folder, library
        fields = [{"command": rf"prog{i}(?=\s|$)"}, {"path": f"gen{i}/"},
                  {"path": "*.py", "content": rf"^\s*import lib{i}\b"},
                  {"tool": f"mcp__srv{i}__*"}][i % 4]
        needles = {k: n for k, v in fields.items() if (n := needle(k, v))}
        entries.append({"id": f"c{i}", "lesson_id": f"l{i}", "mode": "block", "rule": f"Rule {i}",
                        "why": "Because the user said so. " * 4, "said": "no, not that",
                        **fields, "needles": needles})
    write_compiled(path, entries, "bench")
    pre = "pre-tool-use"
    yield "no checks (no file)", pre, None, call
    yield "50 checks, none matches", pre, path, call
    yield "50 checks, one blocks (queued)", pre, path, {**call, "tool_input": {
        "command": "prog0 install x"}}
    yield "50 checks, one blocks a wrapped command (queued)", pre, path, {**call, "tool_input": {
        "command": "cd web && sudo -u node env CI=1 bash -c 'prog0 install x'"}}
    yield "50 checks, a literal present, none matches", pre, path, {**call, "tool_input": {
        "command": "git log --grep prog0 | head -5"}}
    yield "50 checks, a Python import blocks (queued)", pre, path, {
        **base, "tool_name": "Write", "tool_input": {"file_path": "/tmp/a.py",
                                                     "content": "import os, lib2\n" * 20}}


def session_start_times(runs: int) -> list[float]:
    """SessionStart with 10,000 lessons and 1,000 recorded corrections in the project."""
    import random

    from lore.api import Lore
    from lore.config import load_config
    from lore.ids import new_id

    class NoEmbedder:  # SessionStart never embeds; skip the model to build quickly
        name = "none"
        dimensions = 4

        def embed_documents(self, texts):
            import numpy as np

            return np.ones((len(texts), 4), dtype=np.float32) / 2

    rng = random.Random(3)
    kinds = ["preference", "project_rule", "bug_fix", "learning", "pattern", "decision"]
    statuses = ["active", "active", "proposed"]
    with tempfile.TemporaryDirectory() as home:
        os.environ["LORE_HOME"] = home
        lines = [json.dumps({"id": new_id(), "title": f"Lesson {i} about topic {i % 97}",
                             "content": "Some content " * 20, "kind": rng.choice(kinds),
                             "project": "/work/shop" if i % 3 else None,
                             "status": rng.choice(statuses),
                             "preference": {"preferred": f"option {i}", "rejected": "other"}})
                 for i in range(10_000)]
        with Lore.open(load_config(), embedder=NoEmbedder()) as lore:
            lore.lessons.import_lines(lines)
            for i in range(1000):
                lore.learning.capture(f"No, use approach {i} instead", "I'll do X",
                                     project="/work/shop", session_id=f"s{i % 50}",
                                     at=f"2026-10-{1 + i % 28:02d}T10:00:00", origin="hook",
                                     event_id=f"e{i}")
        return hook_times("session-start", {"session_id": "s", "cwd": "/work/shop",
                                            "source": "startup"}, runs, home)


def queue_rate(events: int, writers: int, root: Path) -> float:
    per = events // writers
    code = ("import sys\nfrom pathlib import Path\nfrom lore.capture.queue import Queue\n"
            "import time\nq = Queue(Path(sys.argv[1]))\nt = float(sys.argv[3])\n"
            "while time.time() < t: pass\n"
            f"for i in range({per}):\n    q.append('Stop', {{'w': sys.argv[2], 'i': i}})\n")
    start_at = time.time() + 1.0  # all writers begin together, after their imports
    procs = [subprocess.Popen([sys.executable, "-c", code, str(root), str(w), str(start_at)])
             for w in range(writers)]
    for p in procs:
        p.wait()
    took = time.time() - start_at
    seen = [(e.payload["w"], e.payload["i"]) for e in Queue(root).take()]
    assert len(seen) == per * writers == len(set(seen)), "lost or duplicated events"
    return per * writers / took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--checks-only", action="store_true",
                    help="Only the PreToolUse hook and its baseline.")
    ap.add_argument("--baseline-src", help="Also time the PreToolUse cases with the Lore in this "
                                           "source folder (an earlier version), interleaved.")
    args = ap.parse_args()
    report = Report("hook_bench", **vars(args))
    # As installed: pip writes the bytecode of every module (PYTHONDONTWRITEBYTECODE, if set,
    # would otherwise make every hook compile its modules from source).
    import compileall

    import lore

    compileall.compile_dir(Path(lore.__file__).parent, quiet=1)
    if args.baseline_src:
        compileall.compile_dir(Path(args.baseline_src) / "lore", quiet=1)
    transcript = next(TRANSCRIPT.rglob("*.jsonl"))
    with tempfile.TemporaryDirectory() as home:
        base = {"session_id": "s1", "transcript_path": str(transcript), "cwd": "/tmp"}
        # Every hook runs interleaved with `python -c pass` (one of each in turn), so the
        # machine's load weighs on both alike; the ratio of medians is the hook's cost.
        events = [] if args.checks_only else [
            ("session-start, no database", "session-start", None, {**base, "source": "startup"}),
            ("prompt 'add a test'", "user-prompt-submit", None, {**base, "prompt": "add a test"}),
            ("a correction", "user-prompt-submit", None, {
                **base, "prompt": "No, don't use Redis, use local file sessions instead"}),
            ("an Edit", "post-tool-use", None, {**base, "tool_name": "Edit", "tool_input": {
                "file_path": "/tmp/a.py", "old_string": "a", "new_string": "b"}}),
            ("transcript tail", "stop", None, {**base, "stop_hook_active": False}),
            ("exit", "session-end", None, {**base, "reason": "exit"})]
        cases = events + list(guard_cases(home, base))
        times = interleaved(cases, args.runs, home, args.baseline_src)
        bare_cpu = statistics.median(times[BASE][1])
        bare_wall = statistics.median(times[BASE][0])
        for label, (ms, cpu) in times.items():
            print(f"- {label}: median {statistics.median(ms):.1f} ms, p90 {pct(ms, 0.9):.1f} ms "
                  f"({statistics.median(ms) / bare_wall:.2f}x); CPU median "
                  f"{statistics.median(cpu):.1f} ms, p90 {pct(cpu, 0.9):.1f} ms "
                  f"({statistics.median(cpu) / bare_cpu:.2f}x the baseline's) "
                  f"({args.runs} runs, interleaved)")
            report.add(label, ms, quiet=True, cpu=stats(cpu),
                       baseline=None if label == BASE else BASE)
        if args.checks_only:
            report.write()
            return
    ms = session_start_times(args.runs)
    print(f"- `lore hook session-start` with 10,000 lessons (active and proposed rules) and 1,000 "
          f"captured corrections: median "
          f"{statistics.median(ms):.1f} ms, p90 {pct(ms, 0.9):.1f} ms ({args.runs} runs)")
    report.add("lore hook session-start, 10,000 lessons", ms, quiet=True)
    with tempfile.TemporaryDirectory() as root:
        rate = queue_rate(args.events, 4, Path(root))
        print(f"- queue: {args.events:,} events appended by 4 concurrent processes: {rate:,.0f} "
              "events/s; none lost or duplicated")
        report.value("queue: events appended by 4 concurrent processes", round(rate), unit="events/s")
    report.write()


if __name__ == "__main__":
    main()
