"""Extractive-first answers: the documents' own words lead, and code decides what the model may add.

A small model paraphrases good evidence into vague or wrong sentences ("Yes, the company
announced a major acquisition [1]"). So the answer a user reads is built by code:

1. the model's reply is cut into sentences, and each is kept only if code can trace it to the
   evidence it cites: every figure stated by a cited unit or the question
   (:func:`pipeline.figures.unstated_figures`),
   no rise where the cited unit writes the number as a decrease ("a 3% increase" of a
   "Change: (3)%"), no figure of one table row written beside another row's label
   (:mod:`pipeline.row_labels`; the named row's cell is put in its place when the table says
   what it is of), and none from an earlier year's column than the one the
   sentence names (the right column's cell is put in its place: :mod:`pipeline.columns`),
   every name it writes (a capitalised word past the sentence's first, an
   acronym's expansion)
   found in the evidence or the question (a small model often cites the neighbouring passage;
   a wrong citation is not an invented name), and no "yes" where the evidence that answers
   the question says "not" / "no" / "precludes"; a sentence that leans on a dropped one
   ("This increase was offset ...") goes with it;
2. what is kept must say something the question did not: a figure, or a word of the evidence
   the question does not use. "Yes, OPM reported it [3]" says nothing and is dropped, and so
   are a question (the user's echoed, or one asked back) and a sentence that gives a
   passage's label (its document, heading and page) as the answer;
3. the answer then quotes the evidence units that carry it, in the document's words, under
   their citation numbers (a table row as its cells beside their column labels), chosen by
   :func:`pipeline.quotes.choose_quotes` from the passages the model cited, beside the
   strongest unit the search found (:func:`pipeline.quotes.with_strongest_unit`) and the two
   units that best match the question (:func:`pipeline.quotes.with_best_match`), the row the
   question names by its label (:mod:`pipeline.named_rows`), and, for a
   question that names no period, the same table rows (and notes) in the context's other documents
   (:mod:`pipeline.same_rows`). Nothing quoted is ever retyped by the model;
4. a share the question asks for ("what percentage of revenue …") is divided by code from two
   rows of the evidence, its inputs shown (:mod:`pipeline.ratios`), after the model's kept
   sentences or alone when none was kept. The same rows and a share's rows may come from evidence the
   model did not read (the agent quotes from a wider selection than its prompt holds).

A reply that opens by saying the documents do not answer is kept as such, with the nearest
evidence quoted, so that the user sees why (said later, it qualifies an answer and is kept).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pipeline.answers import Quote
from pipeline.citations import LEADING_MARKERS, MARKER, blank_markers, cited_numbers
from pipeline.columns import (
    ColumnFix,
    figures_for_named_rows,
    figures_from_earlier_columns,
    with_columns_fixed,
)
from pipeline.context import Passage
from pipeline.dated_figures import misdated_figures
from pipeline.figures import figures, rise_of_a_decrease, unstated_figures, written_forms
from pipeline.named_rows import row_the_question_names, rows_the_question_names
from pipeline.ordering import split_sentences
from pipeline.quotes import (
    QuoteCandidate,
    choose_quotes,
    quote_candidates,
    with_best_match,
    with_strongest_unit,
)
from pipeline.ratios import derived_ratio, printed_shares
from pipeline.row_labels import figures_from_other_rows
from pipeline.same_rows import same_rows_elsewhere
from pipeline.text import analyze

AnswerKind = Literal["answer", "quotes", "not_in_documents"]
LEAD_QUOTES = 3
NOT_IN_DOCUMENTS = "The documents do not say."
NEAREST_EVIDENCE = "The nearest they come:"
DOCUMENTS_SAY = "The documents say:"

_NAME_WORD = re.compile(r"(?<![\w'’-])[A-Z][\w'’&.-]*[A-Za-z]")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|neither|nor|cannot|can't|won't|isn't|aren't|wasn't|doesn't|didn't|"
    r"precludes?|prohibit(?:s|ed)?|excluded?|without)\b",
    re.IGNORECASE,
)
_OPENS_A_SENTENCE = re.compile(r"[.!?][\"”’)\]]*\s+$")  # a full stop and space before a word
_POSSESSIVE = re.compile(r"['’]s?$")
_YES = re.compile(r"^\W*yes\b", re.IGNORECASE)
_REFUSAL = re.compile(
    r"\b(?:do(?:es)?\s+not|don't|doesn't|did\s+not|cannot|could\s+not|can't)\s+"
    r"(?:say|state|answer|contain|mention|specify|provide|include|give|find|list|name|identify|disclose)"
    r"|\bnot\s+(?:stated|mentioned|specified|provided|given|found|disclosed|listed|available)\b"
    r"|\bno\s+(?:information|mention|details?)\b",
    re.IGNORECASE,
)
# "This increase was offset ...", "The strategic focuses of these investments ...": a sentence
# that opens with a pronoun, or points back within its first words, leans on the one before
# it, and goes when that one is dropped for a wrong claim (after an echoed question, "It is
# warmed up every six months" is the answer).
_LEANS_ON_THE_ONE_BEFORE = re.compile(
    r"\W*(?:it|they)\b|\W*(?:\S+\s+){0,4}(?:this|these|those|such)\b", re.IGNORECASE
)
_NOT_A_CLAIM = ("says_nothing", "label")
_MONTHS = frozenset(name.lower() for name in calendar.month_name if name)
_QUOTED = re.compile(r"“[^”]*”")
_POLAR = re.compile(r"^\W*(?:yes|no)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:['’.][a-z0-9]+)*")
# An answer is in the documents' own words when this share of its words that the question
# does not use stands in runs of at least SPAN_WORDS words copied from the passages it cites.
SPAN_WORDS = 3
OWN_WORDS_SHARE = 0.9
MIN_NEW_WORDS = 3  # fewer words beyond the question's say too little to judge by
_ASKS_FOR_A_DOCUMENT = re.compile(
    r"\b(?:document|report|source|protocol|manual|guide|publication|title|form|filing|paper)s?\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class DroppedSentence:
    """A sentence of the model's reply that code did not let through, and why."""

    sentence: str
    reason: Literal[
        "figure", "direction", "row", "column", "name", "negation", "label", "says_nothing", "dangling"
    ]
    detail: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ComposedAnswer:
    """The answer as the user reads it, what it is, what was dropped and the units it quotes."""

    text: str
    kind: AnswerKind
    kept: str  # the model's sentences that passed
    quotes: list[QuoteCandidate]
    dropped: list[DroppedSentence] = field(default_factory=list)
    corrected: list[str] = field(default_factory=list)  # figures code moved to the right column
    # A dropped sentence put forward a figure or a name that the passages it cites do not state:
    # the model filled a gap in the evidence (see :func:`offers_what_its_sources_lack`).
    filled_a_gap: bool = False


