"""The one lexical analyser: indexing and querying must tokenize identically.

Lower-case word tokens (letters and digits, keeping in-word ``.``, ``,`` and ``-`` so that
``81,797`` and ``10-Q`` survive), English stop words removed, Snowball-stemmed.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"[a-z0-9]+(?:[.,'\-][a-z0-9]+)*")

# The stop-word list bm25s uses for "en" (Lucene's), so BM25 figures match published runs.
ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their
    then there these they this to was will with""".split()
)


@lru_cache(maxsize=1)
def _stemmer():
    # PyStemmer is a C extension; loading it once per process is enough.
    import Stemmer

    return Stemmer.Stemmer("english")


def analyze(text: str) -> list[str]:
    """Turn text into the stemmed terms BM25 indexes and searches."""
    words = [w for w in _TOKEN.findall(text.lower()) if w not in ENGLISH_STOPWORDS]
    return _stemmer().stemWords(words)


def analyze_many(texts: list[str]) -> list[list[str]]:
    """:func:`analyze` over a batch (one stemmer call per text)."""
    return [analyze(t) for t in texts]
