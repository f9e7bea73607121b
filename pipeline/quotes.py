"""Quoted evidence: the few units of the context that carry an answer, in the document's words.

The LLM writes the synthesis; the quotes under it are never typed by the LLM. They are
chosen from the evidence units of the passages the answer cites, by matching the figures
the answer states (the strongest signal: a figure in the answer must stand in a quote)
and the words it uses, with the retrieval score breaking ties. Each cited passage gets its
best-matching unit first, then the other matching units. Slots still free go to the
strongest evidence of the whole context by its retrieval score, cited or not: a small model
may cite the wrong row ("net income" for operating expenses), and the user should still see
the rows the search found for the question. Replayed on the 13 answered SEC questions of an
agent run (16 questions, embedded model), the gold figures in the quotes rose from 0.13 to
0.40 (the context held 0.77). The units matching the answer take at most three of the five
slots, so that the strongest evidence always has two: a wrong answer's words match many
rows ("earnings" brings "Basic earnings per share") that would otherwise fill every slot.
Replayed on the 65 answers of a full agent run, answer + quote figure recall rose from 0.468
to 0.517 (reserving one slot: 0.508, three: 0.525). That fill reaches each document of the context before a
second unit of one (a question over several periods sees each period), and skips a unit
whose figures are all quoted already (a filing restates its income statement's rows in
its notes and its discussion). A passage shown whole (not as units) is split into sentences
and table rows on the spot; either way a quote's text is a verbatim substring of its chunk,
so a quoted figure is exactly the document's.
When there is no answer to match (it could not be verified), the same fill quotes the
closest evidence found.

A unit is matched with its innermost heading's words too: the items of a list or the rows
under "Findings" or "Inclusion Criteria" rarely repeat the word the question asks for
("What findings did the NTSB list?"), where a boilerplate note about "NTSB reports" does.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pipeline.context import Passage
from pipeline.figures import figures, stated_figures
from pipeline.ordering import split_sentences
from pipeline.text import analyze, is_contents_line

MAX_QUOTES = 5
STRONGEST_EVIDENCE_SLOTS = 2  # of MAX_QUOTES, kept from the units that match the answer
FIGURE_WEIGHT = 2.0
RETRIEVAL_WEIGHT = 0.1
BEST_MATCHES = 2  # units quoted for matching the question best, whatever the answer cites


@dataclass(frozen=True, slots=True)
class QuoteCandidate:
    """A unit that may be quoted: its passage number, verbatim text, table header and page,
    and the innermost heading it stands under (matched, never quoted)."""

    n: int
    source: str
    text: str
    table_header: str
    page: int
    score: float
    position: int
    heading: str = ""


def content_words(text: str) -> set[str]:
    """Stemmed words without numbers: figures are matched on their own, and would only dilute the overlap."""
    return {t for t in analyze(text) if not t[0].isdigit()}


def quote_candidates(passages: Sequence[Passage]) -> list[QuoteCandidate]:
    """Every quotable unit of ``passages`` (numbered from 1), in passage and reading order; a
    table-of-contents entry is not quotable."""
    candidates = []
    for n, passage in enumerate(passages, start=1):
        source, first_page = passage.chunk.source, passage.chunk.pages[0]
        for piece in passage.pieces:
            heading = piece.chunk.heading_path[-1] if piece.chunk.heading_path else ""
            if piece.unit is not None:
                unit = piece.unit
                header = (
                    "\n".join(x for x in (unit.table_header, unit.row_group) if x)
                    if unit.kind == "row"
                    else ""
                )
                page = unit.page or first_page
                if not is_contents_line(unit.text):
                    candidates.append(
                        QuoteCandidate(
                            n, source, unit.text, header, page, piece.score, len(candidates), heading
                        )
                    )
            else:
                for sentence in split_sentences(piece.text):
                    if is_contents_line(sentence):
                        continue
                    candidates.append(
                        QuoteCandidate(
                            n, source, sentence, "", first_page, piece.score, len(candidates), heading
                        )
                    )
    return candidates


def choose_quotes(
    answer: str | None,
    passages: Sequence[Passage],
    cited: Collection[int],
    limit: int = MAX_QUOTES,
    strongest_slots: int = STRONGEST_EVIDENCE_SLOTS,
    fill: bool = True,
    units: Sequence[QuoteCandidate] | None = None,
    strongest_when_none_match: bool = True,
) -> list[QuoteCandidate]:
    """Up to ``limit`` units that carry ``answer``, ``strongest_slots`` of them kept for the
    strongest evidence; see the module docstring. Without ``fill``, only the units that match
    the answer (the strongest evidence when none does, unless ``strongest_when_none_match`` is
    off). ``units`` are ``passages``' quotable units when the caller has them already."""
    candidates = quote_candidates(passages) if units is None else units
    if not candidates:
        return []
    if answer is None:
        return _add_strongest_evidence([], candidates, limit)
    pool = [c for c in candidates if c.n in cited] or candidates
    answer_figures = figures(answer)
    answer_terms = content_words(answer)
    top_retrieval = max(c.score for c in pool) or 1.0

    def match(candidate: QuoteCandidate) -> tuple[float, int]:
        shared_figures = len(stated_figures(answer_figures, figures(candidate.text)))
        terms = content_words(candidate.text)
        named = content_words(candidate.heading) - terms  # what its section's heading calls it
        shared = len(answer_terms & terms) + len(answer_terms & named)
        overlap = shared / math.sqrt(len(terms)) if terms else 0.0
        value = FIGURE_WEIGHT * shared_figures + overlap + RETRIEVAL_WEIGHT * candidate.score / top_retrieval
        return value, shared_figures

    scored = [(c, *match(c)) for c in pool]
    relevant = [(c, v, f) for c, v, f in scored if f > 0 or v > RETRIEVAL_WEIGHT + 0.5]
    relevant.sort(key=lambda item: -item[1])
    best_of_passage: dict[int, QuoteCandidate] = {}
    for candidate, _, _ in relevant:  # each cited passage's best unit first
        best_of_passage.setdefault(candidate.n, candidate)
    answer_limit = max(1, limit - strongest_slots)
    chosen = list(best_of_passage.values())[:answer_limit]
    for candidate, _, _ in relevant:
        if len(chosen) >= answer_limit:
            break
        if candidate not in chosen and all(candidate.text != c.text for c in chosen):
            chosen.append(candidate)
    if not fill and (chosen or not strongest_when_none_match):
        return sorted(chosen, key=lambda c: c.position)
    return _add_strongest_evidence(chosen, candidates, limit)


