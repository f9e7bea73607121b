"""The evaluation wing's commands: ``docfinder eval retrieval|context|answers|feedback``,
``docfinder optimize`` and ``docfinder feedback report|export``.

They plug into the ``docfinder`` command line through the ``docfinder.commands`` entry point
(pyproject.toml), so the serving CLI never imports the wing. Each command's handler is set as
the parser default ``run`` and called with the parsed arguments and the settings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from evaluation.cli_output import print_answers_summary, print_context_report, print_eval_report
from evaluation.extra import require
from pipeline.retrieval.search import SEARCH_MODES
from server.doors.cli_output import RichIngestProgress
from server.settings import Settings

EXIT_ERROR = 1

err = Console(stderr=True)


def add_commands(commands: Any) -> None:
    """Add the wing's commands to ``docfinder``'s sub-command parsers."""
    evaluate = commands.add_parser("eval", help="measure quality").add_subparsers(
        dest="eval_command", required=True
    )
    retrieval = evaluate.add_parser(
        "retrieval", help="nDCG, recall, MRR and latency on a BEIR-format dataset"
    )
    retrieval.add_argument(
        "--dataset", type=Path, required=True, help="folder with corpus.jsonl, queries.jsonl, qrels/"
    )
    retrieval.add_argument("--split", default="test", help="qrels split to report (tuning always uses train)")
    retrieval.add_argument(
        "--mode",
        action="append",
        choices=SEARCH_MODES,
        dest="modes",
        help="rows to run (repeatable; default all)",
    )
    retrieval.add_argument("--reranker", type=Path, help="cross-encoder folder: adds the rerank rows")
    retrieval.add_argument(
        "--glossary", type=Path, help="glossary for the expansion rows (default: corpus acronyms)"
    )
    retrieval.add_argument(
        "--cache", type=Path, default=Path(".docfinder/eval"), help="where corpus indexes are cached"
    )
    retrieval.add_argument(
        "--no-tune", action="store_true", help="use the settings as they are, no tuning on train"
    )
    retrieval.add_argument("--max-queries", type=int, help="evaluate only the first N queries (quick checks)")
    retrieval.add_argument("--json", action="store_true", help="print the full report as JSON")
    context = evaluate.add_parser(
        "context", help="gold-document and answer-figure recall of each context strategy"
    )
    _question_set_arguments(context)
    context.add_argument(
        "--budget", type=int, action="append", dest="budgets", help="token budget (repeatable)"
    )
    context.add_argument(
        "--cache", type=Path, default=Path(".docfinder/eval"), help="where the index is cached"
    )
    context.add_argument("--json", action="store_true", help="print the full report as JSON")
    answers = evaluate.add_parser(
        "answers", help="the agent's answers judged: COS-Mix's five metrics, citations, gold figures"
    )
    _question_set_arguments(answers)
    answers.add_argument("--limit", type=int, default=0, help="N questions spread evenly over the file")
    answers.add_argument("--answers", type=Path, help="judge the rows of an earlier run instead of answering")
    answers.add_argument("--judge-api-base", help="OpenAI-compatible judge endpoint (default: the LLM)")
    answers.add_argument("--judge-model", help="the judge endpoint's model (default: setting llm.model)")
    answers.add_argument(
        "--rows", type=Path, default=Path("bench-results/eval_answers.jsonl"), help="per-question JSONL"
    )
    answers.add_argument("--report", type=Path, help="folder for a report with charts")
    answers.add_argument("--format", choices=("md", "html"), default="md", help="the report's format")
    answers.add_argument(
        "--simulate-feedback",
        type=Path,
        help="also write feedback items rated by the gold measures (for trying `docfinder optimize`)",
    )
    answers.add_argument(
        "--cache", type=Path, default=Path(".docfinder/eval"), help="where the index is cached"
    )
    answers.add_argument("--json", action="store_true", help="print the summary as JSON")
    replay = evaluate.add_parser(
        "feedback", help="do good answers' sources still rank in the top k? (an exported feedback set)"
    )
    replay.add_argument("--items", type=Path, required=True, help="JSONL from `docfinder feedback export`")
    replay.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    replay.add_argument("--k", type=int, default=10)
    retrieval.set_defaults(run=_eval_retrieval)
    context.set_defaults(run=_eval_context)
    answers.set_defaults(run=_eval_answers)
    replay.set_defaults(run=_in_loop(_eval_feedback))

    optimize = commands.add_parser(
        "optimize", help="compile a better answering program from rated answers (DSPy)"
    )
    optimize.add_argument(
        "--feedback", type=Path, required=True, help="JSONL from `docfinder feedback export`"
    )
    optimize.add_argument("--questions", type=Path, help="question CSV whose gold answers are references")
    optimize.add_argument("--out", type=Path, required=True, help="the program file to write (JSON)")
    optimize.add_argument("--optimizer", choices=("bootstrap", "mipro"), default="bootstrap")
    optimize.add_argument("--demos", type=int, default=1, help="demos per signature (each lengthens prompts)")
    optimize.add_argument("--validation-share", type=float, default=0.3)
    optimize.add_argument("--seed", type=int, default=0)
    optimize.add_argument("--judge-api-base", help="OpenAI-compatible judge endpoint (default: the LLM)")
    optimize.add_argument("--judge-model", help="the judge endpoint's model (default: setting llm.model)")
    optimize.add_argument("--index", type=Path, help="index directory (default: setting index.dir)")
    optimize.set_defaults(run=_in_loop(_optimize))

    feedback = commands.add_parser("feedback", help="what people said about answers").add_subparsers(
        dest="feedback_command", required=True
    )
    report = feedback.add_parser("report", help="ratings, labels, by domain and collection, worst questions")
    report.add_argument("--since", type=_date, help="only feedback from this date on (YYYY-MM-DD)")
    report.add_argument("--format", choices=("md", "html"), default="md")
    report.add_argument(
        "--out", type=Path, default=Path("feedback-report"), help="folder for report and charts"
    )
    export = feedback.add_parser("export", help="every judgement as JSONL: an evaluation set")
    export.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    export.add_argument("--since", type=_date, help="only feedback from this date on (YYYY-MM-DD)")
    report.set_defaults(run=_feedback)
    export.set_defaults(run=_feedback)


def _question_set_arguments(parser: argparse.ArgumentParser) -> None:
    """The dataset folder, its question CSV and its documents, as context and answers take them."""
    parser.add_argument("--dataset", type=Path, required=True, help="folder with docs/ and the question CSV")
    parser.add_argument("--questions", default="qna_dev.csv", help="question CSV inside the dataset folder")
    parser.add_argument(
        "--docs",
        type=Path,
        help="the documents (default: the dataset's docs/ or the folder its README names)",
    )


def _in_loop(handler: Callable[[argparse.Namespace, Settings], Awaitable[int]]) -> Callable[..., int]:
    def run(args: argparse.Namespace, settings: Settings) -> int:
        return asyncio.run(handler(args, settings))

    return run


def _date(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from exc


def _feedback(args: argparse.Namespace, settings: Settings) -> int:
    from evaluation.feedback_report import export_items, render_charts, render_report, summarise
    from server.stores.opening import open_feedback_store

    with open_feedback_store(settings) as store:
        records = store.records(since=args.since)
    if args.feedback_command == "export":
        count = export_items(records, args.out)
        err.print(f"wrote {count} judgements to {args.out}")
        return 0
    summary = summarise(records)
    charts = render_charts(summary, args.out)
    path = args.out / f"report.{args.format}"
    path.write_text(render_report(summary, charts, args.format), encoding="utf-8")
    err.print(f"{summary.records} judgements; report: {path}")
    return 0


async def _eval_feedback(args: argparse.Namespace, settings: Settings) -> int:
    from evaluation.feedback import evaluate_feedback
    from server.service import open_service

    async with open_service(settings) as service:
        report = await evaluate_feedback(service, args.items, k=args.k)
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


def _eval_context(args: argparse.Namespace, settings: Settings) -> int:
    from evaluation.context import BUDGETS, evaluate_context

    with RichIngestProgress(err, enabled=err.is_terminal) as progress:
        report = evaluate_context(
            args.dataset,
            settings,
            questions_file=args.questions,
            docs=args.docs,
            budgets=args.budgets or BUDGETS,
            cache_dir=args.cache,
            progress=progress,
        )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_context_report(Console(), report)
    return 0


def _eval_answers(args: argparse.Namespace, settings: Settings) -> int:
    from evaluation.answers import evaluate_answers, simulated_feedback
    from evaluation.answers_report import write_answers_report

    if args.report is not None:  # charts are drawn after every question is answered: check first
        require("docfinder eval answers --report", "matplotlib")
    rows: list[dict[str, Any]] = []

    def progress(row: dict[str, Any]) -> None:
        rows.append(row)
        scores = ", ".join(f"{k} {v:.2f}" for k, v in row["scores"].items() if v is not None)
        err.print(
            f"question {len(rows)}: {row['outcome']} in {row.get('seconds') or 0:.0f} s; {escape(scores)}"
        )

    summary = evaluate_answers(
        args.dataset,
        settings,
        questions_file=args.questions,
        docs=args.docs,
        limit=args.limit,
        answers_file=args.answers,
        judge_api_base=args.judge_api_base,
        judge_model=args.judge_model,
        rows_path=args.rows,
        cache_dir=args.cache,
        on_row=progress,
    )
    if args.report is not None:
        err.print(f"report: {write_answers_report(summary, rows, args.report, args.format)}")
    if args.simulate_feedback is not None:
        items = simulated_feedback(rows, settings.index.source_url_prefixes)
        args.simulate_feedback.parent.mkdir(parents=True, exist_ok=True)
        args.simulate_feedback.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
        err.print(f"{len(items)} simulated feedback items: {args.simulate_feedback}")
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_answers_summary(Console(), summary)
    return 0


async def _optimize(args: argparse.Namespace, settings: Settings) -> int:
    from evaluation.optimize import optimize_program
    from evaluation.questions import load_questions
    from server.models.llm import judge_lm_settings
    from server.service import open_service

    questions = load_questions(args.questions) if args.questions else []
    async with open_service(settings, start_llm=True) as service:
        judged_by = (
            judge_lm_settings(settings, args.judge_api_base, args.judge_model)
            if args.judge_api_base
            else await service.dspy_settings()
        )
        with err.status("optimising: answering the validation questions, then compiling"):
            report = await optimize_program(
                service,
                args.feedback,
                args.out,
                judged_by=judged_by,
                judge_is_server=bool(args.judge_api_base or settings.llm.api_base),
                questions=questions,
                questions_path=args.questions,
                optimizer=args.optimizer,
                demos=args.demos,
                validation_share=args.validation_share,
                seed=args.seed,
            )
    print(json.dumps(report, indent=2))
    if not report["saved"]:
        err.print(f"[yellow]not saved:[/] {report['reason']}")
        return EXIT_ERROR
    return 0


def _eval_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    from evaluation.retrieval import evaluate_retrieval

    with RichIngestProgress(err, enabled=err.is_terminal) as progress:
        report = evaluate_retrieval(
            args.dataset,
            args.split,
            settings,
            modes=args.modes or SEARCH_MODES,
            reranker_dir=args.reranker,
            glossary_path=args.glossary,
            cache_dir=args.cache,
            tune=not args.no_tune,
            progress=progress,
            max_queries=args.max_queries,
        )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_eval_report(Console(), report)
    return 0
