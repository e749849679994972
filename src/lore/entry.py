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
        if len(sys.argv) == 3 and sys.argv[2] == "pre-tool-use":
            # Every tool call pays for this one: the compiled checks file alone.
            from lore.apply.check_hook import main as check_main

            sys.exit(check_main())
        from lore.hooks import EVENTS
        from lore.hooks import main as hook_main

        if len(sys.argv) == 3 and not sys.argv[2].startswith("-"):
            sys.exit(hook_main(sys.argv[2]))
        if len(sys.argv) == 2 or sys.argv[2] in ("-h", "--help"):
            print("Usage: lore hook EVENT\n\nRun by Claude Code: reads the hook's JSON on stdin "
                  "and queues it for the worker.\nNever fails: errors go to "
                  "$LORE_HOME/logs/hooks.log.\n\nEvents: " + ", ".join(EVENTS) + "\n\n"
                  "Example:\n  echo '{\"session_id\": \"s1\"}' | lore hook session-end")
            sys.exit(0)
    if len(sys.argv) >= 2 and sys.argv[1] == "statusline":
        # Claude Code runs it every few seconds: one read-only query, nothing else loaded.
        from lore.statusline import main as statusline_main

        sys.exit(statusline_main(sys.argv[2:]))
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

    try:
        cli_main()
    except SystemExit as exc:
        quick_exit(exc.code)
        raise
    quick_exit(0)


def quick_exit(code: object) -> None:
    """End a command that loaded the embedding model without tearing it down.

    Everything is written and closed by then (the store, the output); what remains is the
    interpreter freeing its modules, ONNX Runtime's session and its float32 weights and
    thread pools: 100-250 ms after the result was printed (docs/benchmarks.md). Output is
    flushed and logs closed first; a flush that fails leaves the ordinary exit to report it.
    """
    if "onnxruntime" not in sys.modules or not (code is None or isinstance(code, int)):
        return
    import logging

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    from os import _exit  # the documented way to end without the interpreter's teardown

    logging.shutdown()
    _exit(code or 0)


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
