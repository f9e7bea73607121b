"""Two statements compared word by word: do they say the same thing with another value, the
opposite, the same for another version, or the same in drifted words?

Code settles what an LLM need not: two sentences whose words align except for a figure ("about
95 percent of all Federal background investigations" / "about 90 percent of …") state one
measure of one subject with two values; except for a negation ("is enabled" / "is not
enabled"), opposite facts; except for a version ("PostgreSQL 9.6" / "PostgreSQL 15"), one
statement tied to an older release. Whatever else differs between them (the subject's name,
a date that makes them two periods of a series) makes them different statements, which is
why the comparison is of aligned words and never of bags of words.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# A link is one token: two references differ by their link, which is a name, not a value.
# So is a name joined to a number by a hyphen ("SHA-256", "UTF-8", "3-way").
_TOKEN = re.compile(
    r"(?:https?://|www\.)\S+|[A-Za-z]+-\d+\b|\d+-[A-Za-z]+|\d+(?:[.,:]\d+)*%?|[A-Za-z_][A-Za-z0-9_']*|[^\sA-Za-z0-9]"
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_QUOTED_MARK = re.compile(r"['\"‘“][^\w\s]{1,3}['\"’”]")
_NUMBER = re.compile(r"^\d+(?:[.,:]\d+)*%?$")
# A number as written ("81,797", "9.6", "04:05"): masked to tell wordings apart but for their numbers.
FIGURES = re.compile(r"\d+(?:[.,:]\d+)*")
_IDENTIFIER = re.compile(r"\d+\.\d+\.\d*\d{5}")  # "10790268.2007.11753405" (a DOI), not a figure
_CONTENT_WORD = re.compile(r"^[A-Za-z][A-Za-z_']{2,}$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_MONTHS = _words("january february march april may june july august september october november december")
NUMBER_WORDS = _words("zero one two three four five six seven eight nine ten twelve hundred")
SWITCH_WORDS = _words("on off true false yes no enabled disabled")
NEGATIONS = _words(
    "not no never cannot can't don't doesn't isn't aren't won't wasn't shouldn't mustn't without none"
)
# A number right after one of these words names a part of a document ("Table 68.1"), not a measure.
LABEL_WORDS = _words(
    "table tables figure fig section sections chapter chapters example step item note appendix part page"
)
# A number right after one of these words names a release, not a measure.
VERSION_WORDS = _words("version versions release releases postgresql debian python v pg")
MIN_WORDS = 6  # content words (three letters or more) a statement needs, with its subject, to be compared
MAX_CHANGED_VALUES = 1  # more values changed at once: a worked example or a series, not one measure restated
MAX_ADDED_SHARE = 0.4  # words one statement adds beyond the other, as a share of the longer
DRIFT_RATIO = 0.75  # aligned share at which two statements of different documents are one passage

Relation = Literal["same", "value", "polarity", "version", "drift", "different"]


@dataclass(frozen=True, slots=True)
class Comparison:
    """How statement ``b`` differs from ``a``: the relation, the aligned share of their words
    (0 to 1), the changed words of each side, and a word diff ("[-95-]{+90+}")."""

    relation: Relation
    ratio: float
    removed: tuple[str, ...]
    added: tuple[str, ...]
    diff: str
    values: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # the values replaced, each side


def tokens(text: str) -> list[str]:
    """The words, numbers and marks of ``text`` in order ("4MB" is "4", "MB")."""
    return _TOKEN.findall(text)


def word_count(text: str) -> int:
    return sum(1 for t in tokens(text) if t[0].isalnum())


def code_like(text: str) -> bool:
    """Whether ``text`` is more code or markup than prose: more marks (brackets, operators,
    quotes; a table's cell bars aside) than half its words. An example's output or a line of
    code is no statement of fact, and two examples differ by their values by design. A mark
    in quotes is named, not used: "separated by one of ':', '-' or '.'" is prose."""
    found = tokens(_QUOTED_MARK.sub(" mark ", text))
    marks = sum(1 for t in found if not t[0].isalnum() and t != "|")
    return marks > 0.5 * sum(1 for t in found if t[0].isalnum())


def content_words(text: str) -> int:
    """Words of three letters or more: what says what a statement is about ("FY", "Q1" do not)."""
    return sum(1 for t in tokens(text) if _CONTENT_WORD.match(t))


def compare(a: str, b: str) -> Comparison:
    """``a`` and ``b`` aligned word by word, and what their differences are (see the module)."""
    left, right = tokens(a), tokens(b)
    lower_left, lower_right = [t.lower() for t in left], [t.lower() for t in right]
    matcher = difflib.SequenceMatcher(None, lower_left, lower_right, autojunk=False)
    replaced: list[tuple[list[str], list[str]]] = []
    added_words = 0
    removed: list[str] = []
    added: list[str] = []
    diff: list[str] = []
    labels = _label_numbers(left) | {len(left) + j for j in _label_numbers(right)}
    relabelled = inside = False
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            diff.append(" ".join(left[i1:i2]))
            continue
        old, new = left[i1:i2], right[j1:j2]
        relabelled |= bool(labels & (set(range(i1, i2)) | {len(left) + j for j in range(j1, j2)}))
        removed += old
        added += new
        diff.append(
            " ".join(([f"[-{' '.join(old)}-]"] if old else []) + ([f"{{+{' '.join(new)}+}}"] if new else []))
        )
        if tag == "replace":
            replaced.append((old, new))
        else:
            words = sum(1 for t in old + new if t[0].isalnum())
            added_words += words
            inside |= bool(words) and not (_marks_only(left[:i1]) or _marks_only(left[i2:]))
    ratio = matcher.ratio()
    relation = (
        "different"
        if relabelled
        else _relation(replaced, removed, added, added_words, inside, left, right, ratio)
    )
    values = (
        tuple(t for old, _ in replaced for t in old if _is_value(t)),
        tuple(t for _, new in replaced for t in new if _is_value(t)),
    )
    return Comparison(
        relation, round(ratio, 3), tuple(removed), tuple(added), " ".join(p for p in diff if p), values
    )


def _relation(
    replaced: Sequence[tuple[list[str], list[str]]],
    removed: Sequence[str],
    added: Sequence[str],
    added_words: int,
    inside: bool,
    left: Sequence[str],
    right: Sequence[str],
    ratio: float,
) -> Relation:
    """What the changes between two aligned statements amount to. Words one side adds are
    allowed at its start or end only ("… investigations for more than 100 Federal agencies"):
    added inside, they name another subject ("The result of ANY is …")."""
    changed = [t.lower() for t in (*removed, *added) if t[0].isalnum()]
    if not changed:
        return "same"
    longer = max(word_count(" ".join(left)), word_count(" ".join(right)), 1)
    aligned = added_words <= MAX_ADDED_SHARE * longer and not inside
    changed_values = sum(1 for old, _ in replaced for t in old if _is_value(t))
    if aligned and replaced and all(_values_only(old, new) for old, new in replaced):
        if changed_values > MAX_CHANGED_VALUES:
            return "different"
        if any(_versions(old, left) and _versions(new, right) for old, new in replaced):
            return "version"  # the same statement for another release (its value may differ too)
        if any(_is_time(t) for old, new in replaced for t in old + new):
            return "different"  # two periods of a series, not two values of one measure
        return "value"
    # An odd change in the number of negations flips a statement; two ("--no-replication … will
    # not have") cancel out: the option and its description agree.
    negations = sum(map(_negation, map(str.lower, removed))) - sum(map(_negation, map(str.lower, added)))
    negation_flipped = negations % 2 == 1
    switched = sum(1 for old, new in replaced for t in old if t.lower() in SWITCH_WORDS)
    others = [t for t in changed if not _negation(t) and t not in SWITCH_WORDS]
    if negation_flipped and not others and ratio >= DRIFT_RATIO:
        # "IS NOT DOCUMENT returns false" beside "IS DOCUMENT returns true": the flips agree
        return "different" if switched else "polarity"
    if ratio >= DRIFT_RATIO and replaced:
        return "drift"  # words changed in place; words only added are an elaboration, or a cut elsewhere
    return "different"


def _label_numbers(words: Sequence[str]) -> set[int]:
    """Positions of numbers that name a part of a document: after a label word ("Table 68.1")
    or opening the statement as its section's number ("5.10. Inheritance", "F.43.1.4.")."""
    found = set()
    for i, word in enumerate(words):
        if not _NUMBER.match(word):
            continue
        before = [w for w in words[:i] if len(w) > 1]  # "Section E . 7": the letter and mark are its name
        if not before or before[-1].lower() in LABEL_WORDS:
            found.add(i)
    return found


def _marks_only(words: Sequence[str]) -> bool:
    return all(not w[0].isalnum() for w in words)


def _negation(token: str) -> bool:
    return token in NEGATIONS or token.endswith("n't")


def _is_value(token: str) -> bool:
    lower = token.lower()
    if _NUMBER.match(token):
        return not _IDENTIFIER.match(token)
    return lower in NUMBER_WORDS or lower in SWITCH_WORDS


def _is_time(token: str) -> bool:
    return bool(_YEAR.match(token)) or token.lower() in _MONTHS


def _values_only(old: Sequence[str], new: Sequence[str]) -> bool:
    """A replacement of values by values (marks around them allowed), with a value on each side."""
    words_old = [t for t in old if t[0].isalnum()]
    words_new = [t for t in new if t[0].isalnum()]
    return (
        bool(words_old)
        and bool(words_new)
        and all(_is_value(t) for t in words_old + words_new)
        and any(_is_value(t) for t in words_old)
    )


def _versions(changed: Sequence[str], context: Sequence[str]) -> bool:
    """Whether a changed number stands within three words after one that names a release
    ("PostgreSQL 15", "a version earlier than 15.1")."""
    for token in changed:
        if not _NUMBER.match(token):
            continue
        for i, word in enumerate(context):
            if word == token and any(w.lower() in VERSION_WORDS for w in context[max(0, i - 3) : i]):
                return True
    return False


def version_of(changed: Sequence[str]) -> tuple[int, ...]:
    """The first release number among ``changed`` as a comparable tuple ("9.6" → (9, 6))."""
    for token in changed:
        if _NUMBER.match(token):
            return tuple(int(p) for p in re.split(r"[.,:]", token.rstrip("%")) if p.isdigit())
    return ()
