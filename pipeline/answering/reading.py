"""What the answer code checks each sentence of a model's reply against: the evidence it read,
the question, the user's words (:mod:`pipeline.answering.extractive`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from pipeline.answering.answer_rules import AnswerRules
from pipeline.answering.quotes import QuoteCandidate
from pipeline.citations import cited_numbers
from pipeline.retrieval.context import Passage


@dataclass(frozen=True, slots=True)
class Reading:
    """What each sentence of a reply is checked against: the question, the numbered passages (as
    the model read them, and as quotable units), the passages the reply cites, the rule packs."""

    question: str
    passages: Sequence[Passage]
    evidence: dict[int, str]
    units: Sequence[QuoteCandidate]
    cited: Collection[int]
    check_figures: bool
    rules: Sequence[AnswerRules] = ()
    absent: Sequence[str] = ()
    conversation: str = ""  # the user's earlier turns: their words, names and paths are no invention
    documents_name: Callable[[str], bool] | None = None  # a word some searched document names

    def cited_by(self, sentence: str) -> set[int]:
        """The passages ``sentence`` rests on: those it cites, else those the reply cites, else all."""
        everything = range(1, len(self.passages) + 1)
        return cited_numbers(sentence, len(self.passages)) or set(self.cited) or set(everything)

    @property
    def said_by_user(self) -> str:
        """The question and the user's earlier turns: what the user wrote, nothing the model made up."""
        return f"{self.question}\n{self.conversation}"

    def stated_by(self, sentence: str) -> str:
        """The text of the passages ``sentence`` rests on, as the model read them."""
        return "\n".join(self.evidence[n] for n in sorted(self.cited_by(sentence)))

    def units_cited_by(self, sentence: str) -> list[QuoteCandidate]:
        own = self.cited_by(sentence)
        return [u for u in self.units if u.n in own]
