"""The parts of the core facade (:class:`lore.api.Lore`): each owns one job and talks to the
store protocol, never to SQL.

``embedding`` the model and the record of which model built the vectors; ``lessons`` lesson
writes (validation to stored row); ``conversations`` transcript import and search;
``learner`` from a captured message to a scored rule; ``transfer`` JSON Lines import.
"""
