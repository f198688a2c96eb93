"""The sentiment example subject (sentence -> positive / negative / neutral)."""
