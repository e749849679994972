"""Learning from corrections: detect them, extract the preference, merge and score it.

``detect``, ``features``, ``extract``, ``redact`` and ``silent`` are plain functions over text
(standard library only); ``learner.Learning`` runs the pipeline over a :class:`lore.api.Lore`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lore.learn.learner import Learning, Outcome

__all__ = ["Learning", "Outcome"]


def __getattr__(name: str) -> Any:  # the pipeline pulls in the core API: load it on first use
    if name in __all__:
        from lore.learn import learner

        return getattr(learner, name)
    raise AttributeError(name)