def with_strongest_unit(
    chosen: list[QuoteCandidate], passages: Sequence[Passage], units: Sequence[QuoteCandidate] | None = None
) -> list[QuoteCandidate]:
    """``chosen`` and the strongest unit of the whole context by retrieval score, unless it is
    quoted already or states only figures quoted already; in reading order.

    The units the model's answer points to are the model's reading; the strongest unit is the
    search's. A small model often cites the neighbouring passage (the inventory provisions for
    a question about inventories), so the answer leads with both.
    """
    candidates = quote_candidates(passages) if units is None else units
    if not candidates:
        return chosen
    quoted_figures = set().union(*(figures(c.text) for c in chosen))
    strongest = max(candidates, key=lambda c: (c.score, -c.position))
    stated = figures(strongest.text)
    if any(strongest.text == c.text for c in chosen) or (stated and stated <= quoted_figures):
        return chosen
    return sorted([*chosen, strongest], key=lambda c: c.position)


def with_best_match(
    question: str,
    chosen: list[QuoteCandidate],
    passages: Sequence[Passage],
    units: Sequence[QuoteCandidate] | None = None,
    count: int = BEST_MATCHES,
) -> list[QuoteCandidate]:
    """``chosen`` and the unit of the whole context that best matches ``question`` (its words, its
    heading's), then the best of the rest of its document that matches it too, up to ``count``
    units, those not quoted already; in reading order.

    The quotes follow the passages the answer cites and the words it uses; the unit that
    answers may stand in a passage it did not cite ("How experienced was the pilot?": the
    pilot's certificate and age), and the model's words may lead the quotes astray (an answer
    on AWS's operating income, for a question on AWS's revenue). Replayed on the kept
    sentences of three manual-qa dev runs, the best unit raised the must-have phrases in the
    answer text by 0.047 in each (0.731 → 0.778 on the latest), for about 100 more characters;
    SEC dev answers kept their figures. The second is the best of the rest of that unit's
    document, if it matches the question too (26 November, replayed on the first drafts of a
    full SEC dev run, 65 questions, and of a manual-qa dev run): SEC gold figures in the answer
    text 0.389 → 0.433, for 100 more characters; manual-qa unchanged (0.759, 37 more
    characters). The second best of the whole context instead gave 0.417, and quoted another
    period's row for a question that named its period; a third of the whole context added 0.016
    on SEC for another 60 characters, nothing on manual-qa. The second matches first what the
    first leaves of the question (26 November, late evening, the same replay, 47 SEC questions
    with figures): "how did Intel's operational spending relate to its revenue" quoted the
    revenue row beside the operating expenses row (answer-text figures 0.480 → 0.487, 3
    characters shorter; manual-qa unchanged); a third unit so chosen gave 0.485, +100 characters.
    """
    candidates = quote_candidates(passages) if units is None else units
    best: list[QuoteCandidate] = []
    pool = range(1, len(passages) + 1)
    while len(best) < count:
        # The next best answers first what the quoted ones leave of the question (asked how
        # operating expenses compare with revenue: the revenue row after the expenses row), and
        # only when it matches the question: the strongest unit of the document is no answer to
        # it ("When are proposals due?" quoted the co-investigators' limit).
        rest = _rest_of_the_question(question, best) if best else ""
        found = (rest and _best_unit(rest, passages, pool, candidates, strongest_when_none_match=False)) or (
            _best_unit(question, passages, pool, candidates, strongest_when_none_match=not best)
        )
        if not found:
            break
        best.append(found[0])
        # Deeper in the best document before wider: a question that names its period is answered
        # by that period's filing, and another filing's row would answer a question not asked.
        candidates = [c for c in candidates if c.text != found[0].text]
        pool = {c.n for c in candidates if c.source == best[0].source}
        if not pool:  # choose_quotes would take the whole context instead
            break
    new = [unit for unit in best if all(unit.text != c.text for c in chosen)]
    return sorted([*chosen, *new], key=lambda c: c.position)


