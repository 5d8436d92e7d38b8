"""Prompts, one module per paper: functions that return messages, each naming the
pydantic model its answer must match."""
