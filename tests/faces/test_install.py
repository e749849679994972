"""`lore install` / `uninstall`: merge into Claude Code settings, idempotently and reversibly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore.errors import InvalidInput
from lore.install import HOOKS, apply, plan

ROOT = Path(__file__).resolve().parents[2]
CMD = "/opt/venv/bin/lore"

EXISTING = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
              "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]},
    "someFutureKey": {"nested": [1, 2]},
}


def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps(EXISTING))
    return home, project, settings


def test_install_merges_keeps_everything_and_is_idempotent(tmp_path):
    home, project, settings = setup(tmp_path)
    changes = plan("user", home, project, CMD)
    assert {c.path for c in changes} == {settings, home / ".claude.json"}
    assert "+            \"command\": \"/opt/venv/bin/lore hook stop\"" in changes[0].diff()
    backups = apply(changes)
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["someFutureKey"] == {"nested": [1, 2]}
    assert data["permissions"] == EXISTING["permissions"]
    assert data["hooks"]["Stop"][0] == EXISTING["hooks"]["Stop"][0]  # theirs first, kept
    assert data["hooks"]["PreToolUse"][0] == EXISTING["hooks"]["PreToolUse"][0]  # theirs kept
    for event, matcher, arg, _ in HOOKS:
        ours = [g for g in data["hooks"][event] if g["hooks"][0]["command"] == f"{CMD} hook {arg}"]
        assert len(ours) == 1 and ours[0].get("matcher") == matcher
    assert json.loads(backups[0].read_text()) == EXISTING
    mcp = json.loads((home / ".claude.json").read_text())
    assert mcp["mcpServers"]["lore"] == {"type": "stdio", "command": CMD, "args": ["mcp"], "env": {}}
    assert plan("user", home, project, CMD) == []  # already installed: nothing to do


def test_uninstall_removes_exactly_what_install_added(tmp_path):
    home, project, settings = setup(tmp_path)
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, "mcpServers": {"other": {}}}))
    apply(plan("user", home, project, CMD))
    apply(plan("user", home, project, CMD, remove=True))
    assert json.loads(settings.read_text()) == EXISTING
    assert json.loads((home / ".claude.json").read_text()) == {"numStartups": 3,
                                                               "mcpServers": {"other": {}}}
    assert plan("user", home, project, CMD, remove=True) == []


def test_dry_run_plan_changes_nothing_and_invalid_json_is_refused(tmp_path):
    home, project, settings = setup(tmp_path)
    plan("user", home, project, CMD)
    assert json.loads(settings.read_text()) == EXISTING
    settings.write_text("{ not json")
    with pytest.raises(InvalidInput, match="not valid JSON.*nothing was changed"):
        plan("user", home, project, CMD)
    assert settings.read_text() == "{ not json"


def test_project_and_local_scopes(tmp_path):
    home, project, _ = setup(tmp_path)
    apply(plan("project", home, project, CMD))
    assert (project / ".claude" / "settings.json").exists()
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["lore"]["args"] == ["mcp"]
    apply(plan("local", home, project, CMD))
    assert (project / ".claude" / "settings.local.json").exists()
    local = json.loads((home / ".claude.json").read_text())
    assert "lore" in local["projects"][str(project)]["mcpServers"]


def test_cli_install_dry_run_and_bad_settings(run, tmp_path, monkeypatch):
    home, project, settings = setup(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    out = run("install", "--dry-run")
    assert out.exit_code == 0 and "hook session-start" in out.stdout
    assert json.loads(settings.read_text()) == EXISTING
    settings.write_text("[broken")
    bad = run("install")
    assert bad.exit_code == 1 and "not valid JSON" in bad.stderr
    assert settings.read_text() == "[broken"


# ---- the judge ----------------------------------------------------------------------------

def _install(args: list[str], home: Path, monkeypatch: pytest.MonkeyPatch, *, tty: bool = False,
             answer: str | None = None):
    from click.testing import CliRunner

    from lore.cli import cli, install_cmd

    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(install_cmd, "_interactive", lambda: tty)
    return CliRunner().invoke(cli, ["install", *args], input=answer)


def test_install_writes_the_judge_and_keeps_the_rest_of_the_config(tmp_path, lore_home, monkeypatch):
    lore_home.mkdir(parents=True)
    config = lore_home / "config.yaml"
    config.write_text("# my settings\nsearch:\n  default_limit: 7\nllm:\n  provider: anthropic\n"
                      "  model: old\n\nlearning:\n  active_threshold: 0.9  # keep\n")
    out = _install(["--judge", "openai", "--judge-model", "qwen2.5:7b"], tmp_path / "user", monkeypatch)
    assert out.exit_code == 0, out.output
    text = config.read_text()
    assert text.startswith("# my settings\nsearch:\n  default_limit: 7\nllm:  # the judge")
    assert 'provider: openai\n  model: "qwen2.5:7b"\n  base_url: "http://localhost:11434/v1"' in text
    assert "model: old" not in text and "learning:\n  active_threshold: 0.9  # keep\n" in text
    assert list(lore_home.glob("config.yaml.lore-backup-*"))
    from lore.config import load_config

    llm = load_config(config).config.llm
    assert (llm.provider, llm.model, llm.daily_token_budget) == ("openai", "qwen2.5:7b", 200_000)
    again = _install(["--judge", "openai", "--judge-model", "qwen2.5:7b"], tmp_path / "user", monkeypatch)
    assert again.exit_code == 0 and "already installed" in again.output


def test_install_asks_for_the_judge_on_a_terminal_only(tmp_path, lore_home, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)  # no Claude Code here
    out = _install([], tmp_path / "user", monkeypatch, tty=True, answer="claude-cli\n")
    assert out.exit_code == 0, out.output
    assert "tokens" in out.output and "claude-cli" in out.output and "[none]" in out.output
    assert "provider: claude-cli" in (lore_home / "config.yaml").read_text()
    (lore_home / "config.yaml").unlink()
    quiet = _install([], tmp_path / "other", monkeypatch)
    assert quiet.exit_code == 0 and "the judge is not set up" in quiet.output
    assert not (lore_home / "config.yaml").exists()
    none = _install(["--judge", "none"], tmp_path / "third", monkeypatch)
    assert none.exit_code == 0 and not (lore_home / "config.yaml").exists()


def test_install_refuses_a_judge_that_would_break_the_config(tmp_path, lore_home, monkeypatch):
    lore_home.mkdir(parents=True)
    config = lore_home / "config.yaml"
    config.write_text("learning:\n  bogus_key: 1\n")
    out = _install(["--judge", "anthropic"], tmp_path / "user", monkeypatch)
    assert out.exit_code != 0 and "bogus_key" in out.output
    assert config.read_text() == "learning:\n  bogus_key: 1\n"
    assert not (tmp_path / "user" / ".claude").exists()
    from lore.install import judge_change

    config.write_text("# fine\n")
    with pytest.raises(InvalidInput, match="nothing was changed"):
        judge_change(config, "llm:\n  provider: openai\n  temperature_typo: 1\n")
    assert config.read_text() == "# fine\n" and sorted(p.name for p in lore_home.iterdir()) == ["config.yaml"]


_KEYS = st.sampled_from(["search", "learning", "context", "apply", "review", "embedding"])
_LINES = st.lists(st.from_regex(r"  [a-z_]{1,10}: [a-z0-9]{1,8}( +# [a-z ]{0,12})?", fullmatch=True),
                  max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_KEYS, _LINES), max_size=4, unique_by=lambda t: t[0]),
       st.one_of(st.none(), _LINES), st.integers(0, 4))
def test_the_llm_section_is_replaced_and_nothing_else_moves(sections, old_llm, where) -> None:
    from lore.install import judge_block, with_llm_block

    parts = ["# settings\n"] + [f"{k}:\n" + "".join(ln + "\n" for ln in lines) for k, lines in sections]
    if old_llm is not None:
        parts.insert(min(where, len(parts)), "llm:\n" + "".join(ln + "\n" for ln in old_llm))
    text = "".join(parts)
    block = judge_block("claude-cli")
    out = with_llm_block(text, block)
    assert out.count("llm:") == 1 and block in out
    assert out.replace(block, "").replace("\n", "") == "".join(
        p for p in parts if not p.startswith("llm:")).replace("\n", "")
    assert with_llm_block(out, block) == out  # idempotent
