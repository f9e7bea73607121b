"""DSPy Signatures of the answering agent. Each docstring is the instruction the LLM receives.

They are kept short: the embedded model reads about 150 prompt tokens per second on two
cores, so every word here costs time on every question. For the same reason one call
understands the question (condense, classify, rephrase), and ``Supported`` is asked as the
next turn of the generate call's conversation (:mod:`programs.continuation`), so the evidence
it checks against is not read twice. The two checks stay separate calls: asked together,
with the evidence in view, the embedded model judged supported answers not useful (SEC dev
question 0: three supported answers, all "not useful").
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
    """Answer the question in one or two short sentences, using only the numbered evidence and its
    words: name the specific facts that answer it (names, dates, figures, items), each figure
    exactly as written, and cite the evidence after each claim as [n], for example: "Net sales
    were $81,797 million [2]." A table row stands under its column headers: take each figure from
    the column of the period asked about. If the evidence does not contain the answer, say only:
    "The documents do not say." Add nothing the evidence does not state."""

    question: str = dspy.InputField()
    passages: str = dspy.InputField(
        desc="numbered evidence: '[n] document (period) — heading, page', then its sentences and table rows"
    )
    glossary: str = dspy.InputField(desc="terms of this organisation and what they mean; may be empty")
    answer: str = dspy.OutputField(desc="one or two sentences with [n] citations")
    sources: list[int] = dspy.OutputField(desc="the numbers of the evidence the answer uses")


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
