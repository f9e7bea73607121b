"""`docfinder eval context` and the figure rules, on a small question set written by the test."""

from __future__ import annotations

import csv
import json
from pathlib import Path

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
    strategies = ["topk", "mmr-0.7", "mmr-0.5", "fps-0.5", "sentences+cluster", "evidence", "blend"]
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


def test_the_dev_sets_benchmark_scores_the_agent_beside_the_plain_call_half_by_half(tmp_path, monkeypatch):
    import dspy
    from dspy.utils import DummyLM

    from evaluation.benchmarks.dev_sets import DevSet, bench_dev_sets
    from server.settings import load_settings

    monkeypatch.chdir(tmp_path)
    dataset = write_dataset(tmp_path / "mini")
    mini = DevSet("mini", dataset / "questions.csv", dataset / "docs", "figures")
    script = [  # per question: the agent's one call, then the plain call
        {"answer": "Net sales were 12,345 [1]."},
        {"answer": "Acme's net sales were 12,345 [1]."},
        {"answer": "Globex revenue was 98,765 [1]. It had 1,111 staff in 7,777 shops [1]."},
        {"answer": "The passages do not say."},
    ]
    model = DummyLM(script, adapter=dspy.JSONAdapter())
    report = bench_dev_sets(
        load_settings(), [mini], lm=model, cache_dir=tmp_path / "cache", out=tmp_path / "out"
    )
    tune, held = report["per_set"]["mini"]["tune"], report["per_set"]["mini"]["report"]
    assert tune["agent"]["questions"] == held["agent"]["questions"] == 1, "row 0 tunes, row 1 reports"
    # Question 2's answer states one of its two figures; the quote under it holds the other.
    assert held["agent"]["own"] == 0.5 and held["agent"]["whole"] == 1.0 and held["plain"]["own"] == 0.0
    # Its draft stated both: the sentence with the shops no passage counts was dropped, and its staff.
    assert held["agent"]["draft"] == 1.0 and held["plain"]["draft"] == 0.0
    assert report["macro"]["report"]["agent"]["draft"] == 1.0
    assert held["agent"]["answerable_refused"] == [0, 1] and held["plain"]["answerable_refused"] == [1, 1]
    assert held["agent"]["gold_cited"] == 1.0 and held["agent"]["llm_calls"] == {"p50": 1, "max": 1}
    assert report["macro"]["report"]["agent"]["own"] == 0.5
    assert report["targets"]["mini/report"]["whole_plain_plus_010"] is True
    rows = [json.loads(line) for line in (tmp_path / "out" / "answers_mini.jsonl").read_text().splitlines()]
    agent_rows = [row for row in rows if row["system"] == "agent"]
    assert all(0 < row["first_evidence_s"] < row["seconds"] for row in agent_rows), (
        "evidence before the answer"
    )
    assert [row["drafts"] for row in agent_rows] == [
        ["Net sales were 12,345 [1]."],
        ["Globex revenue was 98,765 [1]. It had 1,111 staff in 7,777 shops [1]."],
    ]
    assert all(row["unstated_figures"] == [] for row in rows)


def test_a_plain_call_that_times_out_is_that_questions_failure_not_the_runs_end(tmp_path, monkeypatch):
    import dspy
    from dspy.utils import DummyLM
    from dspy.utils.exceptions import LMTimeoutError

    from evaluation.benchmarks.dev_sets import DevSet, bench_dev_sets
    from server.settings import load_settings

    class FirstCallTimesOut(DummyLM):
        """The server gives up on the first call (as a busy llama.cpp does), then answers."""

        calls = 0

        async def aforward(self, prompt=None, messages=None, **kwargs):
            FirstCallTimesOut.calls += 1
            if FirstCallTimesOut.calls == 1:
                raise LMTimeoutError("timed out", model="embedded")
            return await super().aforward(prompt=prompt, messages=messages, **kwargs)

    monkeypatch.chdir(tmp_path)
    dataset = write_dataset(tmp_path / "mini")
    mini = DevSet("mini", dataset / "questions.csv", dataset / "docs", "figures")
    model = FirstCallTimesOut([{"answer": "Globex revenue was 98,765 [1]."}], adapter=dspy.JSONAdapter())
    bench_dev_sets(
        load_settings(), [mini], systems=("plain",), lm=model, cache_dir=tmp_path / "cache", out=tmp_path
    )
    rows = [json.loads(line) for line in (tmp_path / "answers_mini.jsonl").read_text().splitlines()]
    assert [row["outcome"] for row in rows] == ["llm_unavailable", "answered"]
    assert rows[0]["answer"] == "" and rows[0]["own"] == 0 and rows[1]["own"] == 1
    assert [row["refused"] for row in rows] == [True, False], "a failed call answers nothing"


def test_a_runs_drafts_replayed_through_todays_code_give_the_runs_answers(tmp_path, monkeypatch):
    import dspy
    from dspy.utils import DummyLM

    from evaluation.benchmarks.dev_sets import DevSet, bench_dev_sets
    from evaluation.benchmarks.replay import replay_rows
    from server.settings import load_settings

    monkeypatch.chdir(tmp_path)
    dataset = write_dataset(tmp_path / "mini")
    mini = DevSet("mini", dataset / "questions.csv", dataset / "docs", "figures")
    cut = "Globex revenue was 98,765 [1]. It grew by"  # the second ran to the token limit
    script = [{"answer": "Net sales were 12,345 [1]."}, {"answer": cut}]
    model = DummyLM(script, adapter=dspy.JSONAdapter())
    bench_dev_sets(
        load_settings(), [mini], systems=("agent",), lm=model, cache_dir=tmp_path / "cache", out=tmp_path
    )
    run = [json.loads(line) for line in (tmp_path / "answers_mini.jsonl").read_text().splitlines()]
    assert [r["drafts_cut"] for r in run] == [[False], [True]]
    replayed = replay_rows(run, load_settings(), cache_dir=tmp_path / "cache", sets=[mini])
    assert [r["answer"] for r in replayed] == [r["answer"] for r in run], "today's code, the run's drafts"
    assert [r["whole"] for r in replayed] == [r["whole"] for r in run]
    assert [r["drafts"] for r in replayed] == [r["drafts"] for r in run]
    assert [r["drafts_cut"] for r in replayed] == [[False], [True]], "a cut draft is replayed cut"
    # A draft the run read whole though it ends without a full stop is replayed whole.
    unstopped = "Net sales were 12,345 [1], as the filing shows"
    run[0] = {**run[0], "drafts": [unstopped], "drafts_cut": [False]}
    again = replay_rows(run[:1], load_settings(), cache_dir=tmp_path / "cache", sets=[mini])
    assert again[0]["drafts_cut"] == [False] and "as the filing shows" in again[0]["answer"]
