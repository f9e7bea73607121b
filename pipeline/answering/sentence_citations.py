"""Citations for an answer that cites nothing: each sentence gets the passage that carries its words.

The embedded 1.5B model seldom writes ``[n]``: on the techdocs tune half (28 November) 23 of
25 answers cited nothing, though most of them copy a setting, an option or a command from one
passage. Without a citation the reader cannot open the page a sentence comes from, the page
counts as not cited, and the quote that should carry the answer is sought among every passage
by shared words, where a heading or a neighbouring page's sentence often wins.

Here each prose sentence of such an answer gets the citation of the one passage that carries
its words: of the sentence's words that the question does not use (what it adds), each weighs
by how few passages hold it (a setting's name or a command stands in one or two passages,
"server" in all of them), and a passage carries the sentence when it holds at least
``CARRIED_SHARE`` of that weight and at least ``MIN_CARRIED_WORDS`` of the words. The best
such passage is cited, the higher-ranked on a tie. A sentence in the model's own words
("use dos2unix", which no passage names) carries no passage and stays uncited, and so does a
code block (the sentence that introduces it is cited). The figure check then reads the cited
passage, after :mod:`pipeline.answering.figure_citations` has cited the passage that states
each of the sentence's figures.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.answering.sentences import answer_sentences, is_code_block
from pipeline.citations import blank_markers, has_markers, marker
from pipeline.text import analyze

CARRIED_SHARE = 0.6  # of a sentence's new words' weight, that one passage must hold
MIN_CARRIED_WORDS = 2  # new words a passage must hold: one shared word is a coincidence
_CLOSING = ".!?:;"
_FENCE = "```"


@dataclass(frozen=True, slots=True)
class SentenceCitation:
    """A citation added to a sentence: its first words, and the passage's number."""

    sentence: str
    passage: int


def cite_sentence_sources(
    answer: str, evidence: Sequence[str], question: str
) -> tuple[str, list[SentenceCitation]]:
    """``answer`` with each of its sentences cited to the passage that carries it, when the answer
    cites none of ``evidence`` (each passage's label and text, numbered from 1); and the
    citations added. An answer that cites a passage is left as the model wrote it."""
    if has_markers(answer) or not evidence:
        return answer, []
    terms = [set(analyze(text)) for text in evidence]
    holding = Counter(term for passage_terms in terms for term in passage_terms)
    asked = set(analyze(question))
    added: list[SentenceCitation] = []
    start = 0
    for sentence in answer_sentences(answer):
        at = answer.find(sentence, start)
        if at < 0 or is_code_block(sentence) or _FENCE in sentence:  # a block begun inside a line
            continue
        written = sentence
        passage = _carrier(sentence, asked, terms, holding, len(evidence))
        if passage is not None:
            written = _with_marker(sentence, passage)
            answer = answer[:at] + written + answer[at + len(sentence) :]
            added.append(SentenceCitation(" ".join(sentence.split()[:8]), passage))
        start = at + len(written)
    return answer, added


def _carrier(
    sentence: str, asked: set[str], terms: Sequence[set[str]], holding: Counter[str], passages: int
) -> int | None:
    """The number of the passage that carries ``sentence``'s new words, or None (see the module)."""
    new = {t for t in analyze(blank_markers(sentence)) if t not in asked and not t[0].isdigit()}
    weight = {t: math.log((passages + 1) / (holding[t] + 0.5)) for t in new if t in holding}
    total = sum(weight.values()) + math.log((passages + 1) / 0.5) * len(new - weight.keys())
    if len(weight) < MIN_CARRIED_WORDS:
        return None
    best, best_value = None, 0.0
    for n, passage_terms in enumerate(terms, start=1):
        shared = [t for t in weight if t in passage_terms]
        value = sum(weight[t] for t in shared)
        if len(shared) >= MIN_CARRIED_WORDS and value > best_value:
            best, best_value = n, value
    return best if best_value >= CARRIED_SHARE * total else None


def _with_marker(sentence: str, passage: int) -> str:
    """``sentence`` with the passage's marker before its closing punctuation ("… 4.0 [2].")."""
    body = sentence.rstrip()
    end = len(body)
    while end and body[end - 1] in _CLOSING:
        end -= 1
    return f"{body[:end]} {marker(passage)}{body[end:]}{sentence[len(body) :]}"
