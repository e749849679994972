"""Conversation search measured on LoCoMo: the ablation harness (explore), the choices made
leave-one-conversation-out (loco, learn) and re-ranking by a language model (rerank)."""
