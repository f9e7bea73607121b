"""Context selection and ordering on small hand-made examples."""

import numpy as np
import pytest

from pipeline.retrieval.ordering import (
    Sentence,
    cluster_by_silhouette,
    cluster_order,
    dedupe,
    jaccard,
    order_ping_pong,
    split_sentences,
)
from pipeline.retrieval.selection import Item
from pipeline.retrieval.selections.fps import select_fps
from pipeline.retrieval.selections.mmr import select_mmr
from pipeline.retrieval.selections.topk import select_topk


def item(key, score, vector, tokens=10):
    v = np.array(vector, dtype=np.float32)
    return Item(key, key, tokens, score, v / np.linalg.norm(v))


ITEMS = [
    item("a", 0.9, [1, 0.05, 0]),
    item("a-copy", 0.85, [1, 0.06, 0]),
    item("b", 0.6, [0, 1, 0]),
    item("c", 0.5, [0, 0, 1]),
]


def keys(items):
    return [i.key for i in items]


def test_topk_fills_the_budget_in_score_order_and_skips_what_does_not_fit():
    sized = [*ITEMS[:2], item("big", 0.8, [1, 1, 1], tokens=50), *ITEMS[2:]]
    assert keys(select_topk(sized, budget=30)) == ["a", "a-copy", "b"]


def test_mmr_with_alpha_one_equals_topk():
    assert keys(select_mmr(ITEMS, budget=30, alpha=1.0)) == keys(select_topk(ITEMS, budget=30))


def test_mmr_skips_the_near_duplicate():
    assert keys(select_mmr(ITEMS, budget=30, alpha=0.5)) == ["a", "b", "c"]


def test_mmr_window_only_remembers_recent_selections():
    # With a window of 1, after "b" is chosen "a-copy" is compared with "b" only, not with "a".
    assert keys(select_mmr(ITEMS, budget=30, alpha=0.5, window=1))[:3] == ["a", "b", "a-copy"]


def test_fps_picks_the_farthest_point():
    points = [
        item("start", 1.0, [1, 0, 0]),
        item("near", 0.9, [1, 0.1, 0]),
        item("mid", 0.8, [1, 1, 0]),
        item("far", 0.1, [-1, 0, 0]),
    ]
    assert keys(select_fps(points, budget=20, weight=0.0)) == ["start", "far"]


def test_fps_score_weight_one_is_topk():
    assert keys(select_fps(ITEMS, budget=40, weight=1.0)) == keys(select_topk(ITEMS, budget=40))


def test_ping_pong_puts_the_strongest_at_both_ends():
    assert order_ping_pong(list("ABCDE"), 1, 1) == list("ACEDB")
    assert order_ping_pong(list("ABCDEF"), 2, 1) == list("ABDEFC")
    assert order_ping_pong([], 1, 1) == []


def test_jaccard_deduplication():
    texts = [
        "Revenue grew nine percent in the third quarter",
        "Revenue grew nine percent in the third quarter.",
        "In the third quarter revenue grew nine percent",
        "Costs fell slightly",
    ]
    assert jaccard(texts[0], texts[2]) == 1.0
    assert dedupe(texts, threshold=0.9) == [0, 3]
    assert dedupe(texts, threshold=1.01) == [0, 1, 2, 3]


def test_sentences_and_table_rows_are_split():
    text = "Net sales rose. Services grew 8%.\n| Item | 2023 |\n| --- | --- |\n| Total | 81,797 |"
    assert split_sentences(text) == [
        "Net sales rose.",
        "Services grew 8%.",
        "| Item | 2023 |",
        "| Total | 81,797 |",
    ]


def test_an_ellipsis_eliding_syntax_ends_no_sentence():
    text = "It handles concurrent updates better than INSERT ... ON CONFLICT. Use MERGE otherwise."
    assert split_sentences(text) == [
        "It handles concurrent updates better than INSERT ... ON CONFLICT.",
        "Use MERGE otherwise.",
    ]


def test_a_list_written_inline_splits_into_its_items_and_running_text_does_not():
    bullets = "Claims fell 71 percent. • Answered 82 percent of calls. • Processed payments in 5 days."
    assert split_sentences(bullets) == [
        "Claims fell 71 percent.",
        "• Answered 82 percent of calls.",
        "• Processed payments in 5 days.",
    ]
    assert split_sentences("Costs rose • sharply.") == ["Costs rose • sharply."], (
        "one bullet inside a sentence"
    )
    assert split_sentences("See Item 2. Management's discussion. Note 4. Leases.") == [
        "See Item 2. Management's discussion.",
        "Note 4. Leases.",
    ], "a numbered heading in running text starts no item"


