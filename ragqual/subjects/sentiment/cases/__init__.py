"""The sentiment cases: every public module here with a CASES list is discovered automatically."""
