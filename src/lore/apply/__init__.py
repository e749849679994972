"""Apply: what Lore gives back to agents. ``session_context`` (what SessionStart tells a new
session), ``blocks`` (Lore's managed block in a markdown file), ``rules`` (rule lines, their
phrasing and de-duplication), ``targets`` (the plan over CLAUDE.md, .claude/rules, AGENTS.md),
``files`` (diffs, atomic writes), ``skills`` and ``automemory`` (Claude Code's auto memory)."""
