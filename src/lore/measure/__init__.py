"""Retrieval-quality evaluations on public benchmarks (`lore eval …`)."""
