"""Quotable units: what of the evidence may stand under an answer, and which unit matches a text best.

The LLM writes the synthesis; the quotes under it are never typed by the LLM. Every unit of the
evidence the model read may be quoted (:func:`quote_candidates`): an evidence unit as it is, a
passage shown whole cut into its sentences and table rows (a line of fewer than three words,
a heading or a link's words, is none, and so is a sentence unit that short). A unit matches a
text (an answer, a question) by the figures it shares with it (the strongest signal: a figure
in the answer must stand in a quote), then by the words it shares (matched to the question,
each weighed by its rarity in the collection), with its innermost heading's words (the items
of a list under "Findings" rarely repeat the question's word), the retrieval score breaking
ties (:func:`best_matches`). A long unit is quoted by its sentences that answer
(:func:`excerpt`). Which units an answer quotes is
:func:`pipeline.answering.extractive.answering_quotes`'s choice.

A quote's text is a verbatim substring of its chunk (an excerpt: verbatim pieces joined by
" … "), so a quoted figure is exactly the document's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from pipeline.answering.particulars import given_in, particulars_weight
from pipeline.answering.quotable import names_a_part, says_enough
from pipeline.answers import Quote
from pipeline.figures import figures, stated_figures
from pipeline.retrieval.context import Passage
from pipeline.retrieval.ordering import split_sentences
from pipeline.text import analyze, is_contents_line
from pipeline.types import table_cells

SHARED_FIGURE_WEIGHT = 2.0  # a shared figure outweighs any number of shared words
RETRIEVAL_WEIGHT = 0.1  # the retrieval score only breaks ties
MIN_OVERLAP = 0.5  # shared words, over the square root of the unit's words, that make a match
TERM_SEPARATOR = " — "  # between a definition's term and its description (index_build.docling_blocks)
# The cues of a negation: they turn what follows round (:mod:`pipeline.answering.polarity`).
NEGATION = re.compile(
    r"\b(?:not|no|never|none|neither|nor|cannot|can't|won't|isn't|aren't|wasn't|doesn't|didn't|"
    r"don't|shouldn't|mustn't|precludes?|prohibit(?:s|ed)?|excluded?|without)\b",
    re.IGNORECASE,
)


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


def excerpt(candidate: QuoteCandidate, match: str, limit: int) -> QuoteCandidate:
    """``candidate`` cut to about ``limit`` characters around what ``match`` asks for: its sentence
    that shares most words with ``match``, the one after it while there is room, and, for a
    definition ("term — description ..."), the term before them; the pieces are the document's
    own words, joined by " … ". A table row, and a unit within the limit, stay whole."""
    text = candidate.text
    if len(text) <= limit or text.lstrip().startswith("|"):
        return candidate
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return replace(candidate, text=text[:limit].rsplit(" ", 1)[0] + " …")
    wanted = content_words(match)
    best = max(range(len(sentences)), key=lambda i: (len(content_words(sentences[i]) & wanted), -i))
    term = sentences[0].split(TERM_SEPARATOR, 1)[0] + TERM_SEPARATOR if TERM_SEPARATOR in sentences[0] else ""
    pieces = [sentences[best]]
    for following in sentences[best + 1 :]:
        if sum(map(len, pieces)) + len(following) + len(term) > limit:
            break
        pieces.append(following)
    lead = f"{term}… " if best > 0 and term else ("… " if best > 0 else "")
    tail = " …" if best + len(pieces) < len(sentences) else ""
    return replace(candidate, text=f"{lead}{' '.join(pieces)}{tail}")


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
                # A heading, caption or pointer the chunk's text carries ("20.1. Setting
                # Parameters") matches an answer's words and answers nothing (quotable.py).
                quotable = unit.kind == "row" or says_enough(unit.text)
                if quotable and not is_contents_line(unit.text):
                    candidates.append(
                        QuoteCandidate(
                            n, source, unit.text, header, page, piece.score, len(candidates), heading
                        )
                    )
            else:
                lines = [line for line in piece.text.split("\n") if not names_a_part(line)]
                for sentence in split_sentences("\n".join(lines)):
                    if is_contents_line(sentence) or not says_enough(sentence):
                        continue
                    candidates.append(
                        QuoteCandidate(
                            n, source, sentence, "", first_page, piece.score, len(candidates), heading
                        )
                    )
    return candidates


def best_matches(
    text: str,
    units: Sequence[QuoteCandidate],
    pool: Collection[int],
    limit: int = 1,
    fallback: bool = False,
    given_figures: Collection[str] = (),
    rarity: Mapping[str, float] | None = None,
    asked: bool = False,
) -> list[QuoteCandidate]:
    """Up to ``limit`` units of the passages numbered in ``pool`` (all of ``units`` when none is)
    that match ``text``, best first: by shared figures (other than ``given_figures``: an answer
    repeating the question's "10 minutes" is not matched by "The default is 10"), then shared
    words (a unit's heading counts), the retrieval score breaking ties. With ``rarity`` (each
    word's rarity in the collection, :meth:`index_build.snapshot.IndexSnapshot.term_rarity`) a
    shared word counts by how rare it is against the other words of ``text``: "ifconfig" more
    than "use". Only a unit that shares a figure, or enough words, matches; with ``fallback``,
    when none does, the strongest unit by retrieval score.

    ``asked``: ``text`` is a question, and among the units that match it those that state
    particulars it does not hold (a setting, a command, a figure) rank higher
    (:func:`pipeline.answering.particulars.particulars_weight`): asked
    which setting or how, a manual answers with a name, an option or a value, where a sentence
    on the topic, sharing as many of the question's words, names none. They never make a unit match."""
    candidates = [u for u in units if u.n in pool] or list(units)
    if not candidates:
        return []
    wanted_figures = figures(text) - set(given_figures)
    wanted_terms = content_words(text)
    weight = word_weights(wanted_terms, rarity or {})
    top_retrieval = max(c.score for c in candidates) or 1.0

    def match(candidate: QuoteCandidate) -> tuple[float, int]:
        shared_figures = len(stated_figures(wanted_figures, figures(candidate.text)))
        terms = content_words(candidate.text)
        named = content_words(candidate.heading) - terms  # what its section's heading calls it
        shared = sum(weight[t] for t in wanted_terms & terms) + sum(weight[t] for t in wanted_terms & named)
        overlap = shared / math.sqrt(len(terms)) if terms else 0.0
        value = (
            SHARED_FIGURE_WEIGHT * shared_figures
            + overlap
            + RETRIEVAL_WEIGHT * candidate.score / top_retrieval
        )
        return value, shared_figures

    given = given_in(text) if asked else set()

    def particulars(candidate: QuoteCandidate) -> float:
        return particulars_weight(candidate.text, given) if asked else 0.0

    scored = [(c, *match(c)) for c in candidates]
    relevant = [(c, v + particulars(c)) for c, v, f in scored if f > 0 or v > RETRIEVAL_WEIGHT + MIN_OVERLAP]
    relevant.sort(key=lambda item: (-item[1], item[0].position))
    if relevant:
        return [c for c, _ in relevant[:limit]]
    if not fallback:
        return []
    return sorted(candidates, key=lambda c: (-c.score, c.position))[:limit]


def word_weights(words: AbstractSet[str], rarity: Mapping[str, float]) -> dict[str, float]:
    """Each of ``words`` weighed by its ``rarity`` over the mean rarity of those ``rarity`` knows
    (a word of average rarity counts 1, as every word does without ``rarity``)."""
    known = [rarity[w] for w in words if w in rarity]
    mean = sum(known) / len(known) if known else 0.0
    return {w: rarity[w] / mean if w in rarity and mean > 0 else 1.0 for w in words}


QUOTE_LIMIT = 3  # quotes under an answer: each one that answers, never a dump of the context
RESTATED_SHARE = 0.75  # of a unit's words in the question: the user's own text, pasted back
MIN_RESTATED_WORDS = 4  # a shorter unit ("the default is 100") may well be all in the question


def restates(asked: AbstractSet[str], unit: QuoteCandidate) -> bool:
    """Whether ``unit`` is what the question itself quotes (the error message or the hint a user
    pasted, the clause they ask about), ``asked`` being the question's :func:`content_words`: it
    is the question's premise, not evidence of its answer, and nothing to show the user again.
    Matched against the question, it is the best match by construction ("HINT: Stop the
    postmaster ..." for "the HINT says stop the postmaster ... is that really what we should
    do?"), above the sentence that answers ("Contrary to what the hint states, it is not
    necessary ..."). A unit with a figure is never one: its figures may be the answer (the row
    "Employee Engagement Index - HUD | 61.40 | ..." for "HUD's employee engagement index target")."""
    words = content_words(unit.text)
    return (
        len(words) >= MIN_RESTATED_WORDS
        and len(words & asked) >= RESTATED_SHARE * len(words)
        and not figures(unit.text)
    )


def not_restating(question: str, units: Sequence[QuoteCandidate]) -> list[QuoteCandidate]:
    """``units`` less those that :func:`restates` ``question``: the evidence, not the user's own words."""
    asked = content_words(question)
    return [u for u in units if not restates(asked, u)]


REPEATED_SHARE = 0.8  # of the longer unit's words in the shorter: the same statement set twice


def repeats(said: AbstractSet[str], unit: QuoteCandidate) -> bool:
    """Whether ``unit`` says again what a unit whose :func:`analyze` terms are ``said`` says: the
    words and figures of one are the other's, all but a few (a manual's caution set twice, once
    as a boxed table cell "[Caution] | Since the debsums package ...", once as text)."""
    words = set(analyze(unit.text))
    shorter, longer = sorted((words, said), key=len)
    return len(shorter) >= max(MIN_RESTATED_WORDS, REPEATED_SHARE * len(longer)) and shorter <= longer


def said_in(answer: str, quote: QuoteCandidate) -> bool:
    """Whether ``answer`` already says what ``quote`` says, in the document's words: each of its
    words, figures and negations is the answer's (the model copied the sentence, "HRQOL was
    measured using the Short Form Health Survey 12 (SF-12)"). Shown under the answer, such a quote
    only says it again; its passage stays cited. A quote saying one thing more ("… if your database
    does not use the C locale"), or saying "not" where the answer does not, is still shown."""
    words = set(analyze(quote.text))
    cues = {cue.lower() for cue in NEGATION.findall(quote.text)}
    return (
        len(words) >= MIN_RESTATED_WORDS
        and words <= set(analyze(answer))
        and figures(quote.text) <= figures(answer)
        and cues <= {cue.lower() for cue in NEGATION.findall(answer)}
    )


def bearing_on(answer: str, question: str, quotes: Sequence[QuoteCandidate]) -> list[QuoteCandidate]:
    """The ``quotes`` that bear on ``answer``: each shares a word or a figure with it, or is a
    table row whose label the question names (a question on spending against revenue is answered
    by the revenue row, whatever the answer says of it). Chosen for the question's words, a quote
    may match only the words that say which document is meant ("the VR upper-limb tetraplegia
    study": the protocol's "Secondary Objective" under the unit's address; an accident report's
    header under its probable cause; a filing's page footer): under an answer it supports, it
    says nothing. Two things keep what answers the question: an answer that shares no word with
    the question answers another one, and keeps every quote ("The airplane was substantially
    damaged" for the pilot's flight hours); and one quote stands under any answer, the first, when
    none bears on it."""
    said, said_figures, asked = content_words(answer), figures(answer), content_words(question)
    if not said & asked:
        return list(quotes)
    bearing = [
        q
        for q in quotes
        if content_words(q.text) & said
        or stated_figures(said_figures, figures(q.text))
        or (q.table_header and content_words(first_cell(q)) & asked)
    ]
    return bearing or list(quotes[:1])


def first_cell(unit: QuoteCandidate) -> str:
    """A row's label: the first cell of its first line."""
    return table_cells(unit.text.strip().split("\n")[0])[0]


QUOTE_CHARS = 400  # characters the quotes under an answer hold together, about, when they stand alone


MIN_QUOTE_CHARS = 80  # a quote is cut no shorter; less room left than this ends the quotes


def answering_quotes(
    question: str,
    answer: str,
    passages: Sequence[Passage],
    units: Sequence[QuoteCandidate] | None = None,
    cited: Collection[int] = (),
    limit: int = QUOTE_LIMIT,
    chars: int = QUOTE_CHARS,
    rarity: Mapping[str, float] | None = None,
    leading: QuoteCandidate | None = None,
) -> list[QuoteCandidate]:
    """At most ``limit`` units of ``passages`` that answer, in reading order, none twice:

    0. ``leading``, when given, whatever else matches (the unit that says no to a "yes");
    1. the one that best matches ``question`` in all the passages (a small model often cites the
       neighbouring passage: the unit that answers is quoted whatever the answer cites), its
       words weighed by their ``rarity`` in the collection; the question's own figures are what
       the user already knows ("the path MTU is 1460"), so they do not make a match;
    2. the next ones in that unit's document, each matching first what the quotes leave of the
       question, else the question again (deeper before wider: another document's unit would
       answer a question not asked, another period's row for a question that names its period);
    3. with room left, the one that best carries ``answer`` among the passages it cites (its
       figures first, then its words): the evidence of the model's claim. It came first until
       29 November; what answers the question now does, since what an answer's words match may
       be what the answer already says, or a page's footer (dev tune halves, whole reply's
       facts: techdocs 0.529 → 0.580, SEC 0.110 → 0.165, manual-qa 0.889 unchanged);
    4. with room left, the strongest unit by retrieval score, when the search ranked it above
       every unit quoted and it shares a word with the question (word matching misses
       "acquired" for "acquisitions"; the search's ranking may not).

    Together they hold about ``chars`` characters: a long unit is cut to its sentences that
    answer (:func:`pipeline.answering.quotes.excerpt`), and no further quote is added once less than
    ``MIN_QUOTE_CHARS`` of the room is left. A unit that matches nothing fills no slot.
    """
    asked = content_words(question)
    units = not_restating(question, quote_candidates(passages) if units is None else units)
    if not units or limit <= 0:
        return []
    chosen: list[QuoteCandidate] = []
    whole: list[QuoteCandidate] = []  # the chosen units before they were cut
    room = chars

    def add(found: Sequence[QuoteCandidate]) -> bool:
        nonlocal room
        if not found or len(chosen) >= limit or (chosen and room < MIN_QUOTE_CHARS):
            return False
        quote = excerpt(found[0], f"{question}\n{answer}", max(room, MIN_QUOTE_CHARS))
        room -= len(readable_unit(quote))  # as shown: a table row with its column labels
        whole.append(found[0])
        chosen.append(quote)
        said = set(analyze(found[0].text))  # neither it nor what says it again is quoted twice
        units[:] = [u for u in units if u != found[0] and not repeats(said, u)]
        return True

    def best(
        text: str,
        pool: Collection[int],
        fallback: bool = False,
        same_source: str = "",
        given: Collection[str] = (),
        weights: Mapping[str, float] | None = None,
        asked: bool = False,
    ) -> bool:
        rest = [u for u in units if not same_source or u.source == same_source]
        if not text.strip() or not rest:
            return False
        return add(
            best_matches(
                text, rest, pool, fallback=fallback, given_figures=given, rarity=weights, asked=asked
            )
        )

    if leading is not None:  # as a unit, though it may come cut: it is not quoted twice
        add([next((u for u in units if u.position == leading.position), leading)])
    everything = range(1, len(passages) + 1)
    premise = figures(question)  # the user's own figures: no match for the answer or the question
    if best(question, everything, fallback=not answer, given=premise, weights=rarity, asked=True):
        source = whole[-1].source
        while True:
            covered = set().union(*(content_words(f"{c.text}\n{c.table_header}") for c in whole))
            rest_of_it = " ".join(sorted(content_words(question) - covered))
            if not (
                best(rest_of_it, everything, same_source=source)
                or best(question, everything, same_source=source, given=premise, weights=rarity, asked=True)
            ):
                break
    pool = cited or everything  # what the answer rests on; once all of it is quoted, nothing more
    if answer and any(u.n in pool for u in units):
        best(answer, pool, given=premise, fallback=not chosen)
    strongest = sorted(units, key=lambda u: (-u.score, u.position))[:1]
    if strongest and strongest[0].score > max((u.score for u in whole), default=float("-inf")):
        add([u for u in strongest if content_words(u.text) & asked])
    return sorted(chosen, key=lambda c: c.position)


def readable_unit(quote: QuoteCandidate) -> str:
    """A quoted unit for people: a table row as ``label — column: value; ...``, else its text."""
    return Quote(
        quote.n, quote.text, quote.source, (quote.page, quote.page), (), "", quote.table_header
    ).readable()
