"""The answer a user reads: the model's sentences that code can trace to the evidence, and the
few quotes that carry them.

A small model paraphrases good evidence into vague or wrong sentences ("Yes, the company
announced a major acquisition [1]"). So code reads the model's reply sentence by sentence and
keeps a sentence only if it can trace it to the evidence it cites:

1. every figure it states stands in a cited unit or the question
   (:func:`pipeline.figures.unstated_figures`); every name it writes (a capitalised word past
   the sentence's first) stands in the evidence or the question (a small model often cites the
   neighbouring passage: a wrong citation is not an invented name); a "yes" does not stand
   against the evidence that answers the question when that evidence says "not" / "no" /
   "precludes" (the unit it cites, or the unit quoted as answering the question); a sentence
   that leans on a dropped one ("This increase was offset ...") goes with it, and when the
   opening sentence, the answer itself, goes for a figure, a name or a term the evidence lacks,
   nothing after it stands (it carries that answer out: "Here are the steps to do it:"); rule
   packs for particular documents may judge it too (:mod:`pipeline.answering.answer_rules`);
2. what is kept must say something the question did not: a figure, or a word of the evidence
   the question does not use. "Yes, OPM reported it [3]" says nothing and is dropped, and so
   are a question (the user's echoed, or one asked back) and a sentence that gives a
   passage's label (its document, heading and page) as the answer. A question asking "how
   many" or "how much" is answered only by a reply stating a quantity the question does not
   (:mod:`pipeline.answering.quantities`).

A "yes" answer whose quotes deny what it affirms ("Contrary to what the hint states, it is not
necessary to stop the postmaster" under "Yes, the hint suggests stopping the server") is no
answer either: the denying quote leads the quotes under "The documents say:"
(:mod:`pipeline.answering.polarity`).

The kept sentences are the answer's text, as the model wrote them (a procedure's steps keep
their lines). Under it stand at most ``QUOTE_LIMIT`` quotes, each one unit of the evidence the
model read in the document's own words (:func:`answering_quotes`): the unit that best carries
the answer among those it cites, the unit that best answers the question, and the one that
best answers what those two leave of it; never a dump of the context, never a unit the kept
sentences already say word for word (:func:`pipeline.answering.quotes.said_in`: it stays cited),
and never one that bears on nothing they say, matched only by the words naming the document
(:func:`pipeline.answering.quotes.bearing_on`).

A reply that opens by saying the documents do not answer is kept as such, with the nearest
evidence quoted (said later, it qualifies an answer); one that copies a passage's label and
text (the prompt, echoed) is no answer: the evidence that answers is quoted instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace

from pipeline.answering.answer_rules import AnswerRules
from pipeline.answering.composed import ComposedAnswer, DroppedSentence
from pipeline.answering.names import ASKS_FOR_A_DOCUMENT, named_as_the_answer, unknown_names
from pipeline.answering.polarity import YES, denying_quote
from pipeline.answering.quantities import asks_for_a_quantity, states_a_quantity
from pipeline.answering.quotes import (
    NEGATION,
    QUOTE_LIMIT,
    QuoteCandidate,
    answering_quotes,
    bearing_on,
    best_matches,
    not_restating,
    quote_candidates,
    said_in,
)
from pipeline.answering.reading import Reading
from pipeline.answering.roles import figures_out_of_role, names_out_of_role
from pipeline.answering.sentences import (
    LABEL_CHARS,
    POLAR_OPENING,
    answer_sentences,
    copies_a_label,
    echoes,
    is_code_block,
    joined_sentences,
    says_documents_do_not_answer,
    says_nothing_new,
    without_the_echo,
)
from pipeline.answering.terms import unknown_terms
from pipeline.citations import blank_markers, cited_numbers
from pipeline.figures import figures, unstated_figures, written_forms
from pipeline.retrieval.context import Passage

NEAREST_QUOTES = 2  # quotes under "the documents do not say": the nearest they come
NOT_IN_DOCUMENTS = "The documents do not say."
NEAREST_EVIDENCE = "The nearest they come is quoted below."
DOCUMENTS_SAY = "The documents say:"

# "This increase was offset ...", "The strategic focuses of these investments ...": a sentence
# that opens with a pronoun, or points back within its first words, leans on the one before
# it, and goes when that one is dropped for a wrong claim (after an echoed question, "It is
# warmed up every six months" is the answer).
_LEANS_ON_THE_ONE_BEFORE = re.compile(
    r"\W*(?:it|they)\b|\W*(?:\S+\s+){0,4}(?:this|these|those|such)\b", re.IGNORECASE
)
_NOT_A_CLAIM = ("says_nothing", "label")
# What a sentence is dropped for when it puts forward something the evidence lacks (not the
# complement of _NOT_A_CLAIM: a "no", a dangling sentence or a missing quantity is neither).
_UNSUPPORTED_CLAIMS = ("figure", "role", "name", "term", "absent")


def compose_answer(
    question: str,
    reply: str,
    passages: Sequence[Passage],
    *,
    check_figures: bool = True,
    rules: Sequence[AnswerRules] = (),
    limit: int = QUOTE_LIMIT,
    absent: Sequence[str] = (),
    reply_chars: int,
    rarity: Mapping[str, float] | None = None,
    conversation: str = "",
    documents_name: Callable[[str], bool] | None = None,
) -> ComposedAnswer:
    """The answer built from the model's ``reply`` to ``question`` over ``passages`` (the
    evidence it read, numbered from 1); see the module docstring.

    Without ``check_figures`` a figure no cited unit states is let through (names, negations
    and saying something new are still checked). ``rules`` are the rule packs in use.
    ``reply_chars`` bounds the whole reply, about: the quotes fill what the kept sentences leave
    of it (one short quote at least). ``absent`` are the question's technical names that no
    document of the search mentions (:mod:`pipeline.retrieval.absent`): a reply that states
    something of one cannot rest on the documents and none of it stands; a reply that speaks of
    none stands after the sentence saying which names the documents never mention. ``rarity``
    weighs the words a quote shares with the question (:func:`pipeline.answering.quotes.best_matches`).
    ``conversation``: the earlier turns, whose terms are the user's as the question's are.
    ``documents_name`` tells whether a document of the searched collections names a word: a
    program a line of code runs stands where one does (:mod:`pipeline.answering.terms`).
    """
    cited = cited_numbers(reply, len(passages))
    sentences = answer_sentences(reply)
    units = quote_candidates(passages)
    if sentences and says_documents_do_not_answer(sentences[0]):  # later, it qualifies an answer
        if any(pack.holds_what_is_asked(question, units) for pack in rules):  # they do say it
            return ComposedAnswer("", "quotes", "", [], [DroppedSentence(sentences[0], "says_nothing")])
        return not_in_documents(question, passages, units, absent, rarity)
    if copies_a_label(reply, [p.evidence_label() for p in passages]):  # no answer: its prompt, copied
        quotes = answering_quotes(question, "", passages, units, set(), limit, reply_chars, rarity)
        return ComposedAnswer(DOCUMENTS_SAY, "quotes", "", quotes, [DroppedSentence(reply[:300], "label")])
    evidence = {n: _evidence(passages[n - 1]) for n in range(1, len(passages) + 1)}
    reading = Reading(
        question,
        passages,
        evidence,
        units,
        cited,
        check_figures,
        tuple(rules),
        tuple(absent),
        conversation,
        documents_name,
    )
    kept: list[str] = []
    dropped: list[DroppedSentence] = []
    corrected: list[str] = []
    after_a_drop = announced = lead_unsupported = False
    for position, sentence in enumerate(sentences):
        problem, placed, fixes = _judged(sentence, reading, after_a_drop)
        lead_unsupported |= position == 0 and problem is not None and problem.reason in _UNSUPPORTED_CLAIMS
        after_a_drop = problem is not None and problem.reason not in _NOT_A_CLAIM
        if problem is None:
            kept.append(without_the_echo(placed, question))
            corrected += fixes
        else:
            if announced and is_code_block(sentence):  # "Run the following command:" and no command
                dropped.append(DroppedSentence(kept.pop(), "dangling"))
            dropped.append(problem)
        announced = problem is None and placed.rstrip().endswith(":")
    # A block the model made up (a setting, a file no passage gives) is what the reply around it
    # explains ("Replace `username` with ..."): none of it stands. Nor does a reply whose opening
    # sentence, its answer, puts forward what the evidence lacks: what follows carries it out
    # ("To set the hostname, add the following to /var/lib/cloud/seed/...:", then the steps).
    if lead_unsupported or any(d.reason == "term" and is_code_block(d.sentence) for d in dropped):
        dropped += [DroppedSentence(s, "dangling") for s in kept]
        kept = []
    kept_text = joined_sentences(kept)
    # What the kept sentences rest on: what they cite, else all (a dropped "[1] Findings" vouches for none).
    kept_cited = cited_numbers(kept_text, len(passages)) or set(evidence)
    if kept and says_nothing_new(kept_text, question, [evidence[n] for n in sorted(kept_cited)]):
        dropped += [DroppedSentence(s, "says_nothing") for s in kept]
        kept, kept_text = [], ""
    if kept and asks_for_a_quantity(question) and not states_a_quantity(kept_text, question):
        dropped += [DroppedSentence(s, "no_quantity") for s in kept]  # "how many?": no count given
        kept, kept_text = [], ""
    room = max(reply_chars - len(kept_text), 0)  # the quotes fill what the answer leaves of the reply
    quotes = answering_quotes(question, kept_text, passages, units, kept_cited, limit, room, rarity)
    # The unit that carries the answer in what it cites is read for a "not" too, quoted or not,
    # then every other unit the model read: the sentence that says no may be neither quoted nor
    # cited ("Contrary to what the hint states, it is not necessary ... to stop the postmaster",
    # two sentences after the one the question matches best).
    evidence_units = not_restating(question, units)
    carrying = (
        best_matches(kept_text, evidence_units, kept_cited, given_figures=figures(question)) if kept else []
    )
    denial = denying_quote(kept_text, [*quotes, *carrying], elsewhere=evidence_units, question=question)
    if denial is not None:  # "Yes, ..." printed above a quote that says no: none of it stands
        dropped += [DroppedSentence(sentence, "negation", (denial.text,)) for sentence in kept]
    elif not kept:  # the "yes" went for the unit answering the question saying no
        negations = [d for d in dropped if d.reason == "negation"]
        denial = next((u for d in negations for u in units if u.text in d.detail), None)
    if denial is not None:  # the quote that says no is the answer: it leads the quotes
        quotes = answering_quotes(
            question, denial.text, passages, units, {denial.n}, limit, reply_chars, rarity, leading=denial
        )
        quotes.sort(key=lambda q: q.position != denial.position)
        return ComposedAnswer(DOCUMENTS_SAY, "denied", "", quotes, dropped, corrected)
    derived, quotes, _ = _rows_the_packs_quote(question, quotes, units, rules)
    stated = [q for q in quotes if said_in(kept_text, q)] if kept_text else []
    gap = any(offers_what_its_sources_lack(d.sentence, reading) for d in dropped)
    # A line a pack derived from the documents' cells, its inputs shown, is an answer too.
    kept_text = "\n".join(line for line in (kept_text, derived) if line)
    # A reply that speaks of what the documents never mention is about it throughout ("Run pg_cron ...
    # Make sure to replace mydb ..."): none of it stands.
    if absent and any(d.reason == "absent" for d in dropped):
        composed = not_in_documents(question, passages, units, absent, rarity)
        return replace(composed, dropped=dropped)
    if kept_text:
        text = f"{never_mentioned(absent)} {kept_text}" if absent else kept_text
        shown = bearing_on(kept_text, question, [q for q in quotes if q not in stated])
        return ComposedAnswer(text, "answer", kept_text, shown, dropped, corrected, gap, stated)
    return ComposedAnswer(DOCUMENTS_SAY, "quotes", "", quotes, dropped, corrected, gap)


def not_in_documents(
    question: str,
    passages: Sequence[Passage],
    units: Sequence[QuoteCandidate],
    absent: Sequence[str] = (),
    rarity: Mapping[str, float] | None = None,
) -> ComposedAnswer:
    """The documents do not say it (or never mention the names ``absent``), and the nearest they
    come, quoted."""
    nearest = answering_quotes(question, "", passages, units, limit=NEAREST_QUOTES, rarity=rarity)
    lead = never_mentioned(absent) if absent else NOT_IN_DOCUMENTS
    return ComposedAnswer(f"{lead} {NEAREST_EVIDENCE}", "not_in_documents", "", nearest)


def never_mentioned(names: Sequence[str]) -> str:
    """ "The documents do not mention pg_cron." (or "pg_cron or PgBouncer")."""
    return f"The documents do not mention {' or '.join(names)}."


def quoted_evidence(
    question: str,
    passages: Sequence[Passage],
    lead: str,
    rules: Sequence[AnswerRules] = (),
    limit: int = QUOTE_LIMIT,
    rarity: Mapping[str, float] | None = None,
) -> ComposedAnswer:
    """The evidence that best answers the question, quoted under ``lead``: what the user gets
    when no answer of the model's could be verified. A rule pack may add the rows the question
    names (and a share derived from them); then "The documents say:" leads instead."""
    units = quote_candidates(passages)
    quotes = answering_quotes(question, "", passages, units, limit=limit, rarity=rarity)
    derived, quotes, leads = _rows_the_packs_quote(question, quotes, units, rules)
    lines = [DOCUMENTS_SAY if leads else lead, *([derived] if derived else [])]
    return ComposedAnswer("\n".join(lines), "quotes", "", quotes)


def _rows_the_packs_quote(
    question: str, quotes: list[QuoteCandidate], units: Sequence[QuoteCandidate], rules: Sequence[AnswerRules]
) -> tuple[str, list[QuoteCandidate], bool]:
    """``quotes`` with the rows each rule pack adds, the lines they derive, and whether those rows
    are what the question names."""
    derived: list[str] = []
    leads = False
    for pack in rules:
        found = pack.quote_rows(question, quotes, units)
        quotes = found.quotes
        leads |= found.leads
        if found.derived:
            derived.append(found.derived)
    return "\n".join(derived), quotes, leads


def _judged(
    sentence: str, reading: Reading, after_a_drop: bool
) -> tuple[DroppedSentence | None, str, list[str]]:
    """Why ``sentence`` cannot stand (None when it can), the sentence as it stands once the rule
    packs placed its figures, and those fixes."""
    if after_a_drop and _LEANS_ON_THE_ONE_BEFORE.match(sentence):
        return DroppedSentence(sentence, "dangling"), sentence, []
    placed, fixes = sentence, []
    if reading.check_figures:
        own_units = reading.units_cited_by(sentence)
        for pack in reading.rules:
            verdict = pack.judge(placed, reading.question, own_units)
            fixes += verdict.fixes
            if verdict.drop_reason is not None:
                return DroppedSentence(placed, verdict.drop_reason, verdict.detail), placed, fixes  # type: ignore[arg-type]
            placed = verdict.sentence
    return _problem(placed, reading), placed, fixes


def _problem(sentence: str, reading: Reading) -> DroppedSentence | None:
    """Why ``sentence`` cannot stand (None when it can): checked against the evidence it cites."""
    if blank_markers(sentence).rstrip().endswith("?"):  # the question echoed, or one asked back
        return DroppedSentence(sentence, "says_nothing")
    if not POLAR_OPENING.match(sentence) and echoes(sentence, reading.question):  # restated: says nothing
        return DroppedSentence(sentence, "says_nothing")
    question, evidence, passages = reading.question, reading.evidence, reading.passages
    spoken_of = [name for name in reading.absent if name.lower() in sentence.lower()]
    if spoken_of:  # nothing the documents say can be of a name they never mention
        return DroppedSentence(sentence, "absent", tuple(spoken_of))
    own = reading.cited_by(sentence)
    stated = reading.stated_by(sentence)
    # A figure the question states is the user's, not the model's invention ("within 60 days").
    unstated = unstated_figures(sentence, stated, question) if reading.check_figures else set()
    if unstated:
        return DroppedSentence(sentence, "figure", tuple(written_forms(sentence, unstated)))
    misplaced = figures_out_of_role(sentence, question, passages) if reading.check_figures else set()
    if misplaced:  # stated, but as another quantity than the one the sentence says it is
        return DroppedSentence(sentence, "role", tuple(written_forms(sentence, misplaced)))
    named_elsewhere = names_out_of_role(sentence, question, passages)
    if named_elsewhere:  # a name the documents give, but as another someone than the one asked for
        return DroppedSentence(sentence, "role", tuple(named_elsewhere))
    if any(len(lab) > LABEL_CHARS and lab in sentence for lab in (p.evidence_label() for p in passages)):
        return DroppedSentence(sentence, "label")  # a passage's title and page are not an answer
    if not ASKS_FOR_A_DOCUMENT.search(question) and any(
        named_as_the_answer(p.chunk.title, sentence) for p in passages
    ):
        return DroppedSentence(sentence, "label")  # "the model used is the <document's title>"
    read = "\n".join(evidence.values())
    made_up = unknown_terms(sentence, read, reading.said_by_user, reading.documents_name)
    if made_up:  # an option, a system path or an identifier that no passage read gives
        return DroppedSentence(sentence, "term", tuple(made_up))
    unknown = unknown_names(sentence, read, question)
    if unknown:
        return DroppedSentence(sentence, "name", tuple(unknown))
    negating = _negating_unit(question, reading, own) if YES.search(sentence) else None
    if negating is not None:
        return DroppedSentence(sentence, "negation", (negating.text,))
    return None


def offers_what_its_sources_lack(sentence: str, reading: Reading) -> bool:
    """Whether ``sentence`` puts forward a figure, a name or a term (an option, a system path, an
    identifier) that neither the passages it cites nor the user states: what a small model writes
    when the evidence lacks what was asked (an agency's "total appropriated budget for fiscal year
    2013 was $81,797 million [1]", a figure the report gives as something else; "The headset
    model used in the study is the QENSIU [1][2]", a room named elsewhere, a configuration key no
    page gives).

    Unlike the checks that drop a sentence, a name or term elsewhere in the evidence counts here:
    this tells a draft that had nothing to give from one that gave the evidence badly (a
    vague sentence, a figure from the wrong column, a claim the grounding check refused).
    """
    stated = reading.stated_by(sentence)
    if unstated_figures(sentence, stated, reading.question):
        return True
    if figures_out_of_role(sentence, reading.question, reading.passages) or names_out_of_role(
        sentence, reading.question, reading.passages
    ):
        return True
    return bool(
        unknown_names(sentence, stated, reading.question)
        or unknown_terms(sentence, stated, reading.said_by_user, reading.documents_name)
    )


def _negating_unit(question: str, reading: Reading, cited: Collection[int]) -> QuoteCandidate | None:
    """The unit that best matches the question when it negates (None when it does not): among
    those cited, or in all the evidence read (the unit quoted under the answer as answering the
    question: a "yes" printed above "... precludes its use as evidence" contradicts its own quote)."""
    everything = range(1, len(reading.passages) + 1)
    units = not_restating(question, reading.units)  # the question's own words decide nothing
    for pool in (cited, everything):
        best = best_matches(question, units, pool, fallback=True)
        if best and NEGATION.search(best[0].text):
            return best[0]
    return None


def _evidence(passage: Passage) -> str:
    return f"{passage.evidence_label()}\n{passage.text}"
