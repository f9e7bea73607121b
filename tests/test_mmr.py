"""Maximal Marginal Relevance on small hand-made vectors."""

import numpy as np

from pipeline.retrieval.mmr import mmr_select


def unit(*values):
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


QUERY = unit(1, 0, 0)
CANDIDATES = np.vstack(
    [
        unit(1, 0.1, 0),  # 0: most relevant
        unit(1, 0.12, 0),  # 1: a near-copy of 0
        unit(1, 0, 0.9),  # 2: relevant, different direction
        unit(0, 1, 0),  # 3: irrelevant
    ]
)


def test_lambda_one_is_plain_top_k():
    order = np.argsort(-(CANDIDATES @ QUERY), kind="stable")
    assert mmr_select(QUERY, CANDIDATES, 3, lam=1.0) == [int(i) for i in order[:3]]


def test_lower_lambda_skips_the_near_copy():
    assert mmr_select(QUERY, CANDIDATES, 2, lam=1.0) == [0, 1]
    assert mmr_select(QUERY, CANDIDATES, 2, lam=0.5) == [0, 2]


def test_hand_computed_second_pick():
    # After picking 0: score(i) = λ·rel(i) − (1−λ)·sim(i, 0)
    lam = 0.7
    rel = CANDIDATES @ QUERY
    sim0 = CANDIDATES @ CANDIDATES[0]
    expected = int(np.argmax(np.where(np.arange(4) == 0, -np.inf, lam * rel - (1 - lam) * sim0)))
    assert mmr_select(QUERY, CANDIDATES, 2, lam=lam)[1] == expected


def test_k_larger_than_pool_and_empty_pool():
    assert sorted(mmr_select(QUERY, CANDIDATES, 10, lam=0.5)) == [0, 1, 2, 3]
    assert mmr_select(QUERY, np.zeros((0, 3), dtype=np.float32), 3, lam=0.5) == []
