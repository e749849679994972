"""Capture: reading what agents wrote (transcripts) into Lore's values."""