def planted(clusters=3, per=6, dims=12, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.eye(dims)[:clusters] * 5
    points = np.vstack([c + 0.3 * rng.standard_normal((per, dims)) for c in centres])
    return points / np.linalg.norm(points, axis=1, keepdims=True), np.repeat(np.arange(clusters), per)


@pytest.mark.parametrize("clusters", [2, 3, 4])
def test_silhouette_finds_the_planted_number_of_clusters(clusters):
    vectors, truth = planted(clusters)
    labels = cluster_by_silhouette(vectors).labels
    assert len(set(labels)) == clusters
    for group in range(clusters):  # each planted cluster maps to exactly one label
        assert len(set(labels[truth == group])) == 1


def test_clusters_are_ordered_by_best_similarity_to_the_query():
    vectors, truth = planted(3, per=4)
    sentences = [Sentence(f"s{i}", f"c{i}", i, float(i)) for i in range(len(vectors))]
    query = vectors[truth == 2].mean(axis=0)
    groups = cluster_order(sentences, vectors, query / np.linalg.norm(query))
    assert sorted(s.position for s in groups[0]) == [8, 9, 10, 11]  # the query's cluster first
    by_score = cluster_order(sentences, vectors, query, within="score")
    assert [s.position for s in by_score[0]] == [11, 10, 9, 8]


def test_inside_a_cluster_sentences_stand_in_the_order_the_clustering_aggregated_them():
    """The two nearly identical sentences merge first, the third joins them later: the
    aggregation order is b, c, a although the context gave a, b, c."""
    e = np.eye(4)
    a, b, c = e[0] + 0.3 * e[2], e[0] + 0.01 * e[3], e[0] + 0.02 * e[3]
    d, f, g = e[1], e[1] + 0.2 * e[2], e[1] + 0.2 * e[3]
    vectors = np.vstack([a, b, c, d, f, g])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sentences = [Sentence(f"s{i}", f"c{i}", i, 1.0) for i in range(len(vectors))]
    groups = cluster_order(sentences, vectors, e[0])
    assert [s.position for s in groups[0]] == [1, 2, 0]
    assert sorted(s.position for s in groups[1]) == [3, 4, 5]


def test_dedupe_keeps_empty_texts_once_and_compares_sizes_first():
    assert dedupe(["", "  ", "Costs fell"], threshold=0.9) == [0, 2]
    assert dedupe(["a b c d e f g h i j", "a b c d e f g h i j k"], threshold=0.9) == [0]  # 10/11 ≥ 0.9
    assert dedupe(["a b c d e f g h i", "a b c d e f g h i j k"], threshold=0.9) == [0, 1]  # 9/11 < 0.9


def test_the_cluster_order_embeds_nothing_a_piece_without_a_stored_vector_takes_its_chunks():
    from pipeline.retrieval.context import ContextConfig, build_context
    from pipeline.types import Chunk, SearchHit
    from tests.fakes import WhitespaceTokenizer

    vectors, _ = planted(2, per=2, dims=4)
    texts = ["Revenue rose nine percent.", "Sales grew fast.", "Costs fell slightly.", "Margins held up."]
    chunk = Chunk("d-0000", "d", "c", "/d.md", "d", (), (1, 1), " ".join(texts), "h")
    stored = dict(zip(texts[:3], vectors[:3], strict=True))
    asked: list[str] = []

    def chunk_vector(c):
        asked.append(c.chunk_id)
        return vectors[3]

    context = build_context(
        [SearchHit(chunk, 1.0)],
        ContextConfig(selection="sentences", order="cluster", budget_tokens=100),
        tokenizer=WhitespaceTokenizer(),
        chunk_vector=chunk_vector,
        query_vector=vectors[0],
        stored_vectors=lambda pieces: [stored.get(p.text) for p in pieces],
    )
    assert asked == ["d-0000"]  # once, for "Margins held up."
    assert sorted(p.text for p in context.pieces) == sorted(texts)


def test_the_silhouette_equals_scikit_learns_on_random_clusterings():
    from scipy.spatial.distance import pdist, squareform
    from sklearn.metrics import silhouette_score

    from pipeline.retrieval.ordering import silhouette

    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(3, 60))
        vectors = rng.normal(size=(n, 16))
        labels = np.unique(rng.integers(0, int(rng.integers(2, 8)), size=n), return_inverse=True)[1]
        if not 2 <= len(set(labels)) <= n - 1:  # where scikit-learn defines it
            continue
        distances = squareform(np.clip(pdist(vectors, "cosine"), 0, None))
        expected = silhouette_score(vectors, labels, metric="cosine")
        assert silhouette(distances, labels) == pytest.approx(expected)
