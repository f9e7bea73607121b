"""``docfinder optimize``: reaction-labelled answers in, a better answering program out, or none.

The loop ESOFinder's authors collected feedback for, closed with DSPy:

1. An exported feedback set (``docfinder feedback export``) becomes examples, one per
   judged question. Its reference is the gold answer of ``--questions`` when the question is
   there, else the answer people judged good (rating ≥ 4, or a "correct" label) when they did
   so at least as often as bad; its reference sources, the good answer's sources. An answer
   judged bad (rating ≤ 2, or another label) more often than good is the example's rejected
   answer. Rating 3 is neither.
2. A seeded split: a share of the examples with a reference, and of those with only a
   rejected answer (at least one), for validation; the training set holds examples with a
   reference only (a demo must be an answer worth copying).
3. The score of an answer: 0 when it repeats the rejected answer, or when the agent could
   not answer; else, with a reference, the mean of the reference's figures found in the
   answer and its quoted evidence (when it has figures), whether a cited document is a
   reference document (when it has sources) and the judge's faithfulness; without one, the
   faithfulness.
4. The live program is scored on the validation set, the optimiser (BootstrapFewShot by
   default; MIPROv2 ``auto="light"`` when asked) compiles the agent's signatures from the
   training set, the compiled program is scored on the same validation set, and it is saved
   only if it scores at least as well, with its metadata; then read back and checked.

Every candidate runs the whole agent over the live index (:meth:`DocfinderService.run_candidate`).
DSPy's optimisers call programs synchronously, so they run in a worker thread and each
answer is computed on the service's event loop; the prediction trace that the bootstrap
learns from is handed over with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evaluation.extra import require
from evaluation.feedback_report import is_good, load_items
from evaluation.judge import AnswerJudge, JudgeCase
from evaluation.questions import Question
from pipeline.answers import AgentAnswer
from pipeline.citations import citation_link
from pipeline.errors import InvalidRequestError
from pipeline.figures import figures, stated_figures
from pipeline.text import analyze
from programs.saved import load_program, save_program

if TYPE_CHECKING:
    from programs.agent import AnswerAgent
    from server.service import DocfinderService

Optimizer = Literal["bootstrap", "mipro"]
REPEAT_SIMILARITY = 0.9  # word overlap (Jaccard) at which a new answer repeats a rejected one
DEMO_THRESHOLD = 0.5  # the least score a bootstrapped run needs to become a demo
DEMO_SHARE = 0.15  # the most of the LLM's context window one demo may take


@dataclass(frozen=True, slots=True)
class FeedbackExample:
    """One question from the feedback: what a good answer looks like, or what a bad one said."""

    question: str
    reference: str | None = None
    reference_sources: tuple[str, ...] = ()  # documents (links without their page fragment)
    gold_docs: tuple[str, ...] = ()  # file-name globs, from the question file
    rejected: str | None = None

    @property
    def positive(self) -> bool:
        """Whether it shows what a good answer holds (and so can teach): it has a reference."""
        return self.reference is not None


def feedback_examples(
    items: Sequence[dict[str, Any]], questions: Sequence[Question] = ()
) -> list[FeedbackExample]:
    """One example per judged question (see the module docstring); unjudged items are skipped."""
    gold = {q.text: q for q in questions}
    judged: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        if item.get("rating") is not None or item.get("label") is not None:
            judged.setdefault(item["question"], []).append(item)
    examples = []
    for question, group in judged.items():
        good = [i for i in group if is_good(i["rating"], i["label"])]
        bad = [i for i in group if _is_bad(i["rating"], i["label"])]
        known = gold.get(question)
        liked = good[-1] if good and len(good) >= len(bad) else None
        reference = known.answer if known else (liked["answer"] if liked else None)
        rejected = bad[-1]["answer"] if len(bad) > len(good) else None
        if reference is None and rejected is None:
            continue  # judged neither good nor bad
        examples.append(
            FeedbackExample(
                question,
                reference=reference,
                reference_sources=tuple(dict.fromkeys(_document(s) for s in liked["sources"]))
                if liked
                else (),
                gold_docs=known.gold_docs if known else (),
                rejected=rejected,
            )
        )
    return examples


def _is_bad(rating: int | None, label: str | None) -> bool:
    """A judgement that the answer was wrong: a rating of 1 or 2, or a label that is not a good one."""
    if label is not None:
        return not is_good(rating, label)
    return rating is not None and rating <= 2


def split_examples(
    examples: Sequence[FeedbackExample], validation_share: float, seed: int
) -> tuple[list[FeedbackExample], list[FeedbackExample]]:
    """A seeded (train, validation) split: a shuffled share of the positives for validation, the
    rest for training; the same share of the negatives (at least one) for validation only (a
    demo must be worth copying; a program must not repeat what people rejected). Refuses a
    set too small to learn from."""
    rng = random.Random(seed)
    positives = [e for e in examples if e.positive]
    negatives = [e for e in examples if not e.positive]
    rng.shuffle(positives)
    rng.shuffle(negatives)
    held = max(1, round(len(positives) * validation_share))
    if len(positives) - held < 1:
        raise InvalidRequestError(
            f"{len(positives)} question(s) with a reference (a gold answer, or an answer judged good): "
            "at least two are needed (one to learn from, one to check)"
        )
    negatives_held = max(1, round(len(negatives) * validation_share)) if negatives else 0
    # The bootstrap stops at its first good runs: try first the questions whose answer nobody
    # rejected (at temperature 0 the program would give a rejected answer again).
    train = sorted(positives[held:], key=lambda e: e.rejected is not None)
    return train, positives[:held] + negatives[:negatives_held]


def answer_score(
    example: FeedbackExample, answer: AgentAnswer, faithfulness: float | None, prefixes: dict[str, str]
) -> float:
    """How good ``answer`` is for ``example`` (see the module docstring), in [0, 1]."""
    if answer.outcome != "answered" or (example.rejected and repeats(answer.answer, example.rejected)):
        return 0.0
    faithful = faithfulness or 0.0
    if not example.positive:
        return faithful
    parts = [faithful]
    wanted = figures(example.reference or "")
    if wanted:
        quoted = set().union(*(figures(f"{q.context}\n{q.text}") for q in answer.evidence))
        parts.append(len(stated_figures(wanted, figures(answer.answer) | quoted)) / len(wanted))
    if example.reference_sources or example.gold_docs:
        cited = [(c.source, _document(citation_link(c.source, c.pages, prefixes))) for c in answer.citations]
        parts.append(
            float(
                any(
                    document in example.reference_sources
                    or any(fnmatch.fnmatch(Path(source).name, glob) for glob in example.gold_docs)
                    for source, document in cited
                )
            )
        )
    return statistics.fmean(parts)


def repeats(answer: str, rejected: str) -> bool:
    """Whether ``answer`` says what ``rejected`` said (nearly the same words)."""
    said, before = set(analyze(answer)), set(analyze(rejected))
    if not said or not before:
        return False
    return len(said & before) / len(said | before) >= REPEAT_SIMILARITY


def drop_long_demos(program: Any, context_tokens: int) -> dict[str, int]:
    """Remove the demos longer than ``DEMO_SHARE`` of the LLM's context window; how many, per predictor.

    A demo is sent with every call: a generate demo carries its own evidence, and on the
    embedded model (4,096 tokens) it and the question's evidence do not fit together (the
    run of 23 November 2026 failed so). Length is estimated at four characters a token.
    """
    limit = DEMO_SHARE * context_tokens * 4
    dropped = {}
    for name, predictor in program.named_predictors():
        kept = [d for d in predictor.demos if sum(len(str(v)) for v in dict(d).values()) <= limit]
        if len(kept) < len(predictor.demos):
            dropped[name] = len(predictor.demos) - len(kept)
        predictor.demos = kept
    return dropped


def why_not_save(before: float, after: float, demos_learnt: int, optimizer: Optimizer) -> str | None:
    """Why a compiled program must not be saved, or None: it learnt nothing, or it scores below
    the live program on the validation set (equal is kept: the same score, learnt from people)."""
    if demos_learnt == 0 and optimizer == "bootstrap":
        return "no training run scored well enough to become a demo"
    if after < before:
        return f"the compiled program scores {after:.4f} on validation, below the live one's {before:.4f}"
    return None


def _document(link: str) -> str:
    """A source link without its page fragment: the document it points at."""
    return link.split("#", 1)[0]


def data_hash(*paths: Path | None) -> str:
    """sha256 of the files a program learnt from, in order."""
    digest = hashlib.sha256()
    for path in paths:
        if path is not None:
            digest.update(path.read_bytes())
    return digest.hexdigest()


class _Bridge:
    """Runs the agent and the judge on the service's event loop for an optimiser in a worker thread."""

    def __init__(self, scorer: _Scorer, loop: asyncio.AbstractEventLoop) -> None:
        self.scorer = scorer
        self.loop = loop

    def __deepcopy__(self, memo: dict[int, Any]) -> _Bridge:
        return self  # DSPy copies programs; every copy talks to the same service

    def answer(self, agent: AnswerAgent, question: str, trace: list[Any] | None) -> AgentAnswer:
        coroutine = self.scorer.service.run_candidate(agent, question, trace=trace)
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def score(self, example: FeedbackExample, answer: AgentAnswer) -> float:
        return asyncio.run_coroutine_threadsafe(self.scorer.score(example, answer), self.loop).result()


