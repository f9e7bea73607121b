"""The answering agent's settings, apart from the agent itself so that reading the settings
never imports DSPy."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class AgentSettings(BaseModel):
    """How the answering loop behaves: the ``agent`` settings section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    understand: Literal["auto", "always"] = Field(
        "auto",
        description="auto: the understanding LLM call (condense, rephrase; classify with classify = llm) in "
        "a conversation, and on every question with an LLM server; the embedded model searches a first "
        "question as typed (a rephrasing costs it about 6 s and lowered context recall on manual-qa dev); "
        "always: on every question.",
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
    context_tokens: int = Field(
        1300,
        ge=64,
        description="Token budget (embedder tokens, passage labels included) of the evidence the answering "
        "LLM reads; the embedded model's 4,096-token window and speed set the default.",
    )
    quote_context_tokens: int = Field(
        2000,
        ge=0,
        description="Token budget (as context_tokens) of the evidence an answer may quote, the LLM's "
        "included: the same rows of other periods, and the shares code derives, may come from evidence "
        "the LLM did not read (it costs no LLM time); at or below context_tokens, only what it read.",
    )
    history_turns: int = Field(6, ge=0, le=50, description="Earlier turns given to the condense step.")
    program_path: Path | None = Field(
        None,
        description="A compiled answering program (JSON from `docfinder optimize`): its demos and "
        "instructions replace the built-in ones; unset: the built-in program.",
    )
