"""Quality measurements: what the product finds, learns, proposes or loses, on real or generated data."""
