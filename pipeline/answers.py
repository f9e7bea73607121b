"""The shapes every front door shares: answers with citations, feedback, and the service Protocol.

The bots (``bots/``) are handed the service typed by :class:`AnsweringService`, so they depend
on these small types and never on the composition root that builds the real service.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from pipeline.streaming import AnswerToken
from pipeline.types import header_groups, labelled_cells, place_label, table_cells

Outcome = Literal["answered", "not_in_documents", "no_documents", "unverified", "llm_unavailable"]
StatusSink = Callable[[dict[str, Any]], Awaitable[None]]
TokenSink = Callable[[AnswerToken], Awaitable[None]]  # the answer's text, as the LLM writes it

# The reference system's feedback labels, in its order (best first).
FEEDBACK_LABELS = (
    "Perfect answer, accurate",
    "Correct, but missing information",
    "Correct, but too verbose",
    "Correct, but not useful",
    "Irrelevant",
    "Incorrect answer",
    "Confusing",
    "Cannot be answered",
)
Platform = Literal["slack", "teams", "http", "mcp"]


@dataclass(frozen=True, slots=True)
class Citation:
    """A numbered source of an answer; ``link`` opens the document at the cited page."""

    n: int
    title: str
    source: str
    pages: tuple[int, int]
    heading_path: tuple[str, ...]
    passage_id: str
    link: str = ""

    def label(self) -> str:
        """Where the passage is, for people (:func:`pipeline.types.place_label`)."""
        return place_label(self.title, self.heading_path, self.pages)


@dataclass(frozen=True, slots=True)
class Quote:
    """Evidence an answer rests on, in the document's own words, under its citation number.

    ``text`` is verbatim from the document (a sentence, or a table row as a Markdown line);
    ``context`` is what makes a row readable: its table's caption, column labels and group.
    """

    n: int
    text: str
    source: str
    pages: tuple[int, int]
    heading_path: tuple[str, ...]
    passage_id: str
    context: str = ""
    link: str = ""

    def readable(self) -> str:
        """The quote for people: a table row's figures each beside its column label, else the text.

        ``Total net sales — Three Months Ended July 1, 2023: 81,797; … June 25, 2022: 82,959``,
        after the group it stands under ("Net sales: Products — …"): the cells are the document's
        own, only arranged; a row whose cells do not line up with the labels is shown as it stands.
        """
        if not self.text.lstrip().startswith("|"):
            return self.text
        row = [cell for line in self.text.split("\n") for cell in table_cells(line) if cell]
        labelled = labelled_cells(self.text, self.context)
        if not labelled:
            return " | ".join(row)
        return f"{self.group()}{row[0]} — {grouped_cells(labelled)}"

    def group(self) -> str:
        """A row's group label with a space ("Operating income: "), or "": without it an "AWS"
        row of operating income reads as the "AWS" row of net sales."""
        groups = header_groups(self.context)[1]
        return f"{groups[-1]} " if groups else ""

    def caption(self) -> str:
        """What a row's figures are in ("(In millions)"); its group leads :meth:`readable`."""
        return " · ".join(header_groups(self.context)[0])


def grouped_cells(labelled: list[tuple[str, str]]) -> str:
    """A row's cells beside their column labels, the words that neighbouring labels share said
    once: "Three Months Ended 2023: $81,797, 2022: $82,959; Nine Months Ended 2023: $293,787"
    rather than the period's words before every cell (a quarterly filing's row quoted whole ran
    to 220 characters)."""
    parts: list[str] = []
    shared: list[str] | None = None
    for label, value in labelled:
        words = label.split()
        lead = words[:-1]
        if shared is not None and lead and lead == shared:
            parts[-1] += f", {words[-1]}: {value}"
            continue
        parts.append(f"{label}: {value}" if label else value)
        shared = lead if len(words) > 1 else None
    return "; ".join(parts)


