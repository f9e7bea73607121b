"""Routing a question to the collections it is about, without an LLM call.

The PostgreSQL manual and the Debian Reference both speak of servers, packages and
configuration files; a question on the default editor of a Debian box still drew a page of the
PostgreSQL manual into its context. Each collection has a vector: its configured description's
(``collections.<name>.description``), else its own content's, the mean of its passages'
vectors. A question's similarity to each tells which it is about, and the others' passages
weigh less in the fusion of the search, the more so the further they are: weight
``exp(-gap / temperature)``, where ``gap`` is how much less similar a collection is than the
nearest. Nothing is excluded: a question both collections answer keeps both (a small gap
weighs almost nothing), and a misrouted question still finds its passages, weighed down.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def collection_weights(
    question: np.ndarray, collections: Mapping[str, np.ndarray], temperature: float
) -> dict[str, float]:
    """Each collection's weight for ``question`` (unit vectors); see the module docstring."""
    if temperature <= 0 or len(collections) < 2:
        return {name: 1.0 for name in collections}
    similarities = {name: float(vector @ question) for name, vector in collections.items()}
    nearest = max(similarities.values())
    return {name: round(math.exp(-(nearest - s) / temperature), 4) for name, s in similarities.items()}


def mean_direction(vectors: np.ndarray) -> np.ndarray:
    """The unit vector of the mean of ``vectors`` (rows): a collection's content as one direction."""
    mean = np.asarray(vectors, dtype=np.float32).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm else mean
