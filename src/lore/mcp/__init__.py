"""Lore's MCP server (`lore mcp`); the profile names are here, importable without the SDK."""

DEFAULT_PROFILE = "session"
PROFILES = ("session", "admin", "canonical", "ai-lessons", "self-learning", "self-reflect",
            "reinforcement", "all")
