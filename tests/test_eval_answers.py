"""`docfinder eval answers`: the judge's metrics on hand-made cases, and the whole run on a small dataset.

The judge is the deterministic fake LLM server (evaluation/doubles/fake_llm.py), reached through DSPy and
docfinder's adapter as a real judge would be: it says a statement is supported when every
term of it is in the context, that an item is relevant when it shares a word with the
question, and that a passage is useful when it shares a number or two words with the
reference answer.
"""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import dspy
import pytest

from evaluation.answers import evaluate_answers, simulated_feedback
from evaluation.answers_report import write_answers_report
from evaluation.doubles.fake_llm import FakeLLMServer
from evaluation.feedback_report import load_items
from evaluation.judge import (
    AnswerJudge,
    JudgeCase,
    citation_pairs,
    ranked_precision,
    statements,
)
from evaluation.overlap import OverlapScores, overlap_scores
from pipeline.errors import ConfigurationError
from server.models.llm import judge_lm_settings
from server.settings import load_settings
from tests.samples import write_sample_corpus

SALES = "Form 10-Q — Net sales\nTotal net sales were $81,797 million in the quarter ended July 1, 2023."
CASH = "Form 10-Q — Cash\nCash and cash equivalents totalled $28,408 million."
LEGAL = "Form 10-Q — Legal\nThe company is party to patent litigation in Europe."
QUESTION = "What were Apple's total net sales in the quarter?"
REFERENCE = "Total net sales for the quarter were $81,797 million."
FAITHFUL = "Total net sales were $81,797 million in the quarter [1]."
UNFAITHFUL = "Total net sales were $91,000 million in the quarter [1]."


def judge(case: JudgeCase, server: FakeLLMServer, **kwargs):
    settings = load_settings()
    with dspy.context(**judge_lm_settings(settings, server.url, "fake"), disable_history=True):
        return asyncio.run(AnswerJudge().ajudge(case, **kwargs))


def test_faithfulness_tells_a_faithful_answer_from_an_unfaithful_one():
    with FakeLLMServer() as server:
        faithful = judge(JudgeCase(QUESTION, FAITHFUL, [SALES, CASH]), server)
        unfaithful = judge(JudgeCase(QUESTION, UNFAITHFUL, [SALES, CASH]), server)
        half = judge(
            JudgeCase(QUESTION, f"{FAITHFUL} Net income was $19,881 million [2].", [SALES, CASH]), server
        )
    assert faithful.scores["faithfulness"] == 1.0 and unfaithful.scores["faithfulness"] == 0.0
    assert half.scores["faithfulness"] == 0.5
    assert faithful.verdicts["faithfulness"] == ["yes"] and unfaithful.verdicts["faithfulness"] == ["no"]


def test_citation_precision_checks_each_cited_passage_and_answer_relevancy_each_sentence():
    wrong_citation = "Total net sales were $81,797 million in the quarter [2]."
    off_topic = f"{FAITHFUL} The company is party to patent litigation in Europe [3]."
    with FakeLLMServer() as server:
        right = judge(JudgeCase(QUESTION, FAITHFUL, [SALES, CASH, LEGAL]), server)
        wrong = judge(JudgeCase(QUESTION, wrong_citation, [SALES, CASH, LEGAL]), server)
        rambling = judge(JudgeCase(QUESTION, off_topic, [SALES, CASH, LEGAL]), server)
    assert right.scores["citation_precision"] == 1.0
    # Faithful to the context as a whole, but the passage it cites does not say it.
    assert wrong.scores["faithfulness"] == 1.0 and wrong.scores["citation_precision"] == 0.0
    assert right.scores["answer_relevancy"] == 1.0 and rambling.scores["answer_relevancy"] == 0.5
    assert rambling.scores["citation_precision"] == 1.0


def test_context_metrics_tell_a_precise_context_from_a_noisy_one():
    with FakeLLMServer() as server:
        precise = judge(JudgeCase(QUESTION, FAITHFUL, [SALES], reference=REFERENCE), server)
        noisy = judge(JudgeCase(QUESTION, FAITHFUL, [LEGAL, CASH, SALES], reference=REFERENCE), server)
        missing = judge(JudgeCase(QUESTION, FAITHFUL, [LEGAL, CASH], reference=REFERENCE), server)
    assert precise.scores["contextual_relevancy"] == 1.0
    assert noisy.scores["contextual_relevancy"] == pytest.approx(1 / 3)
    assert precise.scores["contextual_precision"] == 1.0
    assert noisy.scores["contextual_precision"] == pytest.approx(1 / 3)  # the useful passage ranks third
    assert precise.scores["contextual_recall"] == 1.0 and missing.scores["contextual_recall"] == 0.0
    assert missing.scores["contextual_precision"] == 0.0


