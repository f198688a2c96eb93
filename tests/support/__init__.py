"""Helpers shared by the test suite (stand-in servers and the like)."""