class _Scorer:
    """Scores answers: the judge's faithfulness (under the judge's LM) and the deterministic parts."""

    def __init__(self, service: DocfinderService, judged_by: dict[str, Any], concurrent: bool) -> None:
        self.service = service
        self.judged_by = judged_by
        self.judge = AnswerJudge(concurrent=concurrent)

    async def score(self, example: FeedbackExample, answer: AgentAnswer) -> float:
        import dspy

        faithfulness = None
        if answer.outcome == "answered":
            case = JudgeCase(example.question, answer.answer, answer.context)
            with dspy.context(**self.judged_by, disable_history=True, trace=None):
                judged = await self.judge.ajudge(case, metrics=("faithfulness",))
            faithfulness = judged.scores.get("faithfulness")
        return answer_score(example, answer, faithfulness, self.service.settings.index.source_url_prefixes)

    async def validate(self, agent: AnswerAgent, examples: Sequence[FeedbackExample]) -> dict[str, Any]:
        """The mean score of ``agent`` on ``examples``, and its mean latency."""
        scores, seconds = [], []
        for example in examples:
            started = asyncio.get_running_loop().time()
            answer = await self.service.run_candidate(agent, example.question)
            seconds.append(asyncio.get_running_loop().time() - started)
            scores.append(await self.score(example, answer))
        return {
            "score": round(statistics.fmean(scores), 4),
            "scores": [round(s, 4) for s in scores],
            "mean_seconds": round(statistics.fmean(seconds), 2),
        }


