"""`lore statusline`: one line for Claude Code's status bar (its ``statusLine`` setting).

Claude Code runs it every few seconds with the session's JSON on stdin (``workspace``,
``cwd``); it prints what waits for review in that project (and globally) and how many tool
calls Lore's checks blocked today, in one line. It takes the executable's fast path: no
click, no config validation, no model; one read-only query (``lore.apply.nudge``). Anything
wrong (no database, bad stdin) prints a plain ``Lore`` line and exits 0: a status bar is
never an error.
"""

from __future__ import annotations

import os
import sys

USAGE = """Usage: lore statusline

One line for Claude Code's status bar: rules and checks waiting for review here, and the
tool calls Lore's checks blocked today. Claude Code runs it with the session's JSON on stdin.

In ~/.claude/settings.json:
  "statusLine": {"type": "command", "command": "lore statusline"}

Example:
  echo '{"cwd": "'$PWD'"}' | lore statusline
"""


def database() -> str | None:
    """The SQLite file, as the other commands find it ($LORE_DB, the config's ``database``,
    $LORE_HOME/lore.db); None for a server URL (nothing to show at a glance). pathlib and
    lore.home are not imported: they cost the line more than its query."""
    home = os.path.expanduser(os.environ.get("LORE_HOME") or os.path.join("~", ".lore"))
    location = os.environ.get("LORE_DB") or os.environ.get("LORE_DATABASE_URL")
    if not location:
        config = os.environ.get("LORE_CONFIG") or os.path.join(home, "config.yaml")
        try:
            with open(config, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError):
            text = ""
        if any(line.startswith("database:") for line in text.splitlines()):
            import yaml  # only when the file names a database: YAML costs the line its budget

            data = yaml.safe_load(text)
            location = data.get("database") if isinstance(data, dict) else None
    if location and "://" in str(location):
        return None
    return os.path.expanduser(str(location)) if location else os.path.join(home, "lore.db")


def plugin_enabled(cwd: str | None) -> bool:
    """Whether Claude Code's settings enable Lore's plugin (user, project or local scope): the
    line then names /lore:review. The plugin's wrapper says so itself ($LORE_PLUGIN)."""
    if os.environ.get("LORE_PLUGIN") == "1":
        return True
    import json

    files = [os.path.join(os.path.expanduser("~"), ".claude", "settings.json")]
    if cwd:
        files += [os.path.join(cwd, ".claude", name)
                  for name in ("settings.json", "settings.local.json")]
    for path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                enabled = json.load(fh).get("enabledPlugins")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(enabled, dict) and any(
                str(k).split("@")[0] == "lore" and v is True for k, v in enabled.items()):
            return True
    return False


def folder(stdin: str) -> str | None:
    import json

    try:
        data = json.loads(stdin) if stdin.strip() else {}
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    workspace = data.get("workspace")
    found = workspace.get("current_dir") if isinstance(workspace, dict) else None
    found = found or data.get("cwd")
    return found if isinstance(found, str) else None


def main(args: list[str]) -> int:
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0
    if args:
        sys.stderr.write(f"lore statusline takes no arguments (got {args[0]!r}); see --help\n")
        return 2
    try:
        from lore.apply.nudge import statusline
        from lore.projects import project_root

        stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
        db = database()
        project = project_root(folder(stdin) or os.getcwd())
        line = "Lore" if db is None else statusline(db, project,
                                                    plugin=plugin_enabled(project))
    except Exception:  # noqa: BLE001 - a status bar never shows an error
        line = "Lore"
    sys.stdout.write(line + "\n")
    return 0
