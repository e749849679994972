"""Extract: turning captured material into lesson candidates.

From a message to the fields of a rule: ``features`` and ``detect`` (the detector, weights
in ``detector.json``), ``phrases`` and ``shapes`` (the phrasings a rule is read from),
``silent`` (fixes the user made without a word), ``merge`` (does a new rule restate or
contradict a known one) and ``score`` (the confidence of a learned rule). Plain functions over text,
standard library only; the pipeline that stores what they find is
:class:`lore.core.learner.Learner`.

From git changes and transcripts (analysis.md): ``significance`` (the significance score and a
summary without a model), ``session_learnings`` (the pattern-based session pass) and
``analysis`` (the four-stage analysis through a language model).

An extractor is a backend: anything with ``name`` and ``extract(message, proposal)``
registered in the ``lore.extractors`` entry-point group (a language-model extractor, say),
chosen by ``learning.extractor``.
"""

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
