"""A figure shown as the answer only where the documents give it in the role asked.

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
inside a name is no quantity: an identifier's ("events_2023_01") or a version's ("Plan 2.0",
"Release 15": a bare number after a capitalised word).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence

from pipeline.answering.quotes import content_words
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
_IDENTIFIER = re.compile(r"\w*_\w*")
_VERSION = re.compile(r"\b([A-Z][\w-]*\s+)\d+(?:\.\d+)*(?![.,]?\d)(?!\s*(?:%|percent))")
# A form field's label, up to four words before its colon ("Net Weight: 380 kg").
_FIELD_LABEL = re.compile(r"((?:[A-Za-z][\w/().'-]*\s+){0,3}[A-Za-z][\w/().'-]*):\s")
MIN_FORM_FIELDS = 3  # "Label: value" pairs that make a line a form's fields rather than prose


def figures_out_of_role(sentence: str, question: str, passages: Sequence[Passage]) -> set[str]:
    """The figures of ``sentence`` that ``passages`` state, but none of them next to a word the
    sentence takes from the question (see the module docstring)."""
    if len((_words(question, ordinary=True) & _words(sentence, ordinary=True)) - _DATING) < MIN_ROLE_WORDS:
        return set()
    claimed = figures(_quantities_only(sentence)) - figures(question)
    if not claimed:
        return set()
    asked = (_words(question) & _words(sentence)) - _DATING
    numbers = [all_numbers(p.text) for p in passages]  # once, not once per figure
    misplaced = set()
    for figure in claimed:
        forms = figure_forms(figure)
        stating = [p for p, stated in zip(passages, numbers) if forms & stated]
        if stating and not any(_speaks_of(asked, p, forms) for p in stating):
            misplaced.add(figure)
    return misplaced


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
