"""`make bench`: every part says what its figures are measured on and what was tuned there."""

from evaluation.benchmarks.run import DATA_LABELS, PARTS


def test_every_benchmark_part_labels_its_data_and_what_was_tuned_on_it():
    assert set(DATA_LABELS) == set(PARTS)
    for part in ("context", "agent", "manual-qa", "context-manual-qa", "retrieval"):
        label = DATA_LABELS[part]
        assert ("dev" in label or "test" in label) and ("tuned" in label or "chosen" in label), part
    assert "tuned on SciFact train" in DATA_LABELS["retrieval"] and "test" in DATA_LABELS["retrieval"]