def _program_class() -> type:
    """The DSPy module an optimiser compiles: the agent as a synchronous ``question → answer`` program."""
    import dspy

    class AgentProgram(dspy.Module):
        def __init__(self, agent: AnswerAgent, bridge: _Bridge) -> None:
            super().__init__()
            self.agent = agent
            self.bridge = bridge

        def forward(self, question: str) -> dspy.Prediction:
            answer = self.bridge.answer(self.agent, question, dspy.settings.trace)
            return dspy.Prediction(answer=answer.answer, agent_answer=answer)

    return AgentProgram


async def optimize_program(
    service: DocfinderService,
    feedback_path: Path,
    out: Path,
    *,
    judged_by: dict[str, Any],
    judge_is_server: bool = False,
    questions: Sequence[Question] = (),
    questions_path: Path | None = None,
    optimizer: Optimizer = "bootstrap",
    demos: int = 1,
    validation_share: float = 0.3,
    seed: int = 0,
) -> dict[str, Any]:
    """Compile a better answering program from ``feedback_path``; see the module docstring.

    The report says whether the program was saved (``saved``) and why not. ``judged_by`` is
    the judge's ``dspy.context`` (LM, adapter); ``judge_is_server``: it takes calls at once.
    """
    if optimizer == "mipro":  # before the validation questions are answered
        require("docfinder optimize --optimizer mipro", "optuna")
    import dspy

    examples = feedback_examples(load_items(feedback_path), questions)
    train, validation = split_examples(examples, validation_share, seed)
    scorer = _Scorer(service, judged_by, concurrent=judge_is_server)
    live = service.agent
    before = await scorer.validate(live, validation)

    bridge = _Bridge(scorer, asyncio.get_running_loop())
    student = _program_class()(live.deepcopy(), bridge)
    trainset = [dspy.Example(question=e.question, feedback=e).with_inputs("question") for e in train]

    def metric(example: Any, prediction: Any, trace: Any = None) -> float:
        return bridge.score(example.feedback, prediction.agent_answer)

    llm = await service.dspy_settings()  # the optimiser's own calls (MIPROv2's proposals) use it too
    if optimizer == "mipro":
        compiler: Any = dspy.MIPROv2(
            metric=metric,
            prompt_model=llm["lm"],
            task_model=llm["lm"],
            auto="light",
            num_threads=1,
            max_bootstrapped_demos=demos,
            max_labeled_demos=0,
            seed=seed,
        )
        valset = [dspy.Example(question=e.question, feedback=e).with_inputs("question") for e in validation]
        arguments = {"trainset": trainset, "valset": valset}
    else:
        compiler = dspy.BootstrapFewShot(
            metric=metric,
            metric_threshold=DEMO_THRESHOLD,
            max_bootstrapped_demos=demos,
            max_labeled_demos=0,
            max_rounds=1,
        )
        arguments = {"trainset": trainset}

    def compile_program() -> Any:
        with dspy.context(**llm):
            return compiler.compile(student, **arguments)

    with contextlib.redirect_stdout(sys.stderr):  # DSPy prints progress; stdout is the report
        compiled = await asyncio.to_thread(compile_program)
    dropped = drop_long_demos(compiled.agent, service.settings.llm.context_tokens)
    learnt = sum(len(p.demos) for _, p in compiled.agent.named_predictors())
    after = await scorer.validate(compiled.agent, validation)

    report: dict[str, Any] = {
        "feedback": str(feedback_path),
        "examples": {
            "train": len(train),
            "validation": len(validation),
            "validation_negatives": sum(not e.positive for e in validation),
        },
        "optimizer": optimizer,
        "seed": seed,
        "live_program": service.program.name,
        "validation_before": before,
        "validation_after": after,
        "demos_learnt": learnt,
        "demos_dropped_too_long": dropped,
        "out": str(out),
    }
    refusal = why_not_save(before["score"], after["score"], learnt, optimizer)
    if refusal is not None:
        return {**report, "saved": False, "reason": refusal}
    metadata = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "optimizer": optimizer,
        "data_sha256": data_hash(feedback_path, questions_path),
        "feedback": feedback_path.name,
        "train": len(train),
        "validation": len(validation),
        "seed": seed,
        "score_before": before["score"],
        "score_after": after["score"],
        "demos": learnt,
        "dspy": dspy.__version__,
    }
    save_program(compiled.agent, out, metadata)
    reloaded = live.deepcopy()
    info = load_program(reloaded, out)
    same = reloaded.dump_state() == compiled.agent.dump_state()
    return {**report, "saved": True, "reloaded": same, "program": info.summary()}
