"""`lore install` / `lore uninstall`: Lore's hooks and MCP server in Claude Code's settings.

The merge keeps every existing hook and key and is idempotent: Lore's entries are
recognised by their command (`<lore> hook <event>`), so a second install changes nothing
and uninstall removes exactly those entries. The file is backed up before it is written;
``dry_run`` returns the diff and writes nothing. A settings file that is not valid JSON
is refused untouched.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lore.errors import InvalidInput
from lore.extras import package_command

# (event, matcher, hook argument, timeout in seconds)
HOOKS = [
    ("SessionStart", None, "session-start", 10),
    ("UserPromptSubmit", None, "user-prompt-submit", 5),
    ("PreToolUse", None, "pre-tool-use", 5),
    ("PostToolUse", "Edit|Write|MultiEdit", "post-tool-use", 5),
    ("Stop", None, "stop", 5),
    ("SubagentStop", None, "subagent-stop", 5),
    ("PreCompact", None, "pre-compact", 10),
    ("SessionEnd", None, "session-end", 5),
]
SCOPES = ("user", "project", "local")


@dataclass(frozen=True, slots=True)
class Change:
    path: Path
    before: str | None
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile=f"{self.path} (now)", tofile=f"{self.path} (after)"))


def lore_command() -> str:
    """The absolute path of this `lore`, so hooks work from a virtual environment too."""
    exe = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if exe is not None and exe.name.startswith("lore") and exe.is_file():
        return str(exe)
    candidate = Path(sys.executable).parent / "lore"
    if candidate.is_file():
        return str(candidate)
    return shutil.which("lore") or "lore"


def settings_path(scope: str, home: Path, project: Path) -> Path:
    if scope not in SCOPES:
        raise InvalidInput(f"invalid scope '{scope}'; valid: {', '.join(SCOPES)}")
    return {"user": home / ".claude" / "settings.json",
            "project": project / ".claude" / "settings.json",
            "local": project / ".claude" / "settings.local.json"}[scope]


def mcp_path(scope: str, home: Path, project: Path) -> tuple[Path, list[str]]:
    """Where Claude Code reads MCP servers for a scope, and the key path inside that file."""
    if scope == "project":
        return project / ".mcp.json", ["mcpServers"]
    if scope == "local":
        return home / ".claude.json", ["projects", str(project), "mcpServers"]
    return home / ".claude.json", ["mcpServers"]


def plan(scope: str, home: Path, project: Path, command: str, *, remove: bool = False) -> list[Change]:
    changes = [_settings_change(settings_path(scope, home, project), command, remove)]
    path, keys = mcp_path(scope, home, project)
    changes.append(_mcp_change(path, keys, command, remove))
    return [c for c in changes if c.changed]


def installed_scopes(home: Path, project: Path) -> tuple[list[str], list[str]]:
    """The scopes whose Claude Code settings hold Lore's hooks, and those registering its MCP
    server (read only; a file that is not JSON raises InvalidInput)."""
    hooks, mcp = [], []
    for scope in SCOPES:
        _, data = _read(settings_path(scope, home, project))
        if _holds_our_hooks(data):
            hooks.append(scope)
        path, keys = mcp_path(scope, home, project)
        node: Any = _read(path)[1]
        for key in keys:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict) and isinstance(node.get("lore"), dict):
            mcp.append(scope)
    return hooks, mcp


def plugin_scopes(home: Path, project: Path) -> list[str]:
    """The settings scopes that enable Lore's Claude Code plugin (``lore@<marketplace>`` in
    ``enabledPlugins``); read only, a file that is not JSON raises InvalidInput."""
    return [s for s in SCOPES if _enables_plugin(_read(settings_path(s, home, project))[1])]


def _holds_our_hooks(settings: dict[str, Any]) -> bool:
    """Whether a settings file's content holds one of Lore's hooks."""
    groups = settings.get("hooks", {})
    handlers = [h for entries in (groups.values() if isinstance(groups, dict) else [])
                if isinstance(entries, list) for e in entries if isinstance(e, dict)
                for h in e.get("hooks", []) if isinstance(e.get("hooks"), list)]
    return any(_is_ours(h) for h in handlers)


def _enables_plugin(settings: dict[str, Any]) -> bool:
    """Whether a settings file's content enables the plugin lore (``lore@<marketplace>``)."""
    enabled = settings.get("enabledPlugins")
    return isinstance(enabled, dict) and any(
        str(k).split("@")[0] == PLUGIN and v is True for k, v in enabled.items())


PLUGIN = "lore"
PLUGIN_DOCS = "docs/plugin.md"
INSTALLED_PLUGINS = Path("plugins") / "installed_plugins.json"  # in Claude Code's folder


