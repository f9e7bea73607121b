"""DSPy Signatures of the answering agent. Each docstring is the instruction the LLM receives.

They are kept short: the embedded model reads 60 to 150 prompt tokens per second on two
cores, so every word here costs time on every question. ``Generate`` is the one call of a
question's common path; the checks of its answer are code (:mod:`pipeline.answering.extractive`). With a
server LLM the agent may also ask ``Supported`` (as the next turn of the generate call's
conversation, :mod:`programs.continuation`, so the evidence is not read twice) and ``Useful``;
``Understand`` condenses a conversation and rephrases a question when the settings ask for an
LLM to do it (by default code does: :mod:`pipeline.retrieval.conversation`).
"""

from __future__ import annotations

from typing import Literal

import dspy


class Understand(dspy.Signature):
    """Read the user's latest message. 1) standalone_question: the message as one question that can
    be understood without the conversation, names, numbers and terms kept exactly (the message
    itself if it already stands alone). 2) domain: the one listed domain it belongs to, its name
    exactly as listed ('general' when none fits better). 3) rephrased: one alternative phrasing for
    a document search, in the words a manual would use, acronyms you are sure of expanded, every
    name and number kept."""

    history: str = dspy.InputField(
        desc="earlier turns, oldest first, as 'user:' and 'assistant:' lines; may be empty"
    )
    message: str = dspy.InputField(desc="the user's latest message")
    domains: str = dspy.InputField(desc="one 'name: description' per line")
    standalone_question: str = dspy.OutputField(desc="one self-contained question")
    domain: str = dspy.OutputField(desc="exactly one domain name from the list")
    rephrased: str = dspy.OutputField(desc="one alternative search query")


class Transform(dspy.Signature):
    """The documents found for this question did not answer it. Rewrite the question so that a
    document search finds better passages: more specific terms, fewer filler words, and different
    from the queries already tried."""

    question: str = dspy.InputField()
    problem: str = dspy.InputField(desc="why the previous attempt failed")
    tried: str = dspy.InputField(desc="queries already tried, one per line")
    rewritten: str = dspy.OutputField(desc="one new search query")


class Generate(dspy.Signature):
    """Answer the question from the numbered passages. Be specific: give the names, settings, commands,
    values and figures that answer it, exactly as the passages write them, and cite each claim as [n].
    If the passages do not answer it, say so."""

    # The question comes last, after what it is asked of: read first, a chatty question was
    # echoed back as the answer by the embedded 1.5B model.
    passages: str = dspy.InputField(
        desc="numbered passages: '[n] document (period) — heading, page', then its text"
    )
    glossary: str = dspy.InputField(desc="terms of this organisation and what they mean; may be empty")
    conversation: str = dspy.InputField(
        desc="the user's earlier questions in this conversation, oldest first, which the question may "
        "follow up; may be empty"
    )
    question: str = dspy.InputField()
    answer: str = dspy.OutputField(desc="a specific answer with [n] citations")


class Supported(dspy.Signature):
    """Check the answer you have just written against the numbered evidence above. Is every claim
    in it stated by the evidence it cites? Citations alone are not support: the cited evidence must
    state the claim, each figure exactly as written."""

    cited: str = dspy.InputField(desc="the numbers of the evidence the answer cites")
    supported: Literal["yes", "no"] = dspy.OutputField()


class Useful(dspy.Signature):
    """Does the answer actually answer the question (not just restate it or say it cannot)?"""

    question: str = dspy.InputField()
    answer: str = dspy.InputField()
    useful: Literal["yes", "no"] = dspy.OutputField()


class Situate(dspy.Signature):
    """Write one or two short sentences that situate the passage within its document, to help a
    search find it: what the document is and which part of it this passage belongs to. Do not
    repeat the passage."""

    document: str = dspy.InputField(desc="the document's title and outline of headings")
    heading_path: str = dspy.InputField(desc="where the passage sits in the document")
    passage: str = dspy.InputField()
    context: str = dspy.OutputField(desc="one or two sentences")


class JudgePair(dspy.Signature):
    """Two passages of the same documentation, each under its document and heading. Do they
    contradict each other: state the same measure of the same subject with different values,
    or one affirm what the other denies? Passages about different things, releases or items do
    not contradict."""

    passage_a: str = dspy.InputField()
    passage_b: str = dspy.InputField()
    verdict: Literal["contradict", "agree", "different subjects"] = dspy.OutputField()