@dataclass(frozen=True, slots=True)
class _Reading:
    """What each sentence of a reply is checked against: the question, the numbered passages (as
    the model read them, and as quotable units), the passages the reply cites."""

    question: str
    passages: Sequence[Passage]
    evidence: dict[int, str]
    units: Sequence[QuoteCandidate]
    cited: Collection[int]
    check_figures: bool

    def cited_by(self, sentence: str) -> set[int]:
        """The passages ``sentence`` rests on (:func:`_cited_by`)."""
        return _cited_by(sentence, self.cited, self.passages)

    def stated_by(self, sentence: str) -> str:
        """The text of the passages ``sentence`` rests on, as the model read them."""
        return "\n".join(self.evidence[n] for n in sorted(self.cited_by(sentence)))

    def units_cited_by(self, sentence: str) -> list[QuoteCandidate]:
        own = self.cited_by(sentence)
        return [u for u in self.units if u.n in own]


def compose_answer(
    question: str,
    reply: str,
    passages: Sequence[Passage],
    lead_quotes: int = LEAD_QUOTES,
    check_figures: bool = True,
    read: int | None = None,
) -> ComposedAnswer:
    """The extractive-first answer built from the model's ``reply``; see the module docstring.

    Without ``check_figures`` a figure no cited unit states is let through (names, negations
    and saying something new are still checked). The model read the first ``read`` passages
    (all by default); the others may be quoted, never cited by the model.
    """
    model_read = passages if read is None else passages[:read]
    cited = cited_numbers(reply, len(model_read))
    sentences = answer_sentences(reply)
    units = quote_candidates(passages)
    if sentences and says_documents_do_not_answer(sentences[0]):  # later, it qualifies an answer
        if rows_the_question_names(question, units):  # they do say it: not an answer to show
            return ComposedAnswer("", "quotes", "", [], [DroppedSentence(sentences[0], "says_nothing")])
        nearest = choose_quotes(None, passages, (), limit=2)
        text = "\n".join([f"{NOT_IN_DOCUMENTS} {NEAREST_EVIDENCE}", *_quote_lines(nearest)])
        return ComposedAnswer(text, "not_in_documents", "", nearest)
    evidence = {n: _evidence(passages[n - 1]) for n in range(1, len(passages) + 1)}
    reading = _Reading(question, model_read, evidence, units, cited, check_figures)
    kept: list[str] = []
    dropped: list[DroppedSentence] = []
    corrected: list[str] = []
    after_a_drop = False
    for sentence in sentences:
        problem, placed, fixes = _judged(sentence, reading, after_a_drop)
        after_a_drop = problem is not None and problem.reason not in _NOT_A_CLAIM
        if problem is None:
            kept.append(placed)
            corrected += [fix.describe() for fix in fixes]
        else:
            dropped.append(problem)
    kept_text = " ".join(kept)
    kept_evidence = [evidence[n] for n in sorted(cited_numbers(kept_text, len(model_read)) or cited)]
    if kept and says_nothing_new(kept_text, question, kept_evidence):
        dropped += [DroppedSentence(s, "says_nothing") for s in kept]
        kept, kept_text = [], ""
    kept_cited = cited_numbers(kept_text, len(model_read)) or cited
    read_units = [u for u in units if u.n <= len(model_read)]
    answering = choose_quotes(
        f"{question}\n{kept_text}",
        model_read,
        kept_cited,
        lead_quotes,
        strongest_slots=0,
        fill=False,
        units=read_units,
    )
    strongest = with_strongest_unit(answering, model_read, read_units)
    quotes = with_best_match(question, strongest, model_read, read_units)
    derivation, quotes = _with_rows_code_finds(question, quotes, units)
    if derivation:  # a share code derived from two cited cells answers what it asks
        kept_text = "\n".join([kept_text, derivation]).strip()
    lines = _quote_lines(quotes)
    gap = any(offers_what_its_sources_lack(d.sentence, reading) for d in dropped)
    if kept_text:
        return ComposedAnswer(
            "\n".join([kept_text, "", *lines]), "answer", kept_text, quotes, dropped, corrected, gap
        )
    return ComposedAnswer("\n".join([DOCUMENTS_SAY, *lines]), "quotes", "", quotes, dropped, corrected, gap)


