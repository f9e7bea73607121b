"""Benchmarks: speed and quality figures as JSON (`make bench`), never timed test assertions."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the checkout: docs/ is a corpus, README.md a prompt
DATA = REPO.parent / "shared" / "data"  # the evaluation data beside the checkout (../shared/data)
