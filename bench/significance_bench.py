"""The significance detector over a 2,000-file diff in a real repository.

    python -m bench.significance_bench [--files 2000] [--runs 30]

Builds a repository in a temporary folder (a first commit of ``--files`` source files in 40
folders, then one commit that edits every one of them, renames 20, adds 50 in new folders, a
lock file, a vendored folder and a few binaries) and times, median and 90th percentile:

- score: ``score()`` + ``summarize()`` on changes already read (the detector itself);
- read: ``changes_in_commit()`` (the git commands, the filters, the patch scan);
- read + score: both, as the end of a session does them;
- cpu: the processor time of one read + score (Lore's and git's), which the machine's load
  does not change the way it changes the wall clock;
- git --version: one round trip to git, the same-run baseline for the figures above.

Fresh commits leave loose objects, which git reads one file at a time; ``--gc`` packs them
first, as they are in a repository that has been cloned or garbage-collected.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import harness
from bench.harness import Report, pct
from lore.capture.git import changes_in_commit
from lore.extract.significance import score, summarize


def git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.org",
               GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.org",
               GIT_AUTHOR_DATE="@1767261600 +0000", GIT_COMMITTER_DATE="@1767261600 +0000",
               GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def build(repo: Path, files: int) -> None:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    body = "".join(f"    value_{i} = compute({i})\n" for i in range(40))
    for n in range(files):
        path = repo / f"src/pkg{n % 40}/module_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{n}():\n{body}    return value_0\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Start")
    for n in range(files):
        path = repo / f"src/pkg{n % 40}/module_{n}.py"
        text = path.read_text().replace("compute(1)", "compute_fast(1)")
        path.write_text(text.replace("value_0\n", "value_1\n"))
    for n in range(20):
        git(repo, "mv", f"src/pkg{n % 40}/module_{n}.py", f"src/pkg{n % 40}/moved_{n}.py")
    for n in range(50):
        path = repo / f"src/plugins/p{n % 5}/plugin_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def plugin_{n}():\n{body}")
    (repo / "package-lock.json").write_text("{}\n" * 5000)
    (repo / "vendor/lib").mkdir(parents=True)
    (repo / "vendor/lib/thing.go").write_text("package thing\n" * 2000)
    for n in range(5):
        (repo / f"assets/img_{n}.png").parent.mkdir(exist_ok=True)
        (repo / f"assets/img_{n}.png").write_bytes(bytes(range(256)) * 40)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Optimize the compute path across all packages")


def timed(fn, runs: int) -> list[float]:
    return harness.timed(fn, runs, warmup=0)


REPORT = Report("significance_bench")


def line(name: str, ms: list[float]) -> str:
    REPORT.add(name, ms, quiet=True, baseline=None if name == "git --version" else "git --version")
    return (f"{name:<14} median {statistics.median(ms):7.1f} ms   p90 {pct(ms, 0.9):7.1f} ms   "
            f"({len(ms)} runs)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--gc", action="store_true", help="pack the objects first (git gc), as in an older clone")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        t0 = time.perf_counter()
        build(repo, args.files)
        if args.gc:
            git(repo, "gc", "-q")
        print(f"built a repository of {args.files} files in {time.perf_counter() - t0:.1f} s",
              file=sys.stderr)
        changes = changes_in_commit(repo, "HEAD")
        sig = score(changes, corrections=2)
        print(f"diff: {len(changes.files)} counted files ({len(changes.renames)} renamed, "
              f"{len(changes.binary_files)} binary), {len(changes.skipped)} not counted, "
              f"{changes.lines_changed} lines, patch {len(changes.patch):,} chars kept; score {sig.score}")
        print(line("score", timed(lambda: summarize(changes, score(changes, corrections=2)), args.runs)))
        print(line("read", timed(lambda: changes_in_commit(repo, "HEAD"), args.runs)))
        before = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        print(line("read + score", timed(lambda: summarize(c := changes_in_commit(repo, "HEAD"), score(c)),
                                         args.runs)))
        after = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        cpu = [(b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime) * 1000 / args.runs
               for a, b in zip(before, after, strict=True)]
        print(f"{'cpu':<14} {cpu[0] + cpu[1]:7.1f} ms per read + score (Lore {cpu[0]:.1f}, git {cpu[1]:.1f})")
        print(line("git --version", timed(lambda: subprocess.run(["git", "--version"], capture_output=True,
                                                                 check=True), args.runs)))
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} processors")
    REPORT.params.update(vars(args))
    REPORT.write()


if __name__ == "__main__":
    main()
