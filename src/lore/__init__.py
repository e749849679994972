"""Lore: a local-first learning memory for AI coding agents."""

__version__ = "0.2.0"
