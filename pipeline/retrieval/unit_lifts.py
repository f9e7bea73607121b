"""What lifts an evidence unit's score beyond its search match: the best row of its table, a
sentence naming its row, a figure it states, a label the question names."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from pipeline.figures import figures
from pipeline.text import analyze
from pipeline.types import EvidenceUnit


def pull_table_rows(units: Sequence[EvidenceUnit], scores: np.ndarray, weight: float) -> np.ndarray:
    """Each row's score moved ``weight`` of the way up to the best score of its table's rows."""
    best: dict[tuple[str, str], float] = {}
    for unit, score in zip(units, scores, strict=True):
        if unit.kind == "row":
            key = (unit.chunk_id, unit.table_header)
            best[key] = max(best.get(key, float(score)), float(score))
    pulled = scores.copy()
    for i, unit in enumerate(units):
        if unit.kind == "row":
            pulled[i] += weight * (best[(unit.chunk_id, unit.table_header)] - scores[i])
    return pulled


def pull_mentioned_rows(
    units: Sequence[EvidenceUnit], scores: np.ndarray, weight: float, sentences: int
) -> np.ndarray:
    """Each table row named by one of the ``sentences`` best sentences moved ``weight`` of the way up to it.

    Narrative says which line item matters ("the increase in technology and infrastructure
    costs ..."); the table row of that name carries its figures. A label must be two terms
    or more: "Total" or "Other" alone names nothing in particular.
    """
    best_sentences = [int(i) for i in np.argsort(-scores, kind="stable") if units[int(i)].kind == "sentence"]
    said = [(float(scores[i]), _phrase(units[i].text)) for i in best_sentences[:sentences]]
    pulled = scores.copy()
    for i, unit in enumerate(units):
        if unit.kind != "row":
            continue
        label = row_label_terms(unit.text)
        if len(label) < 2:
            continue
        named = " " + " ".join(label) + " "
        best = max((score for score, text in said if named in text), default=None)
        if best is not None and best > scores[i]:
            pulled[i] += weight * (best - scores[i])
    return pulled


@lru_cache(maxsize=65_536)
def _phrase(text: str) -> str:
    """``text``'s analysed terms joined by spaces, with a space at each end (for phrase lookups)."""
    return " " + " ".join(analyze(text)) + " "


@lru_cache(maxsize=65_536)
def row_label_terms(row_text: str) -> tuple[str, ...]:
    """The analysed terms of a table row's label (its first cell)."""
    return tuple(analyze(" ".join(line.strip().strip("|").split("|")[0] for line in row_text.split("\n"))))


@lru_cache(maxsize=65_536)
def states_figures(text: str) -> bool:
    """Whether ``text`` states a figure (an amount, a percentage; not a year or a date)."""
    return bool(figures(text))


def label_match(unit: EvidenceUnit, query_terms: set[str]) -> float:
    """The share of a row label's terms that the question uses: 1.0 when it names the row ("Inventories")."""
    if unit.kind != "row":
        return 0.0
    terms = set(row_label_terms(unit.text))
    return len(terms & query_terms) / len(terms) if terms else 0.0
