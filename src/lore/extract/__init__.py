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

TYPE_CHECKING = False  # the PreToolUse hook imports extract.steer: this package stays light
if TYPE_CHECKING:
    from lore.extract.protocol import Extractor

__all__ = ["Extractor"]


def __getattr__(name: str) -> object:
    # The protocol loads typing; only the learner and a plugin ask for it.
    if name == "Extractor":
        from lore.extract.protocol import Extractor

        return Extractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
