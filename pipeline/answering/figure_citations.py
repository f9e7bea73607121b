"""Citations for figures the answer takes from a passage it forgot to cite.

A small model often writes a figure exactly as one numbered passage states it but cites its
neighbour ("$806 million [2]" where passage 1 holds the row). The figure is then traceable to
the documents' words, only not through the answer's citations, and the figure check would
reject an answer a reader could verify. Here each such figure gets a citation of the passage
that states it, added at the end of the sentence that first writes it, so the check, the
quoted evidence and the reader all look at the passage that says it. A figure that no passage
states is left alone: the check still rejects it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.citations import MARKERS_AFTER, marker
from pipeline.figures import all_numbers, as_written, figure_spans, stated_figures, unstated_figures
from pipeline.text import analyze

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")  # a line of a list ends its item


@dataclass(frozen=True, slots=True)
class AddedCitation:
    """A citation added for a figure: the figure as the answer writes it, and the passage's number."""

    figure: str
    passage: int


def cite_figure_sources(
    answer: str, evidence: Sequence[str], cited: set[int]
) -> tuple[str, list[AddedCitation]]:
    """``answer`` with a citation added for each figure that the passages it cites (``cited``,
    numbers into ``evidence``, which holds each passage's text as the figure check reads it)
    do not state but another passage does; and the citations added.

    When several passages state a figure, the one chosen states the most of the answer's
    uncited figures, then shares the most words with the sentence, then ranks first, so that
    one added citation covers as much as it can. An answer that cites nothing is left as it
    is (the check then reads every passage).
    """
    if not cited:
        return answer, []
    cited_text = "\n".join(evidence[n - 1] for n in sorted(cited))
    uncited = unstated_figures(answer, cited_text)
    if not uncited:
        return answer, []
    numbers = {n: all_numbers(text) for n, text in enumerate(evidence, start=1) if n not in cited}
    stating = {n: stated_figures(uncited, known) for n, known in numbers.items()}
    passage_words = {n: set(analyze(evidence[n - 1])) for n, states in stating.items() if states}
    spans = figure_spans(answer, uncited)
    chosen: dict[str, int] = {}
    citations: list[AddedCitation] = []
    added: dict[int, list[int]] = {}  # insertion offset → passages
    for figure, (start, end) in sorted(spans.items(), key=lambda item: item[1]):
        candidates = [n for n, states in stating.items() if figure in states]
        if not candidates:
            continue
        already = [n for n in candidates if n in chosen.values()]
        words = set(analyze(_sentence(answer, start)))
        passage = chosen[figure] = min(
            already or candidates,
            key=lambda n: (-len(stating[n] - chosen.keys()), -len(words & passage_words[n]), n),
        )
        citations.append(AddedCitation(as_written(answer[start:end]), passage))
        at = _marker_offset(answer, end)
        if passage not in added.setdefault(at, []):
            added[at].append(passage)
    for at in sorted(added, reverse=True):
        markers = "".join(marker(n) for n in added[at])
        answer = answer[:at] + ("" if answer[:at].endswith("]") else " ") + markers + answer[at:]
    return answer, citations


def _sentence(text: str, at: int) -> str:
    """The sentence of ``text`` around offset ``at``."""
    start = max((m.end() for m in _SENTENCE_END.finditer(text, 0, at)), default=0)
    end = _SENTENCE_END.search(text, at)
    return text[start : end.start() if end else len(text)]


def _marker_offset(text: str, at: int) -> int:
    """Where a citation for the sentence that holds offset ``at`` goes: after the citations that
    follow its full stop (". [1][2]"), else before the full stop (or the end of its line),
    after any citations there."""
    end = _SENTENCE_END.search(text, at)
    if end is None:
        return len(text.rstrip())
    if end.group() == "\n":
        return len(text[: end.start()].rstrip())
    after = MARKERS_AFTER.match(text, end.end())
    return after.end() if after else end.start()