def claude_dir(home: Path) -> Path:
    """Claude Code's own folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(configured).expanduser() if configured else home / ".claude"


def lore_files(home: Path) -> list[Path]:
    """The files :func:`lore_in_claude_code` reads: Claude Code's list of installed plugins
    and the user's settings (``~/.claude/settings.json``, and Claude Code's folder's own)."""
    folder = claude_dir(home)
    paths = [folder / INSTALLED_PLUGINS, home / ".claude" / "settings.json"]
    if folder / "settings.json" not in paths:
        paths.append(folder / "settings.json")
    return paths


def lore_in_claude_code(home: Path) -> bool | None:
    """Whether Claude Code still has Lore for this user, as the home shows it. True: the
    user's settings hold Lore's hooks (`lore install`) or enable the plugin lore, or Claude
    Code's list of installed plugins names lore at any scope (it records project and local
    installs too, with their project). False only when that list and the settings were read
    and name Lore nowhere (a settings file that does not exist holds nothing). None: a file
    could not be read or is not what Claude Code writes (no plugin list at all, not JSON,
    another shape): unknown. A project's own `lore install` cannot be seen from here."""
    plugins_file, *settings_files = lore_files(home)
    try:
        listed = json.loads(plugins_file.read_text(encoding="utf-8"))
        settings = [_read(path)[1] for path in settings_files]
    except (OSError, UnicodeDecodeError, ValueError, InvalidInput):
        return None
    plugins = listed.get("plugins") if isinstance(listed, dict) else None
    if not isinstance(plugins, dict):
        return None
    if any(str(key).split("@")[0] == PLUGIN for key in plugins):
        return True
    if any(_enables_plugin(data) or _holds_our_hooks(data) for data in settings):
        return True
    if any(not isinstance(data.get("hooks", {}), dict) for data in settings):
        return None  # hooks of a shape Claude Code does not write: cannot tell
    return False


def claude_supports_plugins(claude: str | None = None) -> bool:
    """Whether the installed Claude Code has plugins (`claude plugin --help` answers)."""
    import subprocess

    exe = claude or shutil.which("claude")
    if not exe:
        return False
    try:
        done = subprocess.run([exe, "plugin", "--help"], capture_output=True, timeout=20,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and b"marketplace" in done.stdout


def leftovers(home: Path, lore_home: Path, project: Path, model_cache: Path | None
              ) -> list[tuple[str, str]]:
    """What `lore uninstall` leaves in place, each with how to remove it: Lore's blocks in
    the rules files here and in ~/.claude, the home (database, config, logs), the model's
    cache, the package itself."""
    files = [project / "CLAUDE.md", project / "CLAUDE.local.md", project / "AGENTS.md",
             home / ".claude" / "CLAUDE.md"]
    rules = project / ".claude" / "rules"
    if rules.is_dir():
        files += sorted(rules.glob("*.md"))
    out = []
    for f in files:
        try:
            holds = "<!-- lore:begin" in f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if holds:
            out.append((f"Lore's block in {f}",
                        "delete the lines from <!-- lore:begin … --> to <!-- lore:end -->"))
    if lore_home.exists():
        out.append((f"the home {lore_home} (database, config, logs)",
                    f"rm -r {lore_home}  (lore admin export > lessons.jsonl keeps a copy first)"))
    if model_cache is not None and model_cache.exists():
        out.append((f"the model cache {model_cache}", f"rm -r {model_cache}"))
    out.append(("the lore command itself", package_command("uninstall")))
    return out


def apply(changes: list[Change]) -> list[Path]:
    backups = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for c in changes:
        c.path.parent.mkdir(parents=True, exist_ok=True)
        if c.before is not None:
            backup = c.path.with_name(f"{c.path.name}.lore-backup-{stamp}")
            n = 1
            while backup.exists():  # never overwrite an earlier backup
                backup = c.path.with_name(f"{c.path.name}.lore-backup-{stamp}-{n}")
                n += 1
            backup.write_text(c.before, encoding="utf-8")
            backups.append(backup)
        tmp = c.path.with_name(f".{c.path.name}.lore-tmp")
        tmp.write_text(c.after, encoding="utf-8")
        tmp.replace(c.path)
    return backups


def _read(path: Path) -> tuple[str | None, dict[str, Any]]:
    if not path.exists():
        return None, {}
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); fix it "
                           "first, nothing was changed") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} must hold a JSON object; nothing was changed")
    return text, data


