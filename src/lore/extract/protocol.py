"""The extractor protocol: what reads a rule from a correction (``lore.extractors`` entry
points; the built-in one is :class:`lore.extract.shapes.RuleExtractor`). Imported as
``lore.extract.Extractor``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lore.extract.shapes import Extracted


class Extractor(Protocol):
    """Reads the rule a correction or preference states."""

    name: str

    def extract(self, message: str, proposal: str | None = None) -> Extracted | None:
        """The rule's fields, or None when the message gives nothing to read."""
        ...
