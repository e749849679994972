"""The review room: what waits for a person and what they decide.

:mod:`~lore.review.queue` says what waits (learned rules, proposed lessons, rules in conflict)
and what a decision is, from the store alone; :mod:`~lore.review.decide` records a person's
decisions; :mod:`~lore.review.folder` is the markdown review folder (its files, the parser of
the decisions written in them, writes that stay inside it) and :mod:`~lore.review.folder_sync`
exports and imports it; :class:`~lore.review.part.Review` is the ``review`` part of the facade
(:class:`lore.api.Lore`). The package imports nothing itself: the learner reads
:mod:`~lore.review.queue` without loading the rest.
"""
