"""Conversation search measured on LoCoMo, one harness for what the product adopted: the
configuration and its ablation (explore), the extras chosen leave-one-conversation-out (loco:
the session term, the length prior and the question penalty) and re-ranking by a language model
(rerank). Each is run as ``python -m bench.locomo.NAME DATA``; the data is only read from the
path given."""