def quoted_evidence(
    question: str, passages: Sequence[Passage], lead: str, limit: int = LEAD_QUOTES, read: int | None = None
) -> ComposedAnswer:
    """The evidence that best matches the question, quoted under ``lead``: what the user gets
    when no answer of the model's could be verified. The best matches come from the first
    ``read`` passages (those the search ranked for the model; all by default), the same rows
    of other periods and the shares derived by code from all."""
    units = quote_candidates(passages)
    model_read = passages if read is None else passages[:read]
    best = range(1, len(model_read) + 1)
    quotes = choose_quotes(
        question,
        model_read,
        best,
        limit,
        strongest_slots=0,
        fill=False,
        units=[u for u in units if u.n in best],
    )
    derivation, quotes = _with_rows_code_finds(question, quotes, units)
    named_rows = {unit.text for unit in rows_the_question_names(question, units)}
    if derivation or any(q.text in named_rows for q in quotes):
        lead = DOCUMENTS_SAY  # code found what the question names: the documents do say it
    lines = [lead, *([derivation] if derivation else []), *_quote_lines(quotes)]
    return ComposedAnswer("\n".join(lines), "quotes", "", quotes)


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
    if _POLAR.search(answer):
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
    return bool(_REFUSAL.search(_QUOTED.sub(" ", reply)))


def answer_sentences(reply: str) -> list[str]:
    """The reply's sentences, each with the citations written after its full stop ("... 2023. [2]")."""
    sentences: list[str] = []
    for sentence in split_sentences(reply):
        leading = LEADING_MARKERS.match(sentence)
        if leading and sentences:
            sentences[-1] = f"{sentences[-1]} {leading.group().strip()}"
            sentence = sentence[leading.end() :]
        if sentence.strip():
            sentences.append(sentence.strip())
    return sentences


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


