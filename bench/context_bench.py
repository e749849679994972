"""What leaving out the rules the instruction files already state costs the SessionStart context.

    python -m bench.context_bench [--rules 200] [--runs 200]

A database with ``--rules`` active rules in one project (a repository); `lore apply` writes them
into its CLAUDE.md and `.claude/rules`. Measured in one run, in process (the hook's interpreter
start is the same either way): the context built for that project, which reads CLAUDE.md,
CLAUDE.local.md, `.claude/rules/*.md` and ~/.claude/CLAUDE.md and leaves out what they state,
against the same build told the files are empty (the baseline: what the context cost before).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench.harness import Report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", type=int, default=200)
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["HOME"] = str(root / "user")
        (root / "user").mkdir()
        os.environ["LORE_HOME"] = str(root / "lore")
        project = root / "shop"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)

        from lore.api import Lore
        from lore.apply.session_context import build_report, carried_lines
        from lore.config import load_config
        from lore.store import session_reader

        class NoEmbedder:  # the context never embeds; skip the model to build quickly
            name = "none"
            dimensions = 4

            def embed_documents(self, texts):  # noqa: ANN001, ANN202
                import numpy as np

                return np.ones((len(texts), 4), dtype=np.float32) / 2

        settings = load_config()
        with Lore.open(settings, embedder=NoEmbedder()) as lore:  # type: ignore[arg-type]
            for i in range(args.rules):
                lore.lessons.add(f"Rule number {i}: use tool{i}, not other{i}", "", status="active",
                                kind="preference", project=str(project),
                                file_types=["py"] if i % 4 == 0 else [])
            lore.apply.plan(str(project), root / "user", include_global=True).write()
        timed: dict[str, list[float]] = {"with the files read": [], "baseline, no files read": []}
        for _ in range(args.runs):
            for name in timed:
                t0 = time.perf_counter()
                carried = carried_lines(str(project), root / "user") \
                    if name.startswith("with") else frozenset()
                with session_reader(settings.db_location) as queries:
                    built = build_report(queries, str(project), 4000, 60, 2, carried)
                timed[name].append((time.perf_counter() - t0) * 1000)
                if name.startswith("with"):
                    assert len(built.in_files) == min(60, args.rules)
        report = Report("context_bench", **vars(args))
        label = f"context for a project with {args.rules} applied rules, {{}}".format
        for name, ms in timed.items():
            report.add(label(name), ms,
                       baseline=None if name.startswith("baseline") else label("baseline, no files read"))
        report.write()


if __name__ == "__main__":
    main()
