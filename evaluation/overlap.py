"""COS-Mix's classical answer metrics: word-overlap precision, recall and F-score, and METEOR,
of an answer against the gold answer.

They need no judge and reward an answer for using the gold answer's words; they cannot tell a
right figure from a wrong one, which is why the gold-figure and must-have measures stand beside
them. Words are lower-cased ``\\w+`` runs, citation markers left out.

METEOR follows Banerjee & Lavie (2005) with their parameters: unigrams aligned first by their
exact form, then by their stem, as NLTK aligns them (the synonym stage needs WordNet, which an
offline install does not have, so it is left out), ``Fmean = 10·P·R / (R + 9·P)``, and a
fragmentation penalty ``0.5 · (chunks / matches)³``, where a chunk is a run of matches
adjacent in both texts.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from pipeline.citations import blank_markers
from pipeline.text import stem_words

_WORD = re.compile(r"\w+")
METEOR_ALPHA = 0.9
METEOR_BETA = 3.0
METEOR_GAMMA = 0.5


@dataclass(frozen=True, slots=True)
class OverlapScores:
    """Word-overlap precision, recall and F-score, and METEOR, of an answer against a reference."""

    precision: float
    recall: float
    f_score: float
    meteor: float


def words(text: str) -> list[str]:
    return _WORD.findall(blank_markers(text).lower())


def overlap_scores(answer: str, reference: str) -> OverlapScores:
    """The four scores of ``answer`` against ``reference`` (all 0 when either has no words)."""
    hypothesis, gold = words(answer), words(reference)
    if not hypothesis or not gold:
        return OverlapScores(0.0, 0.0, 0.0, 0.0)
    shared = sum((Counter(hypothesis) & Counter(gold)).values())
    precision, recall = shared / len(hypothesis), shared / len(gold)
    f_score = 2 * precision * recall / (precision + recall) if shared else 0.0
    return OverlapScores(precision, recall, f_score, meteor(hypothesis, gold))


def meteor(hypothesis: list[str], reference: list[str]) -> float:
    """METEOR of one hypothesis against one reference, both as word lists; see the module docstring."""
    pairs = _align(hypothesis, reference)
    if not pairs:
        return 0.0
    precision, recall = len(pairs) / len(hypothesis), len(pairs) / len(reference)
    f_mean = precision * recall / (METEOR_ALPHA * precision + (1 - METEOR_ALPHA) * recall)
    pairs.sort()
    chunks = 1 + sum(1 for (h0, r0), (h1, r1) in zip(pairs, pairs[1:]) if not (h1 == h0 + 1 and r1 == r0 + 1))
    penalty = METEOR_GAMMA * (chunks / len(pairs)) ** METEOR_BETA
    return f_mean * (1 - penalty)


def _align(hypothesis: list[str], reference: list[str]) -> list[tuple[int, int]]:
    """(hypothesis position, reference position) pairs: exact forms first, then stems; each word
    aligned at most once. As NLTK's METEOR does (so that figures compare with papers that used
    it), a hypothesis word, from the last, takes the last free reference word of its form."""
    pairs: list[tuple[int, int]] = []
    free_h, free_r = set(range(len(hypothesis))), set(range(len(reference)))
    for forms_h, forms_r in ((hypothesis, reference), (stem_words(hypothesis), stem_words(reference))):
        for h in sorted(free_h, reverse=True):
            r = next((r for r in sorted(free_r, reverse=True) if forms_r[r] == forms_h[h]), None)
            if r is not None:
                pairs.append((h, r))
                free_h.discard(h)
                free_r.discard(r)
    return pairs
