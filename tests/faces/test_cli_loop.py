"""The CLI shows the loop: `lore --help` in sections, `lore status`, `lore doctor` at the top
level checking Claude Code's wiring, and `lore install` ending with what to do next."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from lore.cli import SECTIONS, cli


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home folder and a project folder to stand in, both empty."""
    home = tmp_path / "user"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return home


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_help_lists_the_loop_first_then_every_command_once():
    out = invoke("--help").output
    assert out.index("The loop:") < out.index("Lessons and memory:") < out.index(
        "Administration and measurement:")
    loop = out[out.index("The loop:"):out.index("Lessons and memory:")]
    for verb in ("install", "status", "review", "apply", "search", "doctor"):
        assert f"\n  {verb} " in loop
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and
              line.split() and line.split()[0] in cli.commands]
    assert sorted(listed) == sorted(n for n, c in cli.commands.items() if not c.hidden)
    assert {n for _, names in SECTIONS for n in names} >= set(cli.commands)


def test_search_and_doctor_are_one_command_each():
    assert "search" not in cli.commands["recall"].commands
    assert "doctor" not in cli.commands["admin"].commands


def test_status_of_a_new_home_says_what_to_do(user):
    res = invoke("status")
    assert res.exit_code == 0, res.output
    assert "Review         0 waiting" in res.output
    assert "not installed in Claude Code" in res.output and "lore install" in res.output
    assert "Worker" in res.output


def test_status_counts_what_waits_and_what_is_approved(user, run):
    added = run("learn", "add", "Use pnpm, not npm", "--kind", "preference", "--json")
    lesson = json.loads(added.output)["id"]
    assert run("review", "approve", lesson).exit_code == 0
    data = json.loads(invoke("status", "--json").output)
    assert data["lessons"] == 1 and data["approved_rules"] == 1
    assert data["hooks"]["ok"] is True


def test_install_ends_with_next_steps_and_doctor_then_sees_it(user):
    res = CliRunner().invoke(cli, ["install"], catch_exceptions=False)
    assert res.exit_code == 0
    assert "Next:" in res.output and "lore review" in res.output
    checks = {c["check"]: c for c in json.loads(invoke("doctor", "--json").output)}
    assert checks["hooks"]["detail"] == "installed: user"
    assert checks["mcp server"]["detail"] == "registered: user"
    assert checks["language model"]["ok"] is True


def test_doctor_notes_a_missing_install_without_failing(user):
    res = invoke("doctor")
    assert res.exit_code == 0, res.output
    assert "note" in res.output and "lore install" in res.output


def test_doctor_names_a_broken_settings_file(user):
    settings = user / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json", encoding="utf-8")
    checks = {c["check"]: c for c in json.loads(invoke("doctor", "--json").output)}
    assert checks["claude code"]["ok"] is False
    assert "not valid JSON" in checks["claude code"]["detail"]


def test_doctor_fails_on_a_provider_that_is_not_installed(user, lore_home):
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text("llm:\n  provider: nosuch\n", encoding="utf-8")
    res = invoke("doctor", "--json")
    checks = {c["check"]: c for c in json.loads(res.output)}
    assert res.exit_code == 1
    assert checks["language model"]["ok"] is False


# ---- words a user reads ----------------------------------------------------------------

@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300),
       st.integers(min_value=2, max_value=200))
def test_clipped_text_fits_keeps_whole_words_and_says_it_was_cut(text, limit):
    from lore.normalize import clip_words

    flat = " ".join(text.split())
    out = clip_words(text, limit)
    assert len(out) <= limit
    if out == flat:
        return
    assert out.endswith("…")
    kept = out[:-1]
    assert flat.startswith(kept)
    if " " in flat[:limit - 1]:  # cut at a space: the next character of the text is a space
        assert flat[len(kept.rstrip(",;:"))] in " ,;:" or flat[len(kept)] == " "


def test_a_snippet_of_escaped_json_shows_no_backslash_n():
    from lore.recall.snippet import snippet

    assert "\\n" not in snippet('{"content": "first line\\nsecond line\\nthird"}', "second")
    assert snippet("open C:\\new\\file", "new") == "open C:\\new\\file"


def test_worker_status_has_no_empty_header(user):
    out = invoke("worker", "status").output
    assert "┃             ┃" not in out and "running" in out


def test_a_learned_rule_says_in_words_where_it_came_from(user, run):
    res = run("learn", "correction", "No, don't use Redis, use local file sessions instead",
              "--previous", "I'll add Redis for the session store.", "--json")
    lesson = json.loads(res.output)["lesson"]
    assert lesson["source_notes"] in ("learned from an explicit correction",
                                      "learned from a correction refining the agent's answer")
