"""A figure, or a name, shown as the answer only where the documents give it in the role asked.

Asked "What was OPM's total appropriated budget for fiscal year 2013?", the 1.5B model answered
"OPM's total appropriated budget for fiscal year 2013 was $76.5 billion": a figure the report
states, as the defined benefits OPM paid to retirees. The figure check lets it through (the
evidence states it), yet it answers another question. What a figure measures is said by the
words around it in the document. So a sentence that gives a figure in the question's words
(the role it claims for it) stands only where a passage stating the figure also holds one of
those words: in its text, its innermost heading, or for a table row its table's header and row
group.

The role's words are the words (stemmed) the sentence takes from the question, less those that
only shape a question ("what", "were", "report") or date the figure ("fiscal", "year",
"quarter", "recent"), and less, for each passage, the words of its document's title, which
locate the figure on nearly every page ("OPM"); a name may be the role ("iPhone", a row's
label). A sentence taking fewer than two ordinary words (written in small letters) from the
question is not judged: "Specifically, depreciation was $3,921 million", to "what did Microsoft
report?", claims no role of the question's, and one word alone may be the user's synonym of
the document's ("Apple's revenue was $81,797 million" from the row "Total net sales").

The check is loose on purpose: any passage stating the figure, cited or not, and any one of the
role's words will do. One place is read more narrowly: a line of form fields ("Label: value" three
times or more, as on a form or a cover page), where the line holds every field's words and only a
field's label says what its figure is. A figure no passage states is the figure check's. A number
inside a name is no quantity: an identifier's ("events_2023_01"), a model's code ("PA-22-150") or
a version's ("Plan 2.0", "Release 15": a bare number after a capitalised word).

Whose figure it is counts too. Asked the total cost of the GEAR pilot, the model gave "$91.37",
which the report states as the average cost of a retirement claim in a passage that says "cost"
but never names the pilot. A name of the question's (written with a capital) that the sentence
gives its figure for, and that some passage writes, must be written by a passage stating the
figure (in its text, headings or title); a name no passage writes tells no passage apart (a
filing's tables say "we", not "NVIDIA"), and a name of the document's title locates them all.

A name is judged the same way where the question asks for someone ("who signed ...?", "which
company made ...?"): asked which company manufactured an aircraft's propeller, the model answered
"Piper Aircraft", the aircraft's make, which the report gives only as "Aircraft Make: Piper". A
name the answer puts forward (a run of capitalised words holding a word the question lacks)
stands only where a line stating it (every word of it), the line after it (a signature's title) or
the headings above them hold a word of what the question asks: the words of its asking clause, up
to the first preposition ("manufactured the propeller", not "of the Piper PA-22 in the Tallahassee
accident", which only says where to look); a line of form fields by the labels of the fields the
name stands in. A name no passage states is the name check's (:mod:`pipeline.answering.names`).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence

from pipeline.answering.quotes import content_words
from pipeline.citations import blank_markers
from pipeline.figures import all_numbers, figure_forms, figures
from pipeline.retrieval.context import Passage
from pipeline.retrieval.evidence import without_question_words

# The words that date a figure: when, not what.
_DATING = content_words(
    "fiscal year years quarter quarterly month monthly week weekly day daily annual annually period "
    "ended ending fy ytd q1 q2 q3 q4 recent latest current prior previous last next past "
    + " ".join(calendar.month_name[1:]).lower()
)
# Words of the question a sentence must give a figure in before its role is judged: one alone may
# be the user's synonym of the document's ("revenue" for a row of "Total net sales").
MIN_ROLE_WORDS = 2
# An identifier ("events_2023_01") or a model's code ("A-320", "COVID-19"): names, not quantities.
_IDENTIFIER = re.compile(r"\w*_\w*|\b[A-Za-z]+(?:-[A-Za-z]*\d+[A-Za-z]*)+\b")
_VERSION = re.compile(r"\b([A-Z][\w-]*\s+)\d+(?:\.\d+)*(?![.,]?\d)(?!\s*(?:%|percent))")
# A form field's label, up to four words before its colon ("Net Weight: 380 kg").
_FIELD_LABEL = re.compile(r"((?:[A-Za-z][\w/().'-]*\s+){0,3}[A-Za-z][\w/().'-]*):\s")
MIN_FORM_FIELDS = 3  # "Label: value" pairs that make a line a form's fields rather than prose
# A question that asks for someone: a person or a body, by "who" or by the kind of body it is;
# "who is eligible" asks what makes someone so, not for a name.
_ASKS_FOR_SOMEONE = re.compile(
    r"\b(?:whom|whose)\b|\bwho\b(?!\s+(?:is|are|was|were)\s+(?!the\b|an?\b))"
    r"|\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:compan(?:y|ies)|organi[sz]ations?|agenc(?:y|ies)|firms?|"
    r"manufacturers?|makers?|vendors?|suppliers?|persons?|people|teams?|groups?|departments?|offices?|"
    r"bod(?:y|ies)|authors?|sponsors?|investigators?|contractors?|institutions?|universit(?:y|ies)|banks?|"
    r"auditors?|providers?|partners?|customers?|individuals?)\b",
    re.IGNORECASE,
)
# Where a question's asking clause ends and the words locating what it asks about begin.
_PREPOSITION = re.compile(
    r"\b(?:of|in|at|on|for|from|by|during|near|since|under|with|about|to|after|before)\b", re.IGNORECASE
)
# A name: capitalised words in a row, "of", "and", "for" or "&" between them.
_NAME_SPAN = re.compile(r"[A-Z][\w'’&.-]*[\w](?:\s+(?:(?:of|and|for|the|&)\s+)?[A-Z][\w'’&.-]*[\w])*")


def figures_out_of_role(sentence: str, question: str, passages: Sequence[Passage]) -> set[str]:
    """The figures of ``sentence`` that ``passages`` state, but none of them next to a word the
    sentence takes from the question (see the module docstring)."""
    if len((_words(question, ordinary=True) & _words(sentence, ordinary=True)) - _DATING) < MIN_ROLE_WORDS:
        return set()
    claimed = figures(_quantities_only(sentence)) - figures(question)
    if not claimed:
        return set()
    asked = (_words(question) & _words(sentence)) - _DATING
    # The question's names the sentence gives its figure for, where the passages tell them apart:
    # a name no passage writes (a report's tables say "we", not the company's name) decides nothing.
    given_for = _names(question) & asked
    written = [given_for & _written_in(p) for p in passages] if given_for else [set()] * len(passages)
    subjects = set().union(*written)
    numbers = [all_numbers(p.text) for p in passages]  # once, not once per figure
    misplaced = set()
    for figure in claimed:
        forms = figure_forms(figure)
        stating = [(p, names) for p, stated, names in zip(passages, numbers, written) if forms & stated]
        # A passage that never writes a subject the others tell apart speaks of another one.
        if stating and not any(
            _speaks_of(asked, p, forms) and (names or not subjects) for p, names in stating
        ):
            misplaced.add(figure)
    return misplaced


def names_out_of_role(sentence: str, question: str, passages: Sequence[Passage]) -> list[str]:
    """The names ``sentence`` gives for the someone ``question`` asks for that ``passages`` state,
    but nowhere in the role the question asks (see the module docstring)."""
    asking = _ASKS_FOR_SOMEONE.search(question)
    if not asking:
        return []
    clause = question[asking.start() :]
    cut = next((m.start() for m in _PREPOSITION.finditer(clause) if _words(clause[: m.start()])), None)
    asked_words = _words(clause[:cut]) - _DATING
    known = content_words(question)
    misplaced = []
    for span in _NAME_SPAN.findall(blank_markers(sentence)):
        named = content_words(span)
        if not named - known:
            continue  # the question's own name, or a word that only opens the sentence
        stating = [
            (passage, line) for passage in passages for line in _lines_naming(passage.text, span, named)
        ]
        role = asked_words - named
        if stating and role and not any(_says_role(role, passage, line) for passage, line in stating):
            misplaced.append(span)
    return misplaced


def _says_role(role: set[str], passage: Passage, line: str) -> bool:
    """Whether ``line`` of ``passage``, or a heading above it, holds a word of ``role`` beyond its
    document's title."""
    return bool(
        (role - content_words(passage.chunk.title))
        & content_words(f"{line}\n{' '.join(passage.chunk.heading_path)}")
    )


