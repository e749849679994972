"""Apply: what Lore gives back to agents (session context; later CLAUDE.md rules and skills)."""
