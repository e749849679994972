"""Learning from corrections: detect them, extract the preference, merge and score it."""
