"""Whether a line of the evidence may be quoted: it says something by itself.

A quote is what a reader checks an answer against, so a line that only names, points or breaks
off is none, however many of the question's words it shares: matched to the question, it took a
quote's slot (and its room) from the sentence that answers. Such lines are:

- fewer than three words, unless a list item: a heading or a link's words ("Query Planning");
- a caption ("Table 3.2. Options of the backup tool"), or a line all in parentheses ("(In
  thousands) (Unaudited)"): it names a table, whose rows say what it holds;
- a numbered section heading ("12.4.1. Password Authentication", "Item 2. Properties 14"), or a
  heading in capitals ("NOTE 5 - LEASES");
- a pointer ("See Section 8.3 for details."), or a lead-in ("To do so, write:"): it says
  where, or that something follows, not what;
- a fragment that a page, column or block break cut ("The committee focused on", "of the
  changes listed below."): it ends on, or starts with, a word that needs the rest of its
  sentence.

Past captions and headings, a line of code (a command, a statement: "$ systemctl restart app",
"DROP TABLE t;") is judged only by its length: its words are names, not prose. A table row is the
caller's to keep whatever it looks like (its header says what its cells are).
"""

from __future__ import annotations

import re

from pipeline.retrieval.ordering import is_list_item

MIN_QUOTE_WORDS = 3  # as evidence units: a shorter line of a whole passage is a heading or a link
MAX_POINTER_WORDS = 12  # "See Section 6.3, "Remote access and its utilities"." still points
_WORDS = re.compile(r"[A-Za-z]{2,}")
_CODE = re.compile(r"[;=$#<>{}|`\\]|^\s*[$#>]\s|\b[a-z]+_[a-z_]+\b")
_CAPTION = re.compile(r"^(?:Table|Figure|Example|Listing|Chart|Exhibit)\s+(?:[A-Z]\.)?\d+(?:[.-]\d+)*\.\s")
_ALL_IN_PARENTHESES = re.compile(r"^(?:\s*\([^()]*\))+\s*$")
_SECTION_NUMBER = re.compile(
    r"^(?:(?:[A-Z]\.)?\d+(?:\.\d+)+\.?|(?:Item|Part|Chapter|Section|Appendix)\s+[\dIVX]+[A-Z]?\.?)\s+\S"
)
_SENTENCE_END = re.compile(r"[.!?:;]['\"”’)]*\s*$")
_POINTER = re.compile(
    r"^See\s+(?:also\s+)?(?:Sections?|Chapters?|Tables?|Figures?|Appendi(?:x|ces)|Notes?|Parts?|Items?)\b"
)
# Words that need the rest of their sentence: a line ending on one, or starting with one in
# small letters, is the piece of a sentence a break cut off.
_NEEDS_MORE = frozenset(
    re.findall(
        r"\w+",
        "a an the of for on to in with by from and or at as that which whose into than is are was were "
        "be been this these its their our",
    )
)


def says_enough(line: str) -> bool:
    """Whether ``line`` (a sentence unit, or a line of a passage shown whole) can be quoted; see the
    module docstring."""
    words = _WORDS.findall(line)
    if len(words) < MIN_QUOTE_WORDS and not is_list_item(line):
        return False
    text = line.strip()
    if names_a_part(text) or text.endswith(":"):
        return False
    if _CODE.search(text) or is_list_item(text):  # a finding or a step in capitals is one still
        return True
    return not (
        _in_capitals(text, words)
        or (_POINTER.match(text) and len(words) <= MAX_POINTER_WORDS)
        or _cut_off(text)
    )


def names_a_part(line: str) -> bool:
    """Whether ``line`` is a caption, a line all in parentheses or a numbered section heading: it
    names a part of the document (read as a line before it is cut into sentences, since "Table
    3.2. Options of ..." would leave its title behind as a sentence of its own)."""
    text = line.strip()
    return bool(
        _CAPTION.match(text)
        or _ALL_IN_PARENTHESES.match(text)
        or (_SECTION_NUMBER.match(text) and not _SENTENCE_END.search(text))
    )


def _in_capitals(text: str, words: list[str]) -> bool:
    """A heading set in capitals: no small letter, two words at least."""
    return len(words) >= 2 and not any(c.islower() for c in text)


def _cut_off(text: str) -> bool:
    """A piece of a sentence: it ends on a word that needs what follows, or starts with one in
    small letters."""
    tokens = text.split()
    last = tokens[-1]
    if last.isalpha() and last.lower() in _NEEDS_MORE and not _SENTENCE_END.search(text):
        return True
    return tokens[0] in _NEEDS_MORE  # as written: "Of the risks ..." starts a sentence
