"""Recall: hybrid lesson search."""

from lore.recall.hybrid import search
from lore.recall.snippet import snippet
from lore.recall.vectors import MemoryIndex

__all__ = ["search", "snippet", "MemoryIndex"]
