"""The repository is a Claude Code marketplace holding one plugin, lore: its manifest, hooks,
MCP server and review commands agree with the CLI; the commands run `lore` with the user's
words and the model cannot call them; the plugin's wrapper says how to install Lore when it is
missing; `lore install` and the plugin never both install hooks; every install hint fits the
way Lore was installed."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lore import __version__
from lore.extras import add_extra, method, package_command
from lore.install import HOOKS, plugin_scopes

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"
WRAPPER = PLUGIN / "bin" / "lore-run"
LORE = str(Path(sys.executable).parent / "lore")
COMMANDS = {"review", "approve", "reject", "edit", "defer", "status", "why", "forget"}


def frontmatter(path: Path) -> tuple[dict[str, str], str]:
    text = path.read_text()
    assert text.startswith("---\n"), path
    head, body = text[4:].split("\n---\n", 1)
    fields = dict(line.split(": ", 1) for line in head.splitlines())
    return fields, body


def test_the_marketplace_lists_the_plugin_at_its_version():
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    [entry] = market["plugins"]
    assert market["name"] == "lore" and market["owner"]["name"]
    assert (ROOT / entry["source"]).resolve() == PLUGIN
    plugin = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["name"] == entry["name"] == "lore"
    assert plugin["version"] == entry["version"] == __version__


def test_the_hooks_are_the_ones_lore_install_writes_through_the_wrapper():
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {e for e, *_ in HOOKS}
    for event, matcher, arg, timeout in HOOKS:
        [group] = hooks[event]
        assert group.get("matcher") == matcher
        assert group["hooks"] == [{"type": "command", "timeout": timeout,
                                   "command": f'"${{CLAUDE_PLUGIN_ROOT}}/bin/lore-run" hook {arg}'}]
    mcp = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["lore"]
    assert mcp["command"] == "${CLAUDE_PLUGIN_ROOT}/bin/lore-run" and mcp["args"] == ["mcp"]


def test_every_command_runs_an_existing_lore_command_only_when_the_user_types_it():
    from lore.cli import cli

    found = {p.stem for p in (PLUGIN / "commands").glob("*.md")}
    assert found == COMMANDS
    for name in sorted(found):
        fields, body = frontmatter(PLUGIN / "commands" / f"{name}.md")
        assert fields["disable-model-invocation"] == "true", name
        # Claude Code refuses a command's shell line unless the command allows it (tried: without
        # this line `claude -p "/lore:status"` ends with "Shell command permission check failed").
        assert fields["allowed-tools"] == "Bash(${CLAUDE_PLUGIN_ROOT}/bin/lore-run:*)", name
        assert fields["description"]
        [line] = re.findall(r"^!`(.*)`$", body, re.M)
        words = shlex.split(line.replace("$ARGUMENTS", ""))
        assert words[0] == "${CLAUDE_PLUGIN_ROOT}/bin/lore-run", name
        # The words name a command of the CLI (a verb of a group, or a top-level command).
        command = cli
        ctx = None
        for word in words[1:]:
            if word.startswith("-"):
                break
            ctx = ctx or command.make_context("lore", [], resilient_parsing=True)
            command = command.get_command(ctx, word)  # type: ignore[union-attr]
            assert command is not None, f"{name}: no command `lore {' '.join(words[1:])}`"
        if name not in ("review", "status"):
            assert line.endswith("$ARGUMENTS`") or "$ARGUMENTS" in line, name


def test_the_mcp_server_the_plugin_starts_gives_the_model_no_decision():
    """The plugin starts `lore mcp`, the session profile: reading and recording, no review
    decision (those are the admin profile's, opt-in)."""
    import anyio

    from conftest import make_settings
    from lore.mcp.server import DEFAULT_PROFILE, build_server

    assert json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["lore"]["args"] == ["mcp"]
    server, tools = build_server(make_settings(Path("/nonexistent-lore-home")), DEFAULT_PROFILE)
    tools._warm_started = True
    names = {t.name for t in anyio.run(server.list_tools)}
    assert names and not {n for n in names if "approve" in n or "reject" in n or "edit" in n}


def wrapper(args: list[str], home: Path, path: str, stdin: str = "{}"):
    return subprocess.run(["sh", str(WRAPPER), *args], input=stdin, capture_output=True,
                          text=True, timeout=60,
                          env={"HOME": str(home), "PATH": path, "LORE_HOME": str(home / ".lore")})


def test_without_lore_the_first_session_start_says_how_to_install_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    bare = "/usr/bin:/bin"
    if any(Path(p, "lore").exists() for p in bare.split(":")):
        pytest.skip("a lore command is installed system-wide")
    first = wrapper(["hook", "session-start"], home, bare)
    assert first.returncode == 0
    said = json.loads(first.stdout)
    line = said["hookSpecificOutput"]["additionalContext"]
    assert "pipx install loreloop" in line and "uv tool install loreloop" in line
    assert "\n" not in line and said["systemMessage"] == line
    again = wrapper(["hook", "session-start"], home, bare)
    assert again.returncode == 0 and again.stdout == ""  # once, not every session
    for event in ("stop", "pre-tool-use", "user-prompt-submit"):
        quiet = wrapper(["hook", event], home, bare)
        assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    mcp = wrapper(["mcp"], home, bare)
    assert mcp.returncode == 127 and "pipx install loreloop" in mcp.stderr


def test_with_lore_on_the_path_the_wrapper_runs_it_with_the_arguments(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env_path = f"{Path(LORE).parent}:/usr/bin:/bin"
    out = subprocess.run(["sh", str(WRAPPER), "--version"], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "HOME": str(home), "PATH": env_path})
    assert out.returncode == 0 and __version__ in out.stdout
    # pipx's and uv's folder is found when a login shell did not put it on the PATH.
    local = home / ".local" / "bin"
    local.mkdir(parents=True)
    (local / "lore").write_text('#!/bin/sh\necho "ran with: $*"; echo "plugin=$LORE_PLUGIN"\n')
    (local / "lore").chmod(0o755)
    out = wrapper(["review", "approve", "01abcdef"], home, "/usr/bin:/bin")
    assert out.stdout == "ran with: review approve 01abcdef\nplugin=1\n"


def test_doctor_finds_hooks_installed_twice_and_install_adds_none_beside_the_plugin(
        tmp_path, monkeypatch):
    from lore.cli import cli

    home, project = tmp_path / "home", tmp_path / "p"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    run = CliRunner().invoke
    assert run(cli, ["install"]).exit_code == 0
    settings = home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["enabledPlugins"] = {"lore@lore": True, "other@x": True}
    settings.write_text(json.dumps(data))
    assert plugin_scopes(home, project) == ["user"]
    doctor = run(cli, ["doctor", "--json"])
    [double] = [c for c in json.loads(doctor.stdout) if c["check"] == "claude code"]
    assert not double["ok"] and "twice" in double["detail"]
    assert "lore uninstall --scope user" in double["fix"]
    assert "claude plugin uninstall lore@lore" in double["fix"]
    # Removing the settings' copy leaves the plugin: doctor is content, install adds nothing.
    assert run(cli, ["uninstall"]).exit_code == 0
    assert "hooks" not in json.loads(settings.read_text())
    again = run(cli, ["install"])
    assert again.exit_code == 0 and "plugin lore is enabled" in again.stderr
    assert "hooks" not in json.loads(settings.read_text())
    checks = json.loads(run(cli, ["doctor", "--json"]).stdout)
    [hooks] = [c for c in checks if c["check"] == "hooks"]
    assert hooks["ok"] and "plugin" in hooks["detail"]


@pytest.mark.parametrize(("prefix", "cfg", "expected"), [
    ("/home/u/.local/share/pipx/venvs/loreloop", None, "pipx"),
    ("/home/u/.local/pipx/venvs/loreloop", None, "pipx"),
    ("/home/u/.local/share/uv/tools/loreloop", None, "uv-tool"),
    ("VENV", "home = /usr/bin\nuv = 0.9.1\n", "uv-venv"),
    ("VENV", "home = /usr/bin\ninclude-system-site-packages = false\n", "venv"),
])
def test_the_way_lore_was_installed_is_read_from_the_prefix(tmp_path, prefix, cfg, expected):
    if prefix == "VENV":
        prefix = str(tmp_path / "venv")
        Path(prefix).mkdir()
        (Path(prefix) / "pyvenv.cfg").write_text(cfg)
    assert method(prefix, "/usr") == expected
    assert method("/usr", "/usr") == "pip"


def test_each_way_gets_its_own_command():
    assert add_extra("server", "pipx").startswith("pipx inject loreloop ")
    assert "fastapi" in add_extra("server", "pipx") or "loreloop[server]" in add_extra("server", "pipx")
    assert add_extra("server", "uv-tool").startswith("uv tool install loreloop --with ")
    assert add_extra("server", "uv-venv") == "uv pip install 'loreloop[server]'"
    assert add_extra("server", "venv").endswith("-m pip install 'loreloop[server]'")
    assert add_extra("server", "pip") == "pip install 'loreloop[server]'"
    assert package_command("uninstall", "pipx") == "pipx uninstall loreloop"
    assert package_command("upgrade", "uv-tool") == "uv tool upgrade loreloop"
    assert package_command("reinstall", "uv-tool") == "uv tool install --reinstall loreloop"
    assert package_command("reinstall", "pipx") == "pipx reinstall loreloop"
    assert package_command("reinstall", "pip") == "pip install --force-reinstall loreloop"
    assert package_command("uninstall", "uv-venv") == "uv pip uninstall loreloop"


def test_install_offers_the_plugin_only_where_claude_code_has_plugins(tmp_path, monkeypatch):
    from conftest import npm_tool
    from lore.cli import cli
    from lore.install import claude_supports_plugins

    claude = npm_tool("claude")
    assert claude_supports_plugins(claude)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{Path(claude).parent}{os.pathsep}{os.environ['PATH']}")
    offered = CliRunner().invoke(cli, ["install"])
    assert offered.exit_code == 0 and "supports plugins" in offered.stderr
    assert "claude plugin install lore@lore" in offered.stderr
    old = tmp_path / "claude"
    old.write_text("#!/bin/sh\necho \"error: unknown command 'plugin'\" >&2\nexit 1\n")
    old.chmod(0o755)
    assert not claude_supports_plugins(str(old))
    assert not claude_supports_plugins(str(tmp_path / "missing"))


def test_claude_code_validates_the_marketplace_and_the_plugin_strictly(tmp_path):
    from conftest import npm_tool

    claude = npm_tool("claude")
    for path in (ROOT, PLUGIN):
        out = subprocess.run([claude, "plugin", "validate", "--strict", str(path)],
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "HOME": str(tmp_path),
                                  "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                                  "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Validation passed" in out.stdout
