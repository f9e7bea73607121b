"""Benchmarks: speed and quality figures as JSON (`make bench`), never timed test assertions."""
