"""Rule packs: optional answer checks for one kind of document, switched on by name.

The core checks of an answer (:mod:`pipeline.answering.extractive`) hold for any document: every figure
and name a sentence states stands in the evidence it cites, a "yes" does not contradict the
evidence that answers the question, a sentence says something the question did not. Some
documents need more: a table of figures by reporting period (a quarterly filing) invites a
figure from the wrong column or the wrong row, and a share asked for can be divided from two
of its cells. Such rules sleep on every other document and cost time on every answer, so they
live in packs, one module each in :mod:`pipeline.answering.rule_packs`, registered here by name and
chosen by the ``agent.rule_packs`` setting (none by default: see that setting for why).

A pack sees the answer's sentences and the quotable units of the evidence
(:class:`~pipeline.answering.quotes.QuoteCandidate`) and may:

- judge a sentence: drop it (with a reason) or put a figure in its place (the right column's);
- add rows to the quotes, and a line code derived from them (a share, its inputs shown);
- say that the evidence holds what the question names, so that a model's "the documents do
  not say" is a failed draft rather than the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pipeline.answering.quotes import QuoteCandidate
from pipeline.registry import Registry


@dataclass(frozen=True, slots=True)
class SentenceVerdict:
    """A pack's judgement of one sentence: the sentence as it stands after the pack's fixes,
    why it must go (a reason and its details; no reason: it stays) and the fixes, described."""

    sentence: str
    drop_reason: str | None = None
    detail: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QuotedRows:
    """Rows a pack adds to the quotes, and a line it derived from them ("" for none)."""

    quotes: list[QuoteCandidate]
    derived: str = ""
    leads: bool = False  # the rows are what the question names: "The documents say:" leads them
    added: list[QuoteCandidate] = field(default_factory=list)


class AnswerRules(Protocol):
    """One rule pack (see the module docstring)."""

    def judge(self, sentence: str, question: str, cited_units: Sequence[QuoteCandidate]) -> SentenceVerdict:
        """``sentence`` checked against the units of the passages it cites."""
        ...

    def quote_rows(
        self, question: str, quotes: list[QuoteCandidate], units: Sequence[QuoteCandidate]
    ) -> QuotedRows:
        """``quotes`` with the rows the pack finds for ``question`` among ``units``."""
        ...

    def holds_what_is_asked(self, question: str, units: Sequence[QuoteCandidate]) -> bool:
        """Whether ``units`` hold what ``question`` names (a row by its label)."""
        ...


RULE_PACKS: Registry[AnswerRules] = Registry("answer rule pack", "pipeline.answering.rule_packs")


def rule_packs(names: Sequence[str]) -> list[AnswerRules]:
    """The packs of ``names``, in that order (:class:`ValueError` naming the known ones)."""
    return [RULE_PACKS[name] for name in names]
