"""Readers that turn files into episodes: JSONL and LoCoMo."""