def test_the_judge_sees_the_gold_answer_only_for_contextual_precision_and_recall():
    with FakeLLMServer() as server:
        judge(JudgeCase(QUESTION, FAITHFUL, [SALES, CASH], reference=REFERENCE), server)
        prompts = server.prompts
    # One call per item: 2 passages × (relevancy, precision), 1 claim × (faithfulness, answer
    # relevancy, citation), 1 gold sentence (recall).
    assert len(prompts) == 8
    with_gold = [p for p in prompts if "for the quarter were" in p]
    precision = [p for p in prompts if "[[ ## reference_answer ## ]]" in p]
    recall = [p for p in prompts if f"[[ ## statement ## ]]\n{REFERENCE}" in p]
    assert len(precision) == 2 and len(recall) == 1 and with_gold == precision + recall
    faithfulness = [
        p for p in prompts if "[[ ## statement ## ]]\nTotal net sales were $81,797 million in" in p
    ]
    assert len(faithfulness) == 2 and not any("for the quarter were" in p for p in faithfulness)


def test_each_item_is_asked_alone_after_what_the_calls_share():
    with FakeLLMServer() as server:
        judge(JudgeCase(QUESTION, FAITHFUL, [LEGAL, CASH, SALES]), server, metrics=("contextual_relevancy",))
        prompts = server.prompts
    assert len(prompts) == 3
    shared = prompts[0][: prompts[0].index("[[ ## text ## ]]")]
    assert QUESTION in shared and all(p.startswith(shared) for p in prompts)  # llama.cpp reuses it


def test_without_a_gold_answer_or_an_answer_the_metrics_that_need_them_are_not_scored():
    with FakeLLMServer() as server:
        no_reference = judge(JudgeCase(QUESTION, FAITHFUL, [SALES]), server)
        refused = judge(
            JudgeCase(QUESTION, "I could not find anything.", [SALES], answered=False, reference=REFERENCE),
            server,
        )
    assert (
        no_reference.scores["contextual_recall"] is None
        and no_reference.scores["contextual_precision"] is None
    )
    assert refused.scores["faithfulness"] is None and refused.scores["answer_relevancy"] is None
    assert refused.scores["contextual_recall"] == 1.0


def test_a_judge_reply_that_is_neither_yes_nor_no_is_an_error_not_a_score():
    with FakeLLMServer(bad_verdicts=True) as server:
        judged = judge(
            JudgeCase(QUESTION, FAITHFUL, [SALES, CASH]), server, metrics=("contextual_relevancy",)
        )
    assert judged.scores["contextual_relevancy"] is None
    assert "contextual_relevancy" in judged.errors


def test_a_judge_endpoint_must_be_an_http_url():
    with pytest.raises(ConfigurationError, match="http"):
        judge_lm_settings(load_settings(), "file:///etc/passwd")


def test_ranked_precision_statements_and_citation_pairs():
    assert ranked_precision(["yes", "no", "yes"]) == pytest.approx((1 + 2 / 3) / 2)
    assert ranked_precision(["no", "no"]) == 0.0
    assert statements("Sales rose 5% [1]. Yes. Costs fell to $3 million [2][3].") == [
        "Sales rose 5%.",
        "Costs fell to $3 million.",
    ]
    assert citation_pairs("Sales rose [1]. Costs fell [2][9].", passages=3) == [
        ("Sales rose.", 1),
        ("Costs fell.", 2),
    ]


QUESTIONS = [
    ("How many channels does the spectrometer support?", "instruments.*", "Up to 7680 channels.", "numeric"),
    ("When is the proposal deadline?", "observing.*", "The deadline is 15 April.", "date"),
    (
        "How many co-investigators may a proposal name?",
        "observing.*",
        "At most twelve co-investigators.",
        "numeric",
    ),
]


def small_dataset(root: Path) -> Path:
    write_sample_corpus(root / "docs")
    with open(root / "questions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Question", "Source Docs", "Answer", "Question Type"])
        writer.writerows(QUESTIONS)
    return root