def _lines_naming(text: str, span: str, named: set[str]) -> list[str]:
    """The lines of ``text`` holding every word of the name ``span`` (``named``: its words, stemmed),
    each as it describes the name: a line of form fields by the labels of the fields the name's
    words stand in ("Aircraft Make: Piper Registration: N5921D ..." describes "Piper" as the
    aircraft's make, whatever the rest of the line holds)."""
    lines = []
    split = text.split("\n")
    for line, following in zip(split, [*split[1:], ""]):
        if not named <= content_words(line):
            continue
        labels = list(_FIELD_LABEL.finditer(line))
        if len(labels) < MIN_FORM_FIELDS:
            lines.append(f"{line}\n{following}")  # a signature's title stands under the name
            continue
        for word in span.split():
            for found in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", line, re.IGNORECASE):
                # The field a word stands in is the last one whose label ends before it: the label
                # pattern may take a value's words as the start of the next label.
                field = [label for label in labels if label.end() <= found.start()][-1:]
                lines += [label.group(1) for label in field]
    return lines


def _words(text: str, ordinary: bool = False) -> set[str]:
    """``text``'s words, stemmed, without those that only shape a question ("what", "were",
    "report"); ``ordinary``: only those written in small letters (no names)."""
    return content_words(" ".join(w for w in without_question_words(text) if w.islower() or not ordinary))


