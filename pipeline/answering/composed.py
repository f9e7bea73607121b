"""What code composed from a model's reply: the answer a user reads, and the sentences it dropped and why.

The reasons (:data:`DropReason`) are those the trace's ``compose`` step lists: a figure no cited
unit states, or one in another role; a name, or a term (an option, a system path, an
identifier), that no passage read gives; a "yes" against a "not"; a passage's label as the
answer; a sentence that says nothing the question did not, or leans on a dropped one; a name
the documents never mention; and the rule packs' own (a period's direction, a row, a column).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pipeline.answering.quotes import QuoteCandidate

AnswerKind = Literal["answer", "quotes", "not_in_documents", "denied"]
DropReason = Literal[
    "figure",
    "role",
    "direction",
    "row",
    "column",
    "name",
    "term",
    "negation",
    "label",
    "says_nothing",
    "no_quantity",
    "dangling",
    "absent",
]


@dataclass(frozen=True, slots=True)
class DroppedSentence:
    """A sentence of the model's reply that code did not let through, and why."""

    sentence: str
    reason: DropReason
    detail: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ComposedAnswer:
    """The answer as the user reads it, what it is, what was dropped and the units it quotes."""

    text: str
    kind: AnswerKind
    kept: str  # the model's sentences that passed
    quotes: list[QuoteCandidate]
    dropped: list[DroppedSentence] = field(default_factory=list)
    corrected: list[str] = field(default_factory=list)  # figures code moved to the right column
    # A dropped sentence put forward a figure, a name or a term that the passages it cites do not
    # state: the model filled a gap in the evidence (extractive.offers_what_its_sources_lack).
    filled_a_gap: bool = False
    stated: list[QuoteCandidate] = field(default_factory=list)  # said word for word: cited, not quoted