def _change(path: Path, before: str | None, data: dict[str, Any]) -> Change:
    """The change that writes ``data``; none when the file already holds it (byte for byte)."""
    if before is not None and json.loads(before or "{}") == data:
        return Change(path, before, before)
    return Change(path, before, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _is_ours(handler: Any) -> bool:
    cmd = handler.get("command", "") if isinstance(handler, dict) else ""
    parts = str(cmd).split()
    return len(parts) == 3 and Path(parts[0]).name.startswith("lore") and parts[1] == "hook"


def _settings_change(path: Path, command: str, remove: bool) -> Change:
    before, data = _read(path)
    if remove and before is None:
        return Change(path, "", "")  # nothing installed there
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInput(f"{path}: 'hooks' is not an object; nothing was changed")
    for event in list(hooks):
        groups = hooks[event] if isinstance(hooks[event], list) else []
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                others = [h for h in group["hooks"] if not _is_ours(h)]
                if others:
                    kept.append({**group, "hooks": others})
                elif not group["hooks"]:
                    kept.append(group)
            else:
                kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not remove:
        for event, matcher, arg, timeout in HOOKS:
            entry: dict[str, Any] = {"hooks": [{"type": "command",
                                                "command": f"{command} hook {arg}",
                                                "timeout": timeout}]}
            if matcher:
                entry = {"matcher": matcher, **entry}
            hooks.setdefault(event, []).append(entry)
    if hooks:
        data["hooks"] = hooks
    else:
        data.pop("hooks", None)
    return _change(path, before, data)


def _mcp_change(path: Path, keys: list[str], command: str, remove: bool) -> Change:
    before, data = _read(path)
    if remove and before is None:
        return Change(path, "", "")
    node = data
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise InvalidInput(f"{path}: '{key}' is not an object; nothing was changed")
    servers = node.setdefault(keys[-1], {})
    if not isinstance(servers, dict):
        raise InvalidInput(f"{path}: '{keys[-1]}' is not an object; nothing was changed")
    ours = {"type": "stdio", "command": command, "args": ["mcp"], "env": {}}
    if remove:
        if servers.get("lore", {}).get("args") == ["mcp"]:
            del servers["lore"]
        if not servers:
            node.pop(keys[-1], None)
    else:
        servers["lore"] = ours
    return _change(path, before, data)


# ---- the judge ---------------------------------------------------------------------------
# Offered by `lore install`: a language model that decides what the sessions teach
# (docs/learning.md). Tokens per judged session, median and p90, measured by
# bench/quality/judge_tokens.py on real Claude Code transcripts.
JUDGE_TOKENS = (1536, 2541)
JUDGE_BUDGET = 200_000  # tokens a day: about 80 sessions at the p90
JUDGES = {
    # name: (llm.provider, default model, base_url, api_key_env, what it is)
    "claude-cli": ("claude-cli", "haiku", None, None,
                   "your own Claude Code (`claude -p`) with a small model"),
    "anthropic": ("anthropic", "claude-haiku-4-5", None, "ANTHROPIC_API_KEY",
                  "the Anthropic API (key in $ANTHROPIC_API_KEY)"),
    "openai": ("openai", "llama3.1:8b", "http://localhost:11434/v1", None,
               "an OpenAI-compatible server: Ollama (default), llama.cpp, vLLM … everything local"),
}


def judge_block(judge: str, *, model: str | None = None, base_url: str | None = None,
                budget: int = JUDGE_BUDGET) -> str:
    """The ``llm:`` section of config.yaml for the chosen judge."""
    if judge not in JUDGES:
        raise InvalidInput(f"unknown judge '{judge}' (choose from {', '.join(JUDGES)} or none)")
    provider, default_model, default_url, key_env, _ = JUDGES[judge]
    lines = ["llm:  # the judge: decides what a session teaches (lore install --judge)",
             f"  provider: {provider}", f"  model: {json.dumps(model or default_model)}"]
    if base_url or default_url:
        lines.append(f"  base_url: {json.dumps(base_url or default_url)}")
    if key_env:
        lines.append(f"  api_key_env: {key_env}")
    lines.append(f"  daily_token_budget: {budget}")
    return "\n".join(lines) + "\n"


def with_llm_block(text: str, block: str) -> str:
    """``text`` (a config.yaml) with its top-level ``llm:`` section replaced by ``block``, or
    ``block`` appended; every other line is kept as it is, comments included."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.startswith("llm:")), None)
    if start is None:
        sep = "" if not text or text.endswith("\n") else "\n"
        return text + sep + ("\n" if text.strip() else "") + block
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in " \t"):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # blank lines before the next section stay
    return "".join(lines[:start]) + block + "".join(lines[end:])


def judge_change(config_path: Path, block: str) -> Change:
    """The config change for the judge; the result must load as a valid config."""
    from lore.config import load_config

    try:
        before = config_path.read_text(encoding="utf-8") if config_path.exists() else None
    except OSError as exc:
        raise InvalidInput(f"cannot read {config_path}: {exc.strerror}") from None
    after = with_llm_block(before or "", block)
    probe = config_path.with_name(f".{config_path.name}.judge-check")
    try:
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text(after, encoding="utf-8")
        load_config(probe)
    except Exception as exc:  # noqa: BLE001 - any reason the new config does not load
        raise InvalidInput(f"{config_path}: the judge's settings would not load ({exc}); "
                           "nothing was changed") from None
    finally:
        probe.unlink(missing_ok=True)
    return Change(config_path, before, after)
