"""Recall: hybrid lesson search."""

from lore.search.hybrid import search
from lore.search.snippet import snippet
from lore.search.vectors import MemoryIndex

__all__ = ["search", "snippet", "MemoryIndex"]
