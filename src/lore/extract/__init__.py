"""Extract: turning captured material (git changes, transcripts) into lesson candidates."""