def _rest_of_the_question(question: str, quoted: Sequence[QuoteCandidate]) -> str:
    """The words of ``question`` that no ``quoted`` unit (nor its table's header) has, as one text;
    empty when there are none."""
    covered = set().union(*(content_words(f"{q.text}\n{q.table_header}") for q in quoted))
    return " ".join(sorted(term for term in content_words(question) if term not in covered))


def _best_unit(
    text: str,
    passages: Sequence[Passage],
    pool: Collection[int],
    candidates: Sequence[QuoteCandidate],
    strongest_when_none_match: bool,
) -> list[QuoteCandidate]:
    """The one unit of the passages in ``pool`` that best matches ``text`` (see :func:`choose_quotes`)."""
    return choose_quotes(
        text,
        passages,
        pool,
        1,
        strongest_slots=0,
        fill=False,
        units=candidates,
        strongest_when_none_match=strongest_when_none_match,
    )


def _add_strongest_evidence(
    chosen: list[QuoteCandidate], candidates: Sequence[QuoteCandidate], limit: int
) -> list[QuoteCandidate]:
    """``chosen`` filled up to ``limit`` by retrieval score: first from documents not quoted yet, then
    from any; a unit whose figures are all quoted already (the same row restated elsewhere in
    the filing) is skipped. Returned in reading order."""
    quoted_figures = set().union(*(figures(c.text) for c in chosen))
    ranked = sorted(candidates, key=lambda c: -c.score)
    for new_document_only in (True, False):
        for candidate in ranked:
            if len(chosen) >= limit:
                break
            if new_document_only and any(candidate.source == c.source for c in chosen):
                continue
            stated = figures(candidate.text)
            if (stated and stated <= quoted_figures) or any(candidate.text == c.text for c in chosen):
                continue
            chosen.append(candidate)
            quoted_figures |= stated
    return sorted(chosen, key=lambda c: c.position)
