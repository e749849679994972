"""Recall: hybrid lesson search."""

from lore.search.hybrid import search, vector_candidates
from lore.search.snippet import snippet

__all__ = ["search", "vector_candidates", "snippet"]
