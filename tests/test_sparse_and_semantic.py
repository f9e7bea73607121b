"""The sparse-information rule and the semantic chunker, on planted examples."""

import numpy as np

from index_build.chunkers.semantic import semantic_groups
from index_build.chunking import ChunkingOptions, chunk_document
from index_build.document import Block, ParsedDocument
from index_build.version import approximate_nearest
from pipeline.retrieval.sparse import (
    distinctive_tokens,
    find_sparse,
    nearest_neighbour_similarity,
    rank_sparse,
)

TEXTS = [
    "Apple reported total net sales of 81,797 million for the quarter.",
    "Apple reported total net sales of 81,797 million for the quarter ended July.",
    "Microsoft revenue grew in the cloud segment during the quarter.",
    "The Kepler telescope was retired in 2018 after the reaction wheels failed.",
]


def unit(*values):
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


EMBEDDINGS = np.vstack([unit(1, 0, 0, 0), unit(1, 0.05, 0, 0), unit(0.6, 1, 0, 0), unit(0, 0, 1, 0.2)])


def test_distinctive_tokens_are_numbers_and_names():
    assert distinctive_tokens("Apple sold $81,797 (12%) in Q3 and 7 units") == {"81797", "12", "apple"}


def test_a_planted_unique_fact_is_sparse_and_repeated_facts_are_not():
    sparse = find_sparse(TEXTS, EMBEDDINGS, threshold=0.85)
    # 0 and 1 repeat each other (same figures, near-identical embedding); 2 has a unique name
    # ("Microsoft") and no close neighbour; 3 states a unique fact (Kepler, 2018).
    assert sparse.rows.tolist() == [2, 3]
    assert np.allclose(
        sparse.nearest, [float(EMBEDDINGS[2] @ EMBEDDINGS[1]), float(EMBEDDINGS[3] @ EMBEDDINGS[2])]
    )


def test_unique_tokens_alone_are_not_enough_when_a_near_paraphrase_exists():
    texts = ["Kepler was retired in 2018.", "The telescope was retired that year."]
    embeddings = np.vstack([unit(1, 0), unit(1, 0.01)])
    assert find_sparse(texts, embeddings, threshold=0.85).rows.tolist() == []


def test_the_vector_index_gives_nearly_the_exact_nearest_neighbour_similarities():
    from index_build.vector_library import usearch_index

    usearch = usearch_index()
    Index, ScalarKind = usearch.Index, usearch.ScalarKind

    rng = np.random.default_rng(3)
    centres = rng.standard_normal((40, 32))
    vectors = (centres[rng.integers(0, 40, 3000)] + 0.4 * rng.standard_normal((3000, 32))).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = Index(ndim=32, metric="cos", dtype=ScalarKind.F32)
    index.add(np.arange(3000, dtype=np.uint64), vectors)
    exact = nearest_neighbour_similarity(vectors)
    approximate = approximate_nearest(index, vectors)
    assert approximate.shape == exact.shape
    assert np.all(approximate <= exact + 1e-4), "never closer than the true nearest other row"
    assert np.mean(np.abs(approximate - exact) < 1e-4) > 0.95


def test_sparse_ranking_by_similarity_with_isolation_as_tie_breaker():
    sparse = find_sparse(TEXTS, EMBEDDINGS, threshold=0.85)
    assert [row for row, _ in rank_sparse(unit(0, 0, 1, 0), EMBEDDINGS, sparse, k=5)] == [3, 2]
    tied = np.vstack([unit(1, 0), unit(1, 0), unit(0, 1)])
    from pipeline.retrieval.sparse import SparseSet

    planted = SparseSet(rows=np.array([0, 1]), nearest=np.array([0.5, 0.2], dtype=np.float32), threshold=0.85)
    assert [row for row, _ in rank_sparse(unit(1, 0), tied, planted, k=2)] == [1, 0]


CRYOSTAT = [
    "The cryostat cools the receivers to four kelvin.",
    "Its cold head is serviced every six months.",
    "Helium leaks in the cryostat are checked weekly.",
    "A warm-up of the cryostat takes two days.",
]
PAYROLL = [
    "Pay slips are issued on the last working day of the month.",
    "Salary advances must be requested from the payroll office.",
    "Overtime is paid with the following month's salary.",
]


def test_the_semantic_chunker_splits_at_a_planted_topic_change(embedder):
    section = [Block("text", " ".join(CRYOSTAT + PAYROLL), 1)]
    groups = semantic_groups(section, embedder.embed, percentile=10)
    assert [g[0].text for g in groups] == [" ".join(CRYOSTAT), " ".join(PAYROLL)]

    document = ParsedDocument("Handbook", (Block("heading", "Operations", 1, 1), *section), 1)
    semantic = ChunkingOptions(method="semantic", semantic_percentile=10)
    chunks = chunk_document(
        document,
        doc_id="d",
        collection="c",
        source="s",
        tokenizer=embedder.tokenizer,
        options=semantic,
        embed=embedder.embed,
    )
    assert [c.text for c in chunks] == [" ".join(CRYOSTAT), " ".join(PAYROLL)]
    headings = chunk_document(
        document,
        doc_id="d",
        collection="c",
        source="s",
        tokenizer=embedder.tokenizer,
        options=ChunkingOptions(),
    )
    assert len(headings) == 1  # the heading chunker keeps the short section whole
