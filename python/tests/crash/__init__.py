"""Crash injection: record what the writer does, enumerate what a crash can leave, check every invariant."""
