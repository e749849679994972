"""Rules Lore writes reach the model through the real Claude Code CLI (scripted API on 127.0.0.1).

Project and global rules arrive at start-up without Lore's marker comments; a rule tied to
Python files stays out until a Python file is read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import npm_tool as tool
from e2e.test_claude_code_loop import Scripted, api  # noqa: F401  (api is a fixture)
from lore.apply.rules import AppliedRule
from lore.apply.targets import Targets, plan


def test_written_rules_reach_the_model(tmp_path, api):  # noqa: F811
    claude = tool("claude")
    home, project = tmp_path / "home", tmp_path / "shop"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "CLAUDE.md").write_text("# Shop\r\n\r\nOur own line stays.\r\n")
    rules = [AppliedRule("01J1", "Use pnpm, not npm.", topic="tooling"),
             AppliedRule("01J2", "Answer in British English.", scope="global"),
             AppliedRule("01J3", "Use pytest fixtures, not setUp.", topic="python", globs=("py",))]
    plan(rules, Targets(home=home, project=project)).write()
    assert (project / ".claude" / "rules" / "python.md").exists()

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), ANTHROPIC_BASE_URL=api, ANTHROPIC_API_KEY="sk-ant-test",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
               DISABLE_AUTOUPDATER="1", CI="true")
    Scripted.requests = []
    out = subprocess.run([claude, "-p", "hello", "--output-format", "json"], env=env, cwd=project,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    first = next(json.loads(r["body"]) for r in Scripted.requests
                 if "/messages" in r["path"] and "count_tokens" not in r["path"]
                 and "Our own line stays" in r["body"])
    sent = json.dumps(first["messages"])
    assert "Our own line stays." in sent
    assert "- Use pnpm, not npm." in sent and "- Answer in British English." in sent
    assert "lore:begin" not in sent and "lore:end" not in sent  # block comments are stripped
    assert "pytest fixtures" not in sent  # path-scoped: loads when a .py file is read


def test_lore_apply_from_the_database_reaches_the_model(tmp_path, api, real_embedder):  # noqa: F811
    """The whole way: approved rules in Lore's database, `lore apply --yes` as a user runs it,
    then Claude Code starting in the project."""
    from conftest import make_settings
    from lore.api import Lore

    claude = tool("claude")
    home, project, lore_home = tmp_path / "home", tmp_path / "shop", tmp_path / "lore"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    with Lore.open(make_settings(lore_home), embedder=real_embedder) as lore:
        lore.lessons.add("Use pnpm, not npm", kind="preference", status="active",
                        project=str(project.resolve()), tags=["tooling"])
        lore.lessons.add("Answer in British English", kind="project_rule", status="active")
        lore.lessons.add("Prefer tabs", kind="preference", status="proposed",
                        project=str(project.resolve()))

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), LORE_HOME=str(lore_home), HF_HUB_OFFLINE="1")
    done = subprocess.run([str(Path(sys.executable).parent / "lore"), "apply", "--yes"], env=env,
                          cwd=project, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr

    env.update(ANTHROPIC_BASE_URL=api, ANTHROPIC_API_KEY="sk-ant-test",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
               DISABLE_AUTOUPDATER="1", CI="true")
    Scripted.requests = []
    out = subprocess.run([claude, "-p", "hello", "--output-format", "json"], env=env, cwd=project,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    first = next(json.loads(r["body"]) for r in Scripted.requests
                 if "/messages" in r["path"] and "count_tokens" not in r["path"]
                 and "Use pnpm" in r["body"])
    sent = json.dumps(first["messages"])
    assert "- Use pnpm, not npm." in sent and "- Answer in British English." in sent
    assert "Prefer tabs" not in sent  # not approved: not applied
    assert "lore:begin" not in sent
