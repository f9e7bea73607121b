"""What a reply's sentences say, read by code: each sentence with its citations, whether it only
restates the question, says nothing the evidence adds, refuses, or speaks in the documents' own words."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.citations import LEADING_MARKERS, MARKER, blank_markers, marker
from pipeline.figures import figures
from pipeline.retrieval.ordering import is_list_item, split_sentences
from pipeline.text import analyze

# A refusal speaks of the documents ("The passages do not specify the headset model", "The
# financial statements do not provide any information about ...") or of the asker's search ("I
# could not find ..."); a product or a command that does not do something is an answer ("pg_dump
# does not include the roles", "PostgreSQL does not provide the software to detect a failure").
# Words that name a part of a manual only after "given" or "provided": "the table does not include
# a primary key" and "the statement does not list its columns" speak of SQL.
_DOCUMENTS = (
    r"(?:documents?|passages?|context|excerpts?|evidence|sources?|reports?|filings?|manuals?|guides?"
    r"|protocols?|financial\s+statements?|(?:given|provided|above)\s+(?:text|information|tables?|sections?))"
)
# "not specified" or "not available" is a refusal only when said of the documents or as the
# sentence's end ("The port is not specified."); "If the port is not specified, 5432 is used" and
# "the C collation, which is not available in this locale" are answers (a first sentence read as
# a refusal threw a whole answer away).
_SAID = r"(?:specified|provided|given|found|listed|available|included|described|documented)"
# "not explicitly mentioned", "not specifically stated": the adverb keeps a refusal a refusal.
_HEDGED = r"(?:(?:explicitly|specifically|directly|clearly|expressly)\s+)?"
_DOCUMENT_VERBS = (
    r"(?:say|state|answer|contain|mention|specify|provide|include|give|find|list|name|identify|disclose)"
)
_REFUSAL = re.compile(
    rf"\b{_DOCUMENTS}\b(?:\s+[\w,-]+){{0,3}}?\s+(?:do(?:es)?\s+not|don't|doesn't|did\s+not|cannot|can't)\s+"
    rf"{_DOCUMENT_VERBS}"
    r"|\b(?:I|we)\s+(?:do\s+not|don't|did\s+not|cannot|could\s+not|can't|am\s+unable\s+to)\s+"
    r"(?:say|answer|find|tell|determine|identify)\b"
    rf"|\bnot\s+{_HEDGED}(?:stated|mentioned|disclosed)\b"
    rf"|\bnot\s+{_HEDGED}{_SAID}\s+(?:in|by|within)\s+(?:the\s+|any\s+|these\s+)?"
    rf"(?:given\s+|provided\s+)?{_DOCUMENTS}"
    rf"|\b(?:is|are|was|were)\s+not\s+{_HEDGED}{_SAID}(?=\s*(?:[.!]|$))"
    r"|\bno\s+(?:information|mention|details?)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"“[^”]*”")
_BARE_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])?\s*$")
# A fenced code block: from a line opening with ``` to the line closing it, or to the end of a cut
# (or still streaming) reply; ``code`` is its text, ``end`` the closing fence when there is one.
CODE_BLOCK = re.compile(
    r"^[ \t]*```[^\n]*\n(?P<code>.*?)(?:^[ \t]*(?P<end>```)[ \t]*$|\Z)", re.MULTILINE | re.DOTALL
)
POLAR_OPENING = re.compile(r"^\W*(?:yes|no)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:['’.][a-z0-9]+)*")
# An answer is in the documents' own words when this share of its words that the question
# does not use stands in runs of at least SPAN_WORDS words copied from the passages it cites.
SPAN_WORDS = 3
OWN_WORDS_SHARE = 0.9
MIN_NEW_WORDS = 3  # fewer words beyond the question's say too little to judge by
LABEL_CHARS = 20  # a passage label this short or shorter ("Notes") may be a phrase of an answer


def in_the_documents_words(answer: str, question: str, evidence: Sequence[str]) -> bool:
    """Whether ``answer`` says what it says beyond the question in the evidence's own words
    (the passages as the model read them: title, headings and text):
    at least :data:`OWN_WORDS_SHARE` of its new words stand in runs of :data:`SPAN_WORDS` or
    more words copied verbatim from ``evidence``.

    Such an answer is grounded by construction, and code can tell so more reliably than a
    small model asked whether it is ("listed the findings: IN FLIGHT COLLISION WITH OBJECT ...
    OBJECT - TREE(S)" was judged unsupported by the 1.5B model). A "yes" or "no" opening is
    never the documents' word, so a polar answer is left to the grounding check; a word the
    answer changes ("admitted" for "admission") breaks its run.
    """
    if POLAR_OPENING.search(answer):
        return False
    words = _WORD.findall(MARKER.sub(" ", answer).lower())
    runs = set()
    for text in evidence:
        source = _WORD.findall(text.lower())
        runs.update(tuple(source[i : i + SPAN_WORDS]) for i in range(len(source) - SPAN_WORDS + 1))
    copied = [False] * len(words)
    for i in range(len(words) - SPAN_WORDS + 1):
        if tuple(words[i : i + SPAN_WORDS]) in runs:
            copied[i : i + SPAN_WORDS] = [True] * SPAN_WORDS
    asked = set(analyze(question))
    new = [i for i, word in enumerate(words) if (terms := analyze(word)) and terms[0] not in asked]
    return len(new) >= MIN_NEW_WORDS and sum(copied[i] for i in new) >= OWN_WORDS_SHARE * len(new)


def says_documents_do_not_answer(reply: str) -> bool:
    """Whether a reply says the evidence does not answer the question; the documents' own words
    quoted in it (“...”) are not the reply's ("the wreckage did not reveal ...")."""
    return bool(_REFUSAL.search(blank_markers(_QUOTED.sub(" ", reply))))


def answer_sentences(reply: str) -> list[str]:
    """The reply's sentences, each with the citations written after its full stop ("... 2023. [2]").

    A fenced code block (a command, a configuration file) is one sentence with its lines as
    written, closed if the reply was cut inside it: judged whole, since a block missing a line
    is a wrong command, and shown as a block, not as its lines run together."""
    sentences: list[str] = []
    for prose, block in _prose_and_code(reply):
        for sentence in split_sentences(prose):
            leading = LEADING_MARKERS.match(sentence)
            if leading and sentences:
                sentences[-1] = f"{sentences[-1]} {leading.group().strip()}"
                sentence = sentence[leading.end() :]
            if not _BARE_LIST_MARKER.match(sentence):  # blank, or the "3." of a cut reply
                sentences.append(sentence.strip())
        if block:
            sentences.append(block)
    return sentences


def _prose_and_code(reply: str) -> list[tuple[str, str]]:
    """``reply`` as (prose, the fenced code block after it) pairs; the last block may be empty."""
    parts: list[tuple[str, str]] = []
    start = 0
    for fence in CODE_BLOCK.finditer(reply):
        block = fence.group().strip()
        parts.append((reply[start : fence.start()], block if fence.group("end") else f"{block}\n```"))
        start = fence.end()
    parts.append((reply[start:], ""))
    return parts


def is_code_block(sentence: str) -> bool:
    """Whether an answer sentence is a fenced code block (see :func:`answer_sentences`)."""
    return sentence.startswith("```")


def joined_sentences(sentences: Sequence[str]) -> str:
    """Kept sentences as one text: a list item on a line of its own (a procedure's steps), a code
    block on lines of its own, the numbered items numbered again in order (once a step is dropped,
    "2." and "4." would be left)."""
    text, previous = "", ""
    for sentence in _numbered_in_order(sentences):
        if not text:
            text = sentence
        elif is_list_item(sentence) or is_code_block(sentence) or is_code_block(previous):
            text += "\n" + sentence
        else:
            text += " " + sentence
        previous = sentence
    return text


def says_nothing_new(text: str, question: str, evidence: Sequence[str]) -> bool:
    """Whether ``text`` names nothing from ``evidence`` that the question did not already say.

    A figure counts, and so does any content word of the evidence the question does not use;
    "Yes, the company announced a major acquisition [1]" has neither.
    """
    if figures(text):
        return False
    asked = set(analyze(question))
    found = set(analyze("\n".join(evidence)))
    said = {t for t in analyze(blank_markers(text)) if not t.isdigit()}
    return not (said - asked) & found


def echoes(sentence: str, question: str) -> bool:
    """Whether ``sentence`` says nothing but the question's own words ("Yes, there are notable
    changes in Apple's liquidity as reported in these 10-Qs."): a restatement, however long. A
    figure the question does not state is news ("The default is 4.0" to "what's the default?")."""
    text = blank_markers(POLAR_OPENING.sub("", sentence))
    if figures(text) - figures(question):
        return False
    said = set(analyze(text))
    return bool(said) and said <= set(analyze(question))


def without_the_echo(sentence: str, question: str) -> str:
    """A polar sentence that otherwise only restates the question, as its "Yes." or "No." alone
    (with its citations): the answer kept, the restatement's length not."""
    polar = POLAR_OPENING.match(sentence)
    if polar is None or not echoes(sentence, question):
        return sentence
    markers = "".join(marker(int(n)) for n in MARKER.findall(sentence))
    return f"{polar.group().strip().capitalize()}.{' ' + markers if markers else ''}"


def under_label_headings(reply: str, labels: Sequence[str], question: str) -> str | None:
    """``reply`` less the passage labels it wrote as headings, with their markers; None when it
    wrote none, or when the words under them share no word with the question.

    A small model sometimes lays its answer out as its prompt is laid out: "[2] data analysis plan
    — Measure, p. 5: HRQOL was measured using the SF-12". A label that opens a line (after its
    markers only) is that layout; the words under it are the answer in the passage's own words,
    to be cited and judged like any sentence. Words under it that say nothing of the question are
    the prompt echoed, not an answer ("[1] Chapter 4. Authentication — 4.6.3. Extra security
    measures: Use of the firewall policy together with"). A label inside a sentence is left for
    :func:`copies_a_label`.
    """
    unlabelled = reply
    for label in (lab for lab in labels if len(lab) > LABEL_CHARS):
        heading = re.compile(r"\s+".join(map(re.escape, label.split())) + r"[ \t]*[:\u2014\u2013-]?\s*")
        kept, start = [], 0
        for found in heading.finditer(unlabelled):
            line_start = unlabelled.rfind("\n", 0, found.start()) + 1
            if line_start >= start and not blank_markers(unlabelled[line_start : found.start()]).strip():
                kept.append(unlabelled[start:line_start])
                start = found.end()
        unlabelled = "".join(kept) + unlabelled[start:]
    if unlabelled == reply or not set(analyze(blank_markers(unlabelled))) & set(analyze(question)):
        return None
    return unlabelled


def copies_a_label(reply: str, labels: Sequence[str]) -> bool:
    """Whether ``reply`` reproduces the label of a passage it read ("[1] Chapter 4. Authentication
    and access controls — 4.6.2. Secure Shell", then the passage): the model copied its prompt
    and wrote no answer. The sentence splitter cuts such a label at "Chapter 4.", so the reply
    is read whole; a label of ``LABEL_CHARS`` or fewer may be a phrase of an answer."""
    flat = " ".join(blank_markers(reply).split())
    return any(len(label) > LABEL_CHARS and " ".join(label.split()) in flat for label in labels)


_NUMBERED = re.compile(r"^(\d{1,2})([.)]\s)")


def _numbered_in_order(sentences: Sequence[str]) -> list[str]:
    """``sentences`` with their numbered items ("3. Restart the server.") numbered 1, 2, ... in
    order; an item the model numbered 1 starts a list again."""
    renumbered, number = [], 0
    for sentence in sentences:
        item = _NUMBERED.match(sentence)
        if item:
            number = 1 if item.group(1) == "1" else number + 1
            sentence = f"{number}{item.group(2)}{sentence[item.end() :]}"
        renumbered.append(sentence)
    return renumbered
