"""`lore hook EVENT`: listed in `lore --help`; the executable runs hooks without click
(lore.entry), so this command is only reached through `python -m lore.cli` or tests."""

from __future__ import annotations

import sys

import click


@click.command("hook", context_settings={"ignore_unknown_options": True})
@click.argument("event")
def hook(event: str) -> None:
    """Queue a Claude Code hook event (run by Claude Code, reads JSON on stdin; never fails).

    Events: session-start, user-prompt-submit, pre-tool-use, post-tool-use, stop, subagent-stop,
    pre-compact, session-end.

    \b
    Example:
      echo '{"session_id": "s1", "transcript_path": "..."}' | lore hook session-end
    """
    from lore.hooks import main

    sys.exit(main(event))


@click.command("statusline")
def statusline() -> None:
    """One line for Claude Code's status bar: what waits for review, what checks blocked today.

    Set it in ~/.claude/settings.json: "statusLine": {"type": "command", "command":
    "lore statusline"}. Claude Code sends the session's JSON on stdin; the line names the
    project's rules and checks waiting for review and the tool calls blocked today. It never
    fails: without a database it prints "Lore".

    \b
    Example:
      echo '{"cwd": "."}' | lore statusline
    """
    from lore.statusline import main

    sys.exit(main([]))