def _quantities_only(sentence: str) -> str:
    """``sentence`` without the numbers inside names (identifiers, versions)."""
    return _VERSION.sub(r"\1", _IDENTIFIER.sub(" ", sentence))


def _speaks_of(asked: set[str], passage: Passage, forms: set[str]) -> bool:
    """Whether ``passage`` holds one of the ``asked`` words beyond those of its document's title
    where it describes the figure (one of ``forms``): its innermost heading, a row's table header
    and row group, its lines (a form's line by the labels of the fields stating the figure); when
    every word is the title's, nothing tells: it does."""
    role = asked - content_words(passage.chunk.title)
    if not role:
        return True
    around = [f"{piece.unit.table_header} {piece.unit.row_group}" for piece in passage.pieces if piece.unit]
    lines = _lines_describing(passage.text, forms)
    described = "\n".join((*passage.chunk.heading_path[-1:], *around, *lines))
    return bool(role & content_words(described))


def _names(question: str) -> set[str]:
    """The words ``question`` writes with a capital, past its first: the names of what it asks about."""
    words = re.findall(r"[\w&'’.-]+", question)[1:]
    return content_words(" ".join(w for w in words if w[:1].isupper()))


def _written_in(passage: Passage) -> set[str]:
    """The words (stemmed) of ``passage``'s text, headings and title: where it names what it is about."""
    return content_words(f"{passage.chunk.title}\n{' '.join(passage.chunk.heading_path)}\n{passage.text}")


def _lines_describing(text: str, forms: set[str]) -> list[str]:
    """``text``'s lines as they describe a figure of ``forms``: each whole, but a line of form
    fields ("Shipped: 12 Cartons Packer: 4 Net Weight: 380 kg ...") by the labels of the fields
    whose value states the figure, if any: "Net Weight" for 380, though "Cartons" stands on the
    same line (read across two columns, a form's line mixes its fields' words)."""
    described = []
    for line in text.split("\n"):
        labels = list(_FIELD_LABEL.finditer(line))
        if len(labels) < MIN_FORM_FIELDS:
            described.append(line)
            continue
        for label, following in zip(labels, [*labels[1:], None]):
            value = line[label.end() : following.start() if following else len(line)]
            if forms & all_numbers(value):
                described.append(label.group(1))
    return described
