"""Lore's benchmarks: speed benchmarks at the top (bench.harness runs and records them),
quality measurements in bench.quality, LoCoMo retrieval in bench.locomo."""
