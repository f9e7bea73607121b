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

A question's technical names (``archive_command``, ``PgBouncer``, ``--bindir``) say more than its
vector: "what does archive_command do?" is as near the Debian Reference as the PostgreSQL
manual by its words' meaning, and only the manual has the name. So when some collections know
the names and others do not, the nearest collection is the nearest of those that know them,
and no collection weighs more than it (``naming``). Measured on the 961 names the manual's
entries define, asked "what does <name> do?" (`make bench ONLY=reference-pages`): the defining
page first for 0.563 before, 0.623 with this rule.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import numpy as np


def collection_weights(
    question: np.ndarray,
    collections: Mapping[str, np.ndarray],
    temperature: float,
    naming: Collection[str] = (),
) -> dict[str, float]:
    """Each collection's weight for ``question`` (unit vectors); see the module docstring.
    ``naming``: the collections that know the question's technical names, when some do and
    some do not (empty otherwise)."""
    if temperature <= 0 or len(collections) < 2:
        return {name: 1.0 for name in collections}
    similarities = {name: float(vector @ question) for name, vector in collections.items()}
    nearest = max(s for name, s in similarities.items() if not naming or name in naming)
    return {
        name: round(min(1.0, math.exp(-(nearest - s) / temperature)), 4) for name, s in similarities.items()
    }


def mean_direction(vectors: np.ndarray) -> np.ndarray:
    """The unit vector of the mean of ``vectors`` (rows): a collection's content as one direction."""
    mean = np.asarray(vectors, dtype=np.float32).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm else mean
