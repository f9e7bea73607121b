"""`docfinder eval context` and the figure rules, on a small question set written by the test."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pipeline.figures import figures, stated_figures, unstated_figures, written_forms
from server.doors.cli import main


def test_inline_source_mentions_do_not_hide_the_figures_after_them():
    answer = (
        "- Q1 sales were $82,959 (SOURCE: 2022 Q3 AAPL.pdf)\n"
        "- Q2 sales were $117,154 million.\nSOURCE(S): a.pdf"
    )
    assert figures(answer) == {"82959", "117154"}


def test_figures_ignore_dates_years_list_markers_and_the_source_line():
    answer = (
        "Net sales were:\n1. $81,797 million for the quarter ended July 1, 2023\n"
        "2. 82,959 in 2022, a change of (1)% and 12.5%\nSOURCE(S): 2023 Q3 AAPL.pdf 99,999"
    )
    assert figures(answer) == {"81797", "82959", "12.5"}


def test_names_long_list_markers_and_amounts_like_years_follow_the_rules():
    # "10-Q" and "COVID-19" are names, not figures: a page footer saying "Form 10-Q" states no gold figure.
    assert figures("The Form 10-Q for the COVID-19 period reports 12.5% growth.") == {"12.5"}
    assert figures("100. Dependence on suppliers\n101. Competition\n") == set(), "list markers"
    assert figures("Capital expenditure was $2,000 million in 2023, against 2,023 units.") == {"2000", "2023"}
    assert figures("a $1,999 fee (2019)") == {"1999"}, "an amount is kept, a bare year dropped"


def test_a_figure_is_stated_by_its_exact_thousandfold_form_and_nothing_rounder():
    table = figures("| Inventories | 13,224 | 1,450 | 12.5 |")
    assert stated_figures({"13.224", "1.450"}, table) == {"13.224", "1.450"}
    assert stated_figures(figures("$13.224 billion"), figures("13,224")) == {"13.224"}
    assert stated_figures({"1.45", "13.22", "132.24", "12500"}, table) == set()
    assert stated_figures({"0.311"}, figures("311")) == {"0.311"}


def test_an_answers_figure_is_unstated_when_computed_rounded_or_absent_but_not_a_form_name():
    evidence = "Services — Three Months Ended July 1, 2023: $21,213; Total net sales: $81,797"
    assert unstated_figures("Services were $21,213 million of $81.797 billion [1].", evidence) == set()
    assert unstated_figures("Services were 25.93% of net sales [1].", evidence) == {"25.93"}, "computed"
    assert unstated_figures("Net sales were $81.8 billion [1].", evidence) == {"81.8"}, "rounded"
    assert unstated_figures("The 10-Q for Q3 2023 reports services [1].", evidence) == set(), "a form's name"


def test_unstated_figures_are_named_the_way_the_answer_writes_them():
    answer = "Costs were $(1,595) million, 25.93% of sales, and $81.8 billion; again $81.8."
    assert written_forms(answer, {"81.8", "1595", "25.93"}) == ["1,595", "25.93%", "$81.8"]


def write_dataset(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "acme-q1.md").write_text(
        "# Acme Q1\n\n## Income statement\n\n| Item | Q1 2024 |\n| --- | --- |\n| Net sales | 12,345 |\n"
        "| Net income | 2,468 |\n\n## Outlook\n\nAcme expects growth in its cloud segment.\n"
    )
    (docs / "globex-q1.md").write_text(
        "# Globex Q1\n\n## Results\n\nGlobex revenue was 98,765 in the first quarter, with 1,111 employees.\n"
    )
    with open(root / "questions.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer"])
        writer.writerows(
            [
                [0, "What were Acme's net sales?", "*acme*", "Single-Doc", "Table", "12,345.\nSOURCE(S): x"],
                [1, "What was Globex revenue?", "*globex*", "Single-Doc", "Text", "98,765 with 1,111 staff"],
            ]
        )
    return root


def test_eval_context_reports_every_strategy_and_budget(tmp_path, capsys):
    dataset = write_dataset(tmp_path / "mini")
    args = ["eval", "context", "--dataset", str(dataset), "--questions", "questions.csv"]
    assert (
        main([*args, "--budget", "64", "--budget", "400", "--cache", str(tmp_path / "cache"), "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["questions"] == 2 and report["index"]["documents"] == 2
    assert {r["question_type"] for r in report["runs"]} == {"all"}, "the result: every question"
    runs = {(r["strategy"], r["budget"]): r for r in report["runs"]}
    strategies = ["topk", "mmr-0.7", "mmr-0.5", "fps-0.5", "sentences+cluster", "evidence"]
    assert set(runs) == {(s, b) for s in strategies for b in (64, 400)}
    # The breakdown per type is kept apart, so that no one reads a type's row as the result.
    assert {r["question_type"] for r in report["runs_by_question_type"]} == {"Single-Doc"}
    for strategy in strategies:  # with room for everything, every strategy finds every gold figure
        assert runs[(strategy, 400)]["gold_doc_recall"] == 1.0
        assert runs[(strategy, 400)]["answer_figure_recall"] == 1.0
        assert runs[(strategy, 400)]["answer_figure_recall_micro"] == 1.0
        assert runs[(strategy, 400)]["select_ms_p50"] > 0
    # Micro counts figures, macro questions: 3 gold figures in 2 questions.
    assert runs[("topk", 400)]["questions_with_figures"] == 2 and runs[("topk", 400)]["gold_figures"] == 3


def test_search_context_flags_select_order_and_show_in_the_trace(sample_corpus, tmp_path, capsys):
    index = str(tmp_path / "index")
    assert main(["ingest", str(sample_corpus), "--index", index]) == 0
    capsys.readouterr()
    for selection, order in [
        ("mmr", "pingpong"),
        ("fps", "document"),
        ("sentences", "cluster"),
        ("topk", "score"),
    ]:
        command = ["search", "proposal deadline", "--index", index, "--select", selection, "--order", order]
        assert main([*command, "--budget", "120", "--json", "--trace"]) == 0
        result = json.loads(capsys.readouterr().out)
        steps = {step["step"]: step for step in result["trace"]}
        assert steps["select_context"]["strategy"] == selection
        assert steps["order_context"]["order"] == order
        assert 0 < result["context"]["tokens"] <= 120
        assert all(piece["source"] for piece in result["context"]["pieces"])
    # The default selection (evidence) would ignore the cluster order: refused, not dropped.
    assert main(["search", "proposal deadline", "--index", index, "--order", "cluster"]) != 0
    assert "not applied to the evidence selection" in " ".join(capsys.readouterr().err.split())


def test_the_answers_benchmark_scores_the_agent_beside_the_plain_baseline(tmp_path):
    import dspy
    from dspy.utils import DummyLM

    from evaluation.benchmarks.answers import bench_answers
    from server.settings import load_settings

    dataset = write_dataset(tmp_path / "mini")
    script = [  # per question: the agent's generate and grounding check, then the plain baseline's one call
        {"answer": "Net sales were 12,345 [1].", "sources": [1]},
        {"supported": "yes"},
        {"answer": "Acme's net sales were 12,345 [1]."},
        {"answer": "Globex revenue was 98,765 [1].", "sources": [1]},
        {"supported": "yes"},
        {"answer": "The passages do not say."},
    ]
    model = DummyLM(script, adapter=dspy.JSONAdapter())
    report = bench_answers(
        dataset, load_settings(), cache_dir=tmp_path / "cache", questions_file="questions.csv", lm=model
    )
    agent, plain = report["agent"], report["plain"]
    assert (
        report["questions"] == 2 and agent["answered"] == 1.0 and agent["llm_calls"] == {"p50": 2, "max": 2}
    )
    # The agent's answer to question 2 states one of its two figures and quotes the sentence with
    # the other: both are in the text the user reads. The baseline refused question 2.
    assert agent["figure_recall_in_answer_text"] == 1.0 and plain["figure_recall_in_answer_text"] == 0.5
    assert agent["answerable_refused"] == "0/2" and plain["answerable_refused"] == "1/2"
    assert agent["gold_document_cited"] == 1.0 and agent["verified_with_unstated_figure"] == 0
    rows = [
        json.loads(line) for line in (Path("bench-results") / "answers_mini.jsonl").read_text().splitlines()
    ]
    agent_rows = [row for row in rows if row["system"] == "agent"]
    assert len(agent_rows) == 2 and all(0 < row["first_evidence_s"] < row["seconds"] for row in agent_rows), (
        "each question's evidence is shown before its answer"
    )
    assert [row["drafts"] for row in agent_rows] == [
        ["Net sales were 12,345 [1]."],
        ["Globex revenue was 98,765 [1]."],
    ], "the model's drafts are kept, to replay later code on them"
    assert plain["llm_calls"] == {"p50": 1, "max": 1} and plain["first_evidence_s"] is None
    assert 0 < plain["answer_meteor"] < agent["answer_meteor"] <= 1, "the refusal shares fewer gold words"


def test_a_runs_drafts_replayed_through_the_answer_code_give_the_runs_answers(tmp_path, monkeypatch):
    import dspy
    from dspy.utils import DummyLM

    from evaluation.benchmarks.answers import bench_answers
    from evaluation.benchmarks.replay import replay_run
    from pipeline.errors import InvalidRequestError
    from server.settings import load_settings

    monkeypatch.chdir(tmp_path)
    dataset = write_dataset(tmp_path / "mini")
    questions = dataset / "questions.csv"  # the service strips a question (as a file may not)
    questions.write_text(questions.read_text().replace("Globex revenue?", "Globex revenue? "))
    script = [
        {"answer": "Net sales were 12,345 [1].", "sources": [1]},
        {"supported": "yes"},
        {"answer": "Globex revenue was 98,765 [1].", "sources": [1]},
        {"supported": "yes"},
    ]
    cache = tmp_path / "cache"
    model = DummyLM(script, adapter=dspy.JSONAdapter())
    bench_answers(
        dataset,
        load_settings(),
        cache_dir=cache,
        questions_file="questions.csv",
        systems=("agent",),
        lm=model,
    )
    rows = [json.loads(line) for line in (tmp_path / "bench-results" / "answers_mini.jsonl").open()]
    replayed_rows = tmp_path / "replayed.jsonl"
    report = replay_run(
        dataset,
        rows,
        load_settings(),
        cache_dir=cache,
        questions_file="questions.csv",
        rows_file=replayed_rows,
    )
    assert report["compared"] == 2
    assert (
        report["replayed"]["figure_recall_in_answer_text"] == report["as_run"]["figure_recall_in_answer_text"]
    )
    replayed = {row["question"]: row for row in map(json.loads, replayed_rows.open())}
    assert all(replayed[row["question"]]["answer"] == row["answer"] for row in rows), (
        "same code, same answers"
    )

    # A first draft the run's checks refused would pass here: it is replayed, not compared.
    rows[1]["steps"] = [*rows[1]["steps"], "generate"]
    rows[1]["drafts"][0] = "Globex revenue was 55,555 [1]."  # a figure no passage states
    report = replay_run(dataset, rows, load_settings(), cache_dir=cache, questions_file="questions.csv")
    assert report["questions"] == 2 and report["compared"] == 1

    rows[1]["drafts"] = []  # the model was never asked (no passage found, the LLM down)
    assert (
        replay_run(dataset, rows, load_settings(), cache_dir=cache, questions_file="questions.csv")[
            "questions"
        ]
        == 1
    )
    del rows[0]["drafts"]
    with pytest.raises(InvalidRequestError, match="no drafts"):
        replay_run(dataset, rows, load_settings(), cache_dir=cache, questions_file="questions.csv")


def test_a_run_replayed_as_run_gives_its_answers_after_failed_checks_too(tmp_path, monkeypatch):
    import dspy
    from dspy.utils import DummyLM

    from evaluation.benchmarks.answers import bench_answers
    from evaluation.benchmarks.replay import replay_run
    from server.settings import load_settings

    monkeypatch.chdir(tmp_path)
    dataset = write_dataset(tmp_path / "mini")
    script = [  # each question's first draft is refused by the grounding check
        {"answer": "Net sales were 12,345 [1].", "sources": [1]},
        {"supported": "no"},
        {"answer": "Acme's net sales were 12,345 [1].", "sources": [1]},
        {"supported": "yes"},
        {"answer": "Globex's revenue totalled 98,765 [1].", "sources": [1]},
        {"supported": "no"},
        {"answer": "Yes, Globex reported revenue [1].", "sources": [1]},  # says nothing: no check
    ]
    cache = tmp_path / "cache"
    model = DummyLM(script, adapter=dspy.JSONAdapter())
    run = {"cache_dir": cache, "questions_file": "questions.csv", "systems": ("agent",), "lm": model}
    bench_answers(dataset, load_settings(), **run)
    rows = [json.loads(line) for line in (tmp_path / "bench-results" / "answers_mini.jsonl").open()]
    assert [row["outcome"] for row in rows] == ["answered", "unverified"]

    replayed_rows = tmp_path / "replayed.jsonl"
    options = {"cache_dir": cache, "questions_file": "questions.csv", "rows_file": replayed_rows}
    first_drafts = replay_run(dataset, rows, load_settings(), **options)
    assert first_drafts["compared"] == 0, "no first draft passed in the run"
    replayed = [json.loads(line) for line in replayed_rows.open()]
    assert replayed[0]["answer"] != rows[0]["answer"], "the first draft, passed"

    as_run = replay_run(dataset, rows, load_settings(), as_run=True, **options)
    assert as_run["compared"] == 2 and as_run["replayed"]["outcomes"] == {"answered": 1, "unverified": 1}
    replayed = [json.loads(line) for line in replayed_rows.open()]
    assert [row["answer"] for row in replayed] == [row["answer"] for row in rows], "every answer as run"
