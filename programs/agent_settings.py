"""The answering agent's settings, apart from the agent itself so that reading the settings
never imports DSPy."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.answering.answer_rules import RULE_PACKS


class AgentSettings(BaseModel):
    """How the answering loop behaves: the ``agent`` settings section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    understand: Literal["code", "llm"] = Field(
        "code",
        description="How a question is made searchable: code = a follow-up is searched together with the "
        "user's previous question and the answering call reads the conversation (no LLM call of its own: "
        "the evidence shows within a second); llm = one LLM call first condenses the conversation and "
        "rephrases the question (costs a call on every question; classify = llm needs it).",
    )
    classify: Literal["embedding", "llm"] = Field(
        "embedding",
        description="How a question is placed in a domain: embedding = the domain whose description is "
        "nearest to the question (no LLM call, on every question); llm = by the understanding call.",
    )
    max_rewrites: int = Field(
        2, ge=0, le=5, description="Query rewrites after no passages or a failed check."
    )
    figure_check: bool = Field(
        True,
        description="An answer passes the grounding check only if every figure in it is stated by the "
        "passages it cites (no LLM call; a computed, rounded or invented figure fails it; one another "
        "passage states first gets that passage's citation); false: the LLM check alone.",
    )
    sparse_tokens: int = Field(
        800,
        ge=0,
        description="LLM tokens (estimated: a digit one, 1.8 other characters one) the sparse fallback may "
        "add to the generate prompt by appending passages (the LLM server resumes the rest from its prompt "
        "cache); the default keeps the embedded model's 4,096-token window; passages beyond it replace the "
        "lowest-ranked ones; 0: always replace.",
    )
    grade_threshold: float | None = Field(
        None, description="Passages scoring below this are dropped before generation; unset keeps all."
    )
    answer_tokens: int = Field(
        240,
        ge=32,
        le=4096,
        description="Most tokens the answering call may write (the answer and the JSON around it); a reply "
        "cut at the limit keeps its whole sentences. Writing is the slow part of a CPU model's answer "
        "(about 8 tokens a second on two cores). Only replies that reach the limit change with it: on the "
        "techdocs tune half 8 of 25 did at 160, and 240 wrote more of the facts (own sentences 0.355 "
        "against 0.413) at the same latency p50.",
    )
    reply_chars: int = Field(
        450,
        ge=0,
        description="Characters of the whole reply, about: the quotes under the answer (at most three, a "
        "long unit cut to its sentences that answer) fill what the answer's own sentences leave of it, and "
        "one short quote stands under any answer.",
    )
    history_turns: int = Field(
        6,
        ge=0,
        le=50,
        description="Earlier turns of a conversation the answering call reads (and the condense call).",
    )
    rule_packs: list[str] = Field(
        default_factory=list,
        description="Answer rule packs for particular documents (pipeline/answering/rule_packs), e.g. "
        "reporting-periods (figures in tables by period: the right column, the row the question names, "
        "shares divided by code); none by default: measured on the three dev sets at once, they help "
        "quarterly filings and nothing else.",
    )
    llm_checks: bool = Field(
        False,
        description="Also ask the LLM whether an answer is supported by its passages and useful (two more "
        "calls, at once; worth it with a strong server model); false: the checks are code alone.",
    )
    program_path: Path | None = Field(
        None,
        description="A compiled answering program (JSON from `docfinder optimize`): its demos and "
        "instructions replace the built-in ones; unset: the built-in program.",
    )

    @field_validator("rule_packs")
    @classmethod
    def _known_rule_packs(cls, names: list[str]) -> list[str]:
        return [RULE_PACKS.check(name) for name in names]