def _judged(
    sentence: str, reading: _Reading, after_a_drop: bool
) -> tuple[DroppedSentence | None, str, list[ColumnFix]]:
    """Why ``sentence`` cannot stand (None when it can), the sentence as it stands once its
    figures are moved to the right column (:mod:`pipeline.columns`), and those moves."""
    if after_a_drop and _LEANS_ON_THE_ONE_BEFORE.match(sentence):
        return DroppedSentence(sentence, "dangling"), sentence, []
    own_units = reading.units_cited_by(sentence)
    if reading.check_figures and (misdated := misdated_figures(sentence, own_units)):
        return DroppedSentence(sentence, "column", tuple(misdated)), sentence, []
    fixes = (
        figures_from_earlier_columns(sentence, reading.question, own_units) if reading.check_figures else []
    )
    if any(not fix.cell for fix in fixes):
        return DroppedSentence(sentence, "column", tuple(fix.describe() for fix in fixes)), sentence, fixes
    placed = with_columns_fixed(sentence, fixes)
    if reading.check_figures and (moved := figures_for_named_rows(placed, reading.question, own_units)):
        placed, fixes = with_columns_fixed(placed, moved), [*fixes, *moved]
    return _problem(placed, reading), placed, fixes


def _problem(sentence: str, reading: _Reading) -> DroppedSentence | None:
    """Why ``sentence`` cannot stand (None when it can): checked against the evidence it cites."""
    if blank_markers(sentence).rstrip().endswith("?"):  # the question echoed, or one asked back
        return DroppedSentence(sentence, "says_nothing")
    question, evidence, passages, check_figures = (
        reading.question,
        reading.evidence,
        reading.passages,
        reading.check_figures,
    )
    own = reading.cited_by(sentence)
    stated = reading.stated_by(sentence)
    # A figure the question states is the user's, not the model's invention ("within 60 days").
    unstated = unstated_figures(sentence, f"{stated}\n{question}") if check_figures else set()
    if unstated:
        return DroppedSentence(sentence, "figure", tuple(written_forms(sentence, unstated)))
    turned = rise_of_a_decrease(sentence, stated) if check_figures else []
    if turned:
        return DroppedSentence(sentence, "direction", tuple(turned))
    misplaced = (
        figures_from_other_rows(sentence, question, reading.units_cited_by(sentence)) if check_figures else []
    )
    if misplaced:
        return DroppedSentence(sentence, "row", tuple(misplaced))
    if any(len(label) > 20 and label in sentence for label in (p.evidence_label() for p in passages)):
        return DroppedSentence(sentence, "label")  # a passage's title and page are not an answer
    if not _ASKS_FOR_A_DOCUMENT.search(question) and any(
        _named_as_the_answer(p.chunk.title, sentence) for p in passages
    ):
        return DroppedSentence(sentence, "label")  # "the model used is the <document's title>"
    unknown = _unknown_names(sentence, "\n".join(evidence.values()), question)
    if unknown:
        return DroppedSentence(sentence, "name", tuple(unknown))
    if _YES.search(sentence) and _answering_unit_negates(question, reading, own):
        return DroppedSentence(sentence, "negation")
    return None


def offers_what_its_sources_lack(sentence: str, reading: _Reading) -> bool:
    """Whether ``sentence`` puts forward a figure, or a name, that neither the passages it cites
    nor the question states: what a small model writes when the evidence lacks what was asked
    ("OPM's total appropriated budget for fiscal year 2013 was $81,797 million [1]", "The VR
    headset model used in the VRULT study is the QENSIU [1][2]", a room named elsewhere).

    Unlike the name check that drops a sentence, a name elsewhere in the evidence counts here:
    this tells a draft that had nothing to give from one that gave the evidence badly (a
    vague sentence, a figure from the wrong column, a claim the grounding check refused).
    """
    stated = reading.stated_by(sentence)
    if unstated_figures(sentence, f"{stated}\n{reading.question}"):
        return True
    return bool(_unknown_names(sentence, stated, reading.question))


def _cited_by(sentence: str, cited: Collection[int], passages: Sequence[Passage]) -> set[int]:
    """The passages ``sentence`` rests on: those it cites, else those the reply cites, else all."""
    return cited_numbers(sentence, len(passages)) or set(cited) or set(range(1, len(passages) + 1))