@dataclass(slots=True)
class AgentAnswer:
    """What the agent returns: answer, sources, quoted evidence, the checks' verdicts and the trace."""

    answer: str
    outcome: Outcome
    citations: list[Citation]
    verdicts: dict[str, str | None]
    question: str
    domain: str | None
    trace: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[Quote] = field(default_factory=list)
    # The numbered passages the answer was written from (``context[n-1]`` is ``[n]``), each as
    # its label and text: what a judge reads. Kept in the process, not sent to clients.
    context: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AskResult:
    """An answer with its ids (for feedback and follow-up questions)."""

    answer_id: str
    conversation_id: str
    agent: AgentAnswer
    collections: tuple[str, ...] = ()
    index_version: str = ""
    request_id: str = ""


@dataclass(frozen=True, slots=True)
class Feedback:
    """One judgement of an answer as a front door receives it (a reaction, a rating, a label).

    ``user`` is the platform's raw user id; the service stores only a pseudonym of it.
    ``reaction`` names what produced it (an emoji, a Teams reaction type), so that removing
    the reaction can retract exactly this record.
    """

    answer_id: str
    platform: Platform
    user: str = ""
    rating: int | None = None
    label: str | None = None
    comment: str = ""
    channel: str = ""
    reaction: str = ""


class ReactionMeaning(BaseModel):
    """What an emoji or reaction type says about an answer: a 1–5 rating, one of the reference
    labels, or both (the chat bots' ``reactions`` settings map names to these)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rating: int | None = Field(None, ge=1, le=5)
    label: Literal[FEEDBACK_LABELS] | None = None  # type: ignore[valid-type]


@dataclass(frozen=True, slots=True)
class FeedbackRecord:
    """A stored judgement with everything an evaluation set needs about the answer it judges."""

    feedback_id: int
    answer_id: str
    platform: str
    user: str
    rating: int | None
    label: str | None
    comment: str
    channel: str
    reaction: str
    question: str
    answer: str
    sources: tuple[str, ...]
    domain: str | None
    collections: tuple[str, ...]
    created_at: str


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking, for access control.

    ``owner`` binds conversations: a conversation is readable and writable only by the caller
    that started it (an API key's name, a chat bot's place). ``collections`` is everything the
    caller may read (None: every collection). A chat bot ``names_conversations``: it maps its
    threads to conversation ids itself, and a thread's first question starts the conversation
    under that id; every other caller gets its conversation ids from docfinder. ``scopes`` are the
    actions an API key was given.
    """

    owner: str
    collections: tuple[str, ...] | None = None
    names_conversations: bool = False
    scopes: frozenset[str] | None = None  # the actions it may take (SCOPES); None: every one

    def may(self, scope: str) -> bool:
        """Whether the caller may take the action ``scope`` ("admin" may take every one)."""
        return self.scopes is None or scope in self.scopes or "admin" in self.scopes


# What an API key may be allowed to do: search (and read passages, documents, collections),
# ask, give feedback, read /metrics; admin may do all of these.
SCOPES = ("search", "ask", "feedback", "metrics", "admin")
DEFAULT_SCOPES = ("search", "ask", "feedback")  # what a key is given when none are named


LOCAL_CALLER = Caller("local")


class AnsweringService(Protocol):
    """What a chat front door needs from the service: ask, and record or retract feedback."""

    async def ask(
        self,
        question: str,
        *,
        conversation_id: str | None = None,
        collections: list[str] | None = None,
        on_status: StatusSink | None = None,
        on_token: TokenSink | None = None,
        caller: Caller = LOCAL_CALLER,
    ) -> AskResult:
        """Answer ``question`` in ``conversation_id`` (a new one when absent), as ``caller``;
        ``on_status`` hears each step, ``on_token`` the answer's text as it is written."""
        ...

    async def record_feedback(self, feedback: Feedback) -> FeedbackRecord:
        """Store ``feedback`` on a known answer; raises ``NotFoundError`` for an unknown answer id."""
        ...

    async def retract_feedback(self, answer_id: str, platform: Platform, user: str, reaction: str) -> int:
        """Remove the records that ``reaction`` by ``user`` created; returns how many."""
        ...

    async def remember_message(self, platform: Platform, message_ref: str, answer_id: str) -> None:
        """Note which answer a chat message shows, so reactions to it can be traced back."""
        ...

    async def answer_for_message(self, platform: Platform, message_ref: str) -> str:
        """The answer id a chat message shows; raises ``NotFoundError`` for any other message."""
        ...
