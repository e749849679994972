"""Reading Claude Code's auto memory from a fake ~/.claude tree: candidates, skips, read-only."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lore.apply.automemory import encode, project_path, read_auto_memory

FEEDBACK = """---
name: pnpm-not-npm
description: The user wants pnpm for every install
metadata:
  type: feedback
---
Use pnpm, never npm, in this repository.
**Why:** the lockfile is pnpm-lock.yaml and npm rewrites it.
**How to apply:** run `pnpm install` / `pnpm add`; never suggest npm commands.
"""

OLD_LAYOUT = """---
name: Test database setup
description: Tests need the docker database
type: project
---
Integration tests need `docker compose up db` first.
"""

USER = """---
name: user-role
description: Who the user is
metadata:
  type: user
modified: 2026-11-20T10:00:00Z
---
Senior Go developer, new to the React side of this code base.
"""

INDEX = """- [pnpm not npm](pnpm-not-npm.md) — always pnpm
- [Test database](test-db.md) — docker db first
- The CI runs on self-hosted runners; do not assume GitHub-hosted images.
# Notes
"""


def make_tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    claude = tmp_path / ".claude"
    project = tmp_path / "work" / "my-app.v2"
    project.mkdir(parents=True)
    folder = claude / "projects" / encode(str(project))
    memory = folder / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(INDEX)
    (memory / "pnpm-not-npm.md").write_text(FEEDBACK)
    (memory / "test-db.md").write_text(OLD_LAYOUT)
    (memory / "user-role.md").write_text(USER)
    (memory / "broken-yaml.md").write_text("---\nname: [unclosed\n---\nText\n")
    (memory / "not-utf8.md").write_bytes(b"---\nname: x\n---\ncaf\xe9\n")
    (memory / "unclosed.md").write_text("---\nname: x\nno end\n")
    (memory / "empty-body.md").write_text("---\nname: x\nmetadata:\n  type: user\n---\n\n")
    (memory / "list-front.md").write_text("---\n- a\n- b\n---\nText\n")
    (memory / "huge.md").write_text("x" * 300_000)
    (memory / "no-front.md").write_text("Plain fact without frontmatter.\n")
    return claude, folder, project


def test_reads_entries_with_kind_project_file_and_mtime(tmp_path):
    claude, folder, project = make_tree(tmp_path)
    os.utime(folder / "memory" / "pnpm-not-npm.md", (1_700_000_000, 1_700_000_000))
    scan = read_auto_memory(claude)
    by_file = {c.file.name: c for c in scan.candidates if c.source == "topic"}
    fb = by_file["pnpm-not-npm.md"]
    assert (fb.kind, fb.name, fb.project) == ("feedback", "pnpm-not-npm", str(project))
    assert fb.text == "Use pnpm, never npm, in this repository."
    assert fb.why == "the lockfile is pnpm-lock.yaml and npm rewrites it."
    assert fb.how_to_apply.startswith("run `pnpm install`")
    assert fb.mtime == 1_700_000_000
    assert by_file["test-db.md"].kind == "project"  # top-level type: (older versions)
    assert by_file["user-role.md"].kind == "user"
    assert by_file["no-front.md"].kind == "unknown"
    index = [c for c in scan.candidates if c.source == "index"]
    assert [c.text for c in index] == [
        "The CI runs on self-hosted runners; do not assume GitHub-hosted images."]


def test_broken_files_are_skipped_with_a_reason(tmp_path):
    claude, folder, _ = make_tree(tmp_path)
    reasons = {s.file.name: s.reason for s in read_auto_memory(claude).skipped}
    assert "not valid YAML" in reasons["broken-yaml.md"]
    assert reasons["not-utf8.md"] == "not UTF-8 text"
    assert "not closed" in reasons["unclosed.md"]
    assert reasons["empty-body.md"] == "no text after the frontmatter"
    assert reasons["list-front.md"] == "frontmatter is not a mapping"
    assert "larger than a memory entry" in reasons["huge.md"]


def test_reading_changes_nothing(tmp_path):
    claude, _, _ = make_tree(tmp_path)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in claude.rglob("*") if p.is_file()}
    read_auto_memory(claude)
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in claude.rglob("*") if p.is_file()}
    assert before == after


def test_project_path_from_transcript_cwd_first(tmp_path):
    folder = tmp_path / "projects" / encode("/home/me/x-y")
    folder.mkdir(parents=True)
    (folder / "abc.jsonl").write_text(
        "not json\n" + json.dumps({"type": "user", "cwd": "/home/me/x-y"}) + "\n")
    assert project_path(folder) == "/home/me/x-y"


def test_project_path_from_disk_then_naive(tmp_path):
    real = tmp_path / "a-b" / ".hidden" / "c_d"
    real.mkdir(parents=True)
    assert project_path(tmp_path / encode(str(real))) == str(real)
    assert project_path(Path("-no-such-dir-here")) == "/no/such/dir/here"


def test_missing_tree_is_empty(tmp_path):
    scan = read_auto_memory(tmp_path / "nothing")
    assert scan.candidates == () and scan.skipped == ()
