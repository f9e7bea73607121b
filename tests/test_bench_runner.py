"""`make bench`: every part says what its figures are measured on and what was tuned there."""

from evaluation.benchmarks.run import DATA_LABELS, PARTS, PROBES
from evaluation.questions import load_questions


def test_every_benchmark_part_labels_its_data_and_what_was_tuned_on_it():
    assert set(DATA_LABELS) == set(PARTS)
    for part in ("context", "context-manual-qa", "retrieval"):
        label = DATA_LABELS[part]
        assert ("dev" in label or "test" in label) and ("tuned" in label or "chosen" in label), part
    assert "tuned on SciFact train" in DATA_LABELS["retrieval"] and "test" in DATA_LABELS["retrieval"]
    assert (
        "probe" in DATA_LABELS["unanswerable-probe"] and "nothing tuned" in DATA_LABELS["unanswerable-probe"]
    )
    answers = DATA_LABELS["answers"]
    assert "tune half" in answers and "report half" in answers and "plain" in answers


def test_the_probe_questions_are_unanswerable_questions_on_the_sample_pdfs():
    questions = load_questions(PROBES / "unanswerable.csv")
    assert len(questions) == 6 and not any(q.answerable for q in questions)
    samples = {"20071229X02007.pdf", "2013-annual-performance-report.pdf"}
    samples |= {"NCT06145295_Prot_SAP_000.pdf", "NCT06154122_Prot_000.pdf"}
    assert all(set(q.gold_docs) <= samples and q.answer for q in questions)