def _named_as_the_answer(title: str, sentence: str) -> bool:
    """Whether ``sentence`` gives a document's ``title`` as what something is ("The headset used
    in the study is the NCT06154122 Prot 000 study protocol"): the source named as the answer
    (checked only when the question asks for no document, report, protocol or the like)."""
    words = title.split()
    if len(title) < 8 or not words:
        return False
    pattern = r"\b(?:is|are|was|were)\s+(?:the\s+|an?\s+)?" + r"\s+".join(map(re.escape, words[:3]))
    return bool(re.search(pattern, sentence, re.IGNORECASE))


def _unknown_names(sentence: str, evidence: str, question: str) -> list[str]:
    """Capitalised words past the sentence's first that neither the cited evidence nor the question
    has; a word after a full stop opens a sentence the splitter left joined ("... in the most
    recent 10-Q. Specifically, ...": "Q." reads as an initial)."""
    body = blank_markers(sentence)
    known = f"{evidence}\n{question}".lower()
    return [
        found.group()
        for found in list(_NAME_WORD.finditer(body))[1:]
        if found.start() > 0
        and not _OPENS_A_SENTENCE.search(body[: found.start()])
        and not _known_name(found.group(), known)
    ]


def _known_name(word: str, known: str) -> bool:
    """Whether ``known`` (lower case) has ``word``, also without a possessive or plural "s"; a
    hyphenated name part by part ("Goal-Engagement-Accountability-Results" for "Goals-..."); a
    month by its abbreviation too ("September" of a table's "Sep 30, 2023")."""
    bare = _POSSESSIVE.sub("", word.lower().strip("."))
    if bare in _MONTHS and re.search(rf"\b{bare[:3]}\b", known):
        return True
    parts = [part for part in bare.split("-") if part]
    return all(any(form in known for form in {part, part.removesuffix("s")} if form) for part in parts)


def _answering_unit_negates(question: str, reading: _Reading, cited: Collection[int]) -> bool:
    """Whether the unit that best matches the question, among those cited, negates."""
    best = choose_quotes(question, reading.passages, cited, limit=1, units=reading.units)
    return bool(best) and bool(_NEGATION.search(best[0].text))


def _with_rows_code_finds(
    question: str, quotes: list[QuoteCandidate], units: Sequence[QuoteCandidate]
) -> tuple[str, list[QuoteCandidate]]:
    """``quotes`` with the rows code finds for the question among ``units``: the row it names by
    its label, the same rows of other periods, a share's rows; and the share's derivation ("")."""
    named = row_the_question_names(question, quotes, units)
    quotes = _with_units(quotes, [named] if named else [])
    quotes = same_rows_elsewhere(question, quotes, units)
    return _with_derived_ratio(question, quotes, units)


def _with_derived_ratio(
    question: str, quotes: list[QuoteCandidate], units: Sequence[QuoteCandidate]
) -> tuple[str, list[QuoteCandidate]]:
    """The share the question asks for, derived by code (:mod:`pipeline.ratios`), and ``quotes``
    with the two rows it divides; ``("", quotes)`` when there is none."""
    ratio = derived_ratio(question, units)
    rows = printed_shares(question, units) + ([ratio.part, ratio.whole] if ratio else [])
    return (ratio.line() if ratio else ""), _with_units(quotes, rows)


def _with_units(quotes: list[QuoteCandidate], added: Sequence[QuoteCandidate]) -> list[QuoteCandidate]:
    """``quotes`` and those of ``added`` whose text none of them has, in reading order."""
    new = [unit for unit in dict.fromkeys(added) if all(unit.text != q.text for q in quotes)]
    return sorted([*quotes, *new], key=lambda q: q.position) if new else quotes


def _quote_lines(quotes: Sequence[QuoteCandidate]) -> list[str]:
    """Each quoted unit as a line: “text” [n], a table row as its cells beside their labels."""
    return [f"“{readable_unit(q)}” [{q.n}]" for q in quotes]


def readable_unit(quote: QuoteCandidate) -> str:
    """A quoted unit for people: a table row as ``label — column: value; ...``, else its text."""
    return Quote(
        quote.n, quote.text, quote.source, (quote.page, quote.page), (), "", quote.table_header
    ).readable()


def _evidence(passage: Passage) -> str:
    return f"{passage.evidence_label()}\n{passage.text}"
