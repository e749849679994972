"""`lore apply` beside other runs and beside the user's own writes: real processes writing the
same CLAUDE.md while a writer appends a line every few milliseconds; not one line is lost."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench.quality.apply_race import Appender, apply_in, homes_with_rules
from lore.apply import files

RUNS = 10
ROUNDS = 3

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock")


def test_concurrent_runs_and_an_appending_user_lose_no_line(tmp_path, real_embedder):
    project, user = tmp_path / "shop", tmp_path / "user"
    project.mkdir()
    user.mkdir()
    claude_md = project / "CLAUDE.md"
    claude_md.write_text("# Shop\n\nThe user's own notes.\n")
    homes = homes_with_rules(tmp_path, project, real_embedder, RUNS)
    outcomes: list[tuple[int, str]] = []
    appended = 0
    for _ in range(ROUNDS):
        writer = Appender(claude_md)
        writer.start()
        runs = [apply_in(home, project, user) for home in homes]
        for p in runs:
            out, err = p.communicate(timeout=120)
            outcomes.append((p.returncode, err))
        writer.stop.set()
        writer.join(10)
        appended = writer.count
        text = claude_md.read_text()
        lines = text.splitlines()
        missing = [n for n in range(appended) if f"user line {n}" not in lines]
        assert missing == [], f"{len(missing)} of {appended} appended lines lost: {missing[:10]}"
        assert all(lines.count(f"user line {n}") == 1 for n in range(appended))
        wrote = any(code == 0 for code, _ in outcomes[-RUNS:])
        # One block if a run got through (on a loaded machine a whole round may refuse).
        assert "The user's own notes." in text
        assert text.count("<!-- lore:begin") == (1 if wrote else 0), outcomes[-RUNS:]
        # Start the next round from a file of the user's alone again.
        claude_md.write_text("# Shop\n\nThe user's own notes.\n")
    assert appended > 10  # the writer ran while the runs did
    for code, err in outcomes:
        # A run writes, or (a file that kept changing) refuses with one line; never a traceback.
        assert code in (0, 1), err
        assert "Traceback" not in err
        if code == 1:
            assert "kept changing" in err and len(err.strip().splitlines()) == 1, err
    assert any(code == 0 for code, _ in outcomes)  # runs get through beside the writer


@pytest.mark.parametrize("also_new", [False, True])
def test_a_write_into_the_replaced_file_is_put_back(tmp_path, monkeypatch, also_new):
    """The last moment: the user's line lands in the old file after Lore compared it and
    before (or as) it was replaced. Lore sees it there, puts it back and plans again; a line
    appended meanwhile to the new file is kept too."""
    path = tmp_path / "CLAUDE.md"
    path.write_text("# Mine\n")
    real_replace = os.replace
    raced = []

    def replace_after_a_user_write(src, dst):  # type: ignore[no-untyped-def]
        first = Path(dst) == path and not raced
        if first:
            raced.append(True)
            with open(path, "a") as f:  # lands in the file about to be replaced
                f.write("late line\n")
        real_replace(src, dst)
        if first and also_new:
            with open(path, "a") as f:  # and the next one in the new file
                f.write("later line\n")

    def make() -> files.Plan:
        old = path.read_text()
        block = "" if "<!-- lore -->" in old else "<!-- lore -->\n"
        return files.Plan((files.change(path, path, old, old + block),))

    monkeypatch.setattr(os, "replace", replace_after_a_user_write)
    plan = files.Plan(make().changes, replan=make)
    assert plan.write() == (path,)
    later = "later line\n" if also_new else ""
    assert raced and path.read_text() == f"# Mine\nlate line\n{later}<!-- lore -->\n"
    assert not list(tmp_path.glob("*.lore-tmp"))


def test_a_file_that_keeps_changing_is_refused_in_one_line_and_keeps_every_line(tmp_path):
    path = tmp_path / "CLAUDE.md"
    path.write_text("# Mine\n")
    made = []

    def make() -> files.Plan:
        old = path.read_text()
        made.append(old)
        with open(path, "a") as f:  # the user writes after every read
            f.write(f"edit {len(made)}\n")
        return files.Plan((files.change(path, path, old, old + "<!-- lore -->\n"),))

    first = make()
    with pytest.raises(files.ChangedSincePlanned, match="kept changing"):
        files.Plan(first.changes, replan=make).write()
    assert path.read_text() == "# Mine\n" + "".join(f"edit {n}\n" for n in range(1, len(made) + 1))
    assert len(made) == files.ATTEMPTS  # the first plan and one after each try but the last
    assert not list(tmp_path.glob("*.lore-tmp"))


def test_a_file_created_meanwhile_is_not_overwritten(tmp_path):
    path = tmp_path / "rules" / "testing.md"

    def make() -> files.Plan:
        old = path.read_text() if path.exists() else None
        return files.Plan((files.change(path, path, old, (old or "") + "lore\n"),))

    plan = files.Plan(make().changes, replan=make)
    path.parent.mkdir()
    path.write_text("the user's file\n")
    plan.write()
    assert path.read_text() == "the user's file\nlore\n"
