"""What the user sees around the loop: `lore apply` with nothing to write is a plain success,
other projects' rules are summed in one line, `lore status` knows whether approved rules are
written, `lore uninstall` stops the worker and says what stays."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

LORE = str(Path(sys.executable).parent / "lore")


def test_apply_with_nothing_to_write_succeeds_in_one_line_even_in_a_pipe(run, tmp_path,
                                                                         monkeypatch):
    project = tmp_path / "p"
    project.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(project)
    out = run("apply")  # no --yes, stdin is not a terminal
    assert out.exit_code == 0, out.stderr
    assert out.stderr.strip().splitlines() == [
        "nothing to write: no approved rule holds here yet (`lore review` lists what waits "
        "for your word)"]
    for other in ("/srv/a", "/srv/b", "/srv/b"):
        run("learn", "add", f"Rule of {other} {len(other)}", "x", "--kind", "project_rule",
            "--status", "active", "--project", other)
    out = run("apply")
    assert out.exit_code == 0
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("not written here: 3 approved rule(s) of 2 other project(s)")
    assert len(lines) == 2
    listed = json.loads(run("apply", "--dry-run", "--json").stdout)["not_written"]
    assert len(listed) == 3  # the JSON keeps each one
    # Something to write in a pipe still needs --yes, and nothing is written without it.
    run("learn", "add", "Use uv", "x", "--kind", "project_rule", "--status", "active")
    refused = run("apply")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert not (project / "CLAUDE.md").exists()
    assert run("apply", "--yes").exit_code == 0
    again = run("apply")
    assert again.exit_code == 0
    assert again.stderr.strip().splitlines()[-1] == (
        "nothing to change: the files already hold the approved rules")


def test_status_knows_whether_approved_rules_are_written(run, tmp_path, monkeypatch):
    project = tmp_path / "p"
    project.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(project)
    run("learn", "add", "Use uv", "x", "--kind", "project_rule", "--status", "active")
    before = json.loads(run("status", "--json").stdout)
    assert before["unwritten_files"] == [str(project / "CLAUDE.md")]
    assert "not yet written to" in run("status").stdout
    assert run("apply", "--yes").exit_code == 0
    after = json.loads(run("status", "--json").stdout)
    assert after["unwritten_files"] == []
    assert "written where the agent reads them" in run("status").stdout


def test_uninstall_stops_the_worker_and_says_what_stays(run, tmp_path, monkeypatch, lore_home):
    project = tmp_path / "p"
    project.mkdir()
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache" / "lore" / "models").mkdir(parents=True)
    monkeypatch.chdir(project)
    assert run("install").exit_code == 0
    run("learn", "add", "Use uv", "x", "--kind", "project_rule", "--status", "active")
    assert run("apply", "--yes").exit_code == 0
    # Started by another process, as a hook starts it (a child of this one would linger as
    # a zombie after it stopped).
    started = subprocess.run([LORE, "worker", "start"], capture_output=True, text=True,
                             timeout=120)
    assert started.returncode == 0, started.stderr
    deadline = time.time() + 120
    while not json.loads(run("worker", "status", "--json").stdout)["running"]:
        assert time.time() < deadline, "the worker did not start"
        time.sleep(0.2)
    try:
        out = run("uninstall")
        assert out.exit_code == 0, out.stderr
        assert "worker stopped" in out.stderr
        assert f"Lore's block in {project / 'CLAUDE.md'}" in out.stderr
        assert f"the home {lore_home}" in out.stderr
        assert f"the model cache {tmp_path / 'cache' / 'lore' / 'models'}" in out.stderr
        assert "uninstall loreloop" in out.stderr
        assert not json.loads(run("worker", "status", "--json").stdout)["running"]
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        assert "hooks" not in settings
    finally:
        run("worker", "stop")
        assert Path(project / "CLAUDE.md").exists()  # the user's file stays as it was


def test_forgetting_a_rule_takes_its_checks_and_review_still_lists(run, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    rule = run("learn", "add", "Use pnpm, not npm", "x", "--kind", "project_rule").stdout.strip()
    added = run("guard", "add", rule, "--command", r"npm(?=\s|$)", "--mode", "block")
    assert added.exit_code == 0, added.stderr
    assert json.loads(run("guard", "--json").stdout)["count"] == 1
    assert run("review", "forget", rule).exit_code == 0
    assert json.loads(run("guard", "--json").stdout)["count"] == 0
    for args in (("review",), ("review", "sync", str(tmp_path / "vault"))):
        out = run(*args)
        assert out.exit_code == 0, out.stderr