def test_eval_answers_scores_every_question_writes_rows_a_report_and_simulated_feedback(tmp_path):
    dataset = small_dataset(tmp_path / "handbook-qa")
    rows_path = tmp_path / "rows.jsonl"
    seen = []
    with FakeLLMServer() as server:
        settings = load_settings(llm__api_base=server.url, llm__model="fake")
        summary = evaluate_answers(
            dataset,
            settings,
            questions_file="questions.csv",
            rows_path=rows_path,
            cache_dir=tmp_path / "cache",
            on_row=seen.append,
        )
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    assert len(rows) == len(seen) == 3 and summary["questions"] == 3
    metrics = summary["metrics"]
    for name in (
        "faithfulness",
        "answer_relevancy",
        "contextual_precision",
        "contextual_recall",
        "contextual_relevancy",
        "citation_precision",
        "gold_figure_recall",
        "gold_document_cited",
        "answer_precision",
        "answer_recall",
        "answer_f_score",
        "answer_meteor",
    ):
        assert name in metrics
    assert metrics["answer_meteor"]["scored"] == 3 and 0 < metrics["answer_meteor"]["mean"] < 1
    # The fake answers by quoting its first passage and citing it: faithful, cited precisely.
    assert metrics["faithfulness"]["mean"] == 1.0 and metrics["citation_precision"]["mean"] == 1.0
    assert metrics["gold_figure_recall"]["scored"] == 2  # "7680" and "15" (April) are figures
    assert set(summary["by_question_type"]) == {"numeric", "date"}
    assert summary["outcomes"] == {"answered": 3} and summary["judge_errors"] == 0
    assert all(row["context"] and row["scores"] for row in rows)

    report = write_answers_report(summary, rows, tmp_path / "report", "html")
    assert (tmp_path / "report" / "metric_distributions.png").stat().st_size > 1000
    assert (tmp_path / "report" / "by_question_type.png").is_file()
    assert "Worst answers" in report.read_text() and "<table>" in report.read_text()

    feedback = tmp_path / "feedback.jsonl"
    feedback.write_text("".join(json.dumps(i) + "\n" for i in simulated_feedback(rows, {})))
    items = load_items(feedback)
    assert len(items) == 3 and all(i["platform"] == "simulated" and i["sources"] for i in items)


def test_eval_answers_rejudges_the_rows_of_an_earlier_run(tmp_path):
    dataset = small_dataset(tmp_path / "handbook-qa")
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    with FakeLLMServer() as server:
        settings = load_settings(llm__api_base=server.url, llm__model="fake")
        answered = evaluate_answers(
            dataset, settings, questions_file="questions.csv", rows_path=first, cache_dir=tmp_path / "c"
        )
        asked = server.prompts.copy()
        rejudged = evaluate_answers(
            dataset, settings, questions_file="questions.csv", answers_file=first, rows_path=second
        )
        judged_only = server.prompts[len(asked) :]
    assert rejudged["metrics"] == answered["metrics"]
    assert not any("[[ ## message ## ]]" in p for p in judged_only)  # nobody asked the agent again


@pytest.mark.parametrize(
    ("answer", "gold", "meteor"),
    [  # NLTK 3.9's single_meteor_score with its WordNet stage off gives the same, to 4 places
        ("the cat sat on the mat", "the cat sat on the mat", 0.9977),
        ("on the mat sat the cat", "the cat sat on the mat", 0.5),
        (
            "It is a guide to action which ensures that the military always obeys the commands of the party",
            "It is a guide to action that ensures that the military will forever heed Party commands",
            0.6944,
        ),
        (
            "Revenue rose 5 percent to 81 billion dollars [2].",
            "total revenue increased 5 percent to 81 billion",
            0.7361,
        ),
    ],
)
def test_cos_mix_classical_metrics_match_the_reference_meteor(answer, gold, meteor):
    assert overlap_scores(answer, gold).meteor == pytest.approx(meteor, abs=5e-5)
    assert overlap_scores("", gold) == overlap_scores(answer, "") == OverlapScores(0.0, 0.0, 0.0, 0.0)


def test_overlap_precision_recall_and_f_score_count_repeated_words_once_each():
    cited = overlap_scores("Revenue rose 5 percent to 81 billion [2].", "total revenue rose 5 percent")
    assert (cited.precision, cited.recall) == (4 / 7, 4 / 5), "the citation marker is not a word"
    scores = overlap_scores("sales sales sales rose", "sales rose sharply")
    assert scores.precision == pytest.approx(2 / 4) and scores.recall == pytest.approx(2 / 3)
    assert scores.f_score == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
