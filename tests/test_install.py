"""`lore install` / `uninstall`: merge into Claude Code settings, idempotently and reversibly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.errors import InvalidInput
from lore.install import HOOKS, apply, plan

ROOT = Path(__file__).resolve().parents[1]
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


def test_plugin_layout_matches_the_installed_hooks():
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["name"] == "lore"
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    assert {e for e, *_ in HOOKS} == set(hooks)
    for event, matcher, arg, timeout in HOOKS:
        [group] = hooks[event]
        assert group["hooks"][0] == {"type": "command", "command": f"lore hook {arg}",
                                     "timeout": timeout}
        assert group.get("matcher") == matcher
    mcp = json.loads((ROOT / ".mcp.json").read_text())
    assert mcp["mcpServers"]["lore"]["args"] == ["mcp"]
