"""The `lore` executable. `lore hook …` takes a fast path that never imports click or
anything else heavy: hooks run on the agent's critical path (p90 budget 60 ms)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    # Everything Lore writes (database, queue, logs, pid file, config, exports) is for the
    # user only: files 0600 and folders 0700 even where the code names no mode.
    os.umask(0o077)
    if len(sys.argv) >= 2 and sys.argv[1] == "hook":
        from lore.capture.hooks import EVENTS
        from lore.capture.hooks import main as hook_main

        if len(sys.argv) == 3 and not sys.argv[2].startswith("-"):
            sys.exit(hook_main(sys.argv[2]))
        if len(sys.argv) == 2 or sys.argv[2] in ("-h", "--help"):
            print("Usage: lore hook EVENT\n\nRun by Claude Code: reads the hook's JSON on stdin "
                  "and queues it for the worker.\nNever fails: errors go to "
                  "$LORE_HOME/logs/hooks.log.\n\nEvents: " + ", ".join(EVENTS) + "\n\n"
                  "Example:\n  echo '{\"session_id\": \"s1\"}' | lore hook session-end")
            sys.exit(0)
    # Pydantic looks for its plugins in every installed package's metadata the first time
    # a model is built (a scan of all dist-info, the largest part of loading the config);
    # Lore uses none. A user who sets the variable keeps their value.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    profile = mcp_profile(sys.argv[1:])
    if profile is not None:
        # `lore mcp` as a client starts it: no click, and the config is read by the first
        # tool call, so the handshake and the tool list are answered once the SDK is loaded.
        from lore.mcp.server import serve

        serve(profile)
        return
    from lore.cli import main as cli_main

    cli_main()


def mcp_profile(args: list[str]) -> str | None:
    """The profile of a plain `lore mcp` (``--profile NAME`` or ``$LORE_MCP_PROFILE``), or None
    for anything else: other arguments, ``--help``, an unknown profile (the CLI answers those,
    with its errors)."""
    from lore.mcp import DEFAULT_PROFILE, PROFILES

    if not args or args[0] != "mcp":
        return None
    rest = args[1:]
    if not rest:
        profile = os.environ.get("LORE_MCP_PROFILE") or DEFAULT_PROFILE
    elif len(rest) == 2 and rest[0] == "--profile":
        profile = rest[1]
    elif len(rest) == 1 and rest[0].startswith("--profile="):
        profile = rest[0].split("=", 1)[1]
    else:
        return None
    return profile if profile in PROFILES else None


if __name__ == "__main__":  # pragma: no cover
    main()
