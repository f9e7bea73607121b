"""Figures in text: the numbers an answer must get exactly right.

A figure is a number of two or more digits, compared without ``$``, ``%``, thousands
separators and parentheses (``$(1,595)`` and ``1595`` are the same figure). Dates, list
markers ("1. ", "100. "), years written bare ("2023", but not "$2,000"), numbers inside
names ("10-Q", "COVID-19") and a trailing ``SOURCE(S):`` line are not figures. The
evaluation counts them in gold answers; quote selection matches an answer's figures to
the evidence units that state them.

A figure is also stated by its exact thousandfold form: "$13.224 billion" in an answer is
the "13,224" of a table in millions. Only a number with exactly three decimals pairs with
an integer, so the digits are all there and nothing is rounded ("1.45" does not match
"1,450").
"""

from __future__ import annotations

import math
import re

from pipeline.citations import MARKER

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DATE = re.compile(rf"\b(?:{_MONTHS})\s+\d{{1,2}},?\s+\d{{4}}|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b")
_LIST_MARKER = re.compile(r"(?m)^\s*\d{1,3}[.)]\s")
_NUMBER = re.compile(r"\(?\$?\d[\d,]*(?:\.\d+)?%?\)?")
_YEAR = re.compile(r"^(19|20)\d\d$")
_HYPHENATED_NAME = re.compile(r"\b\d+-[A-Za-z]+\b|\b[A-Za-z]+-\d+\b")  # "10-Q", "COVID-19": names
_SOURCE_LINE = re.compile(r"\n\s*SOURCE\(?S?\)?:[^\n]*\s*$")  # the trailing line only, not inline citations


def normalise_figure(raw: str) -> str:
    """A number as compared: without ``$``, ``%``, ``,`` and parentheses."""
    return re.sub(r"[$%,()]", "", raw)


def figures(text: str) -> set[str]:
    """The figures of ``text`` (see the module docstring)."""
    text = _SOURCE_LINE.sub("", text)
    for pattern in (MARKER, _DATE, _LIST_MARKER, _HYPHENATED_NAME):
        text = pattern.sub(" ", text)
    found = set()
    for raw in _NUMBER.findall(text):
        number = normalise_figure(raw).rstrip(".")
        if sum(c.isdigit() for c in number) >= 2 and not _is_year(raw, number):
            found.add(number)
    return found


def _is_year(raw: str, number: str) -> bool:
    """A year is written bare: "2023" is one, "$2,000" and "2,023" are amounts."""
    return bool(_YEAR.match(number)) and raw.strip("().,") == number


def all_numbers(text: str) -> set[str]:
    """Every number in ``text``, normalised the same way (years and dates included)."""
    return {normalise_figure(raw).rstrip(".") for raw in _NUMBER.findall(text)}


_THREE_DECIMALS = re.compile(r"\d+\.\d{3}")
_THOUSANDS = re.compile(r"[1-9]\d{3,}")


def figure_forms(figure: str) -> set[str]:
    """``figure`` and its exact thousandfold form ("13.224" and "13224"), as compared."""
    if _THREE_DECIMALS.fullmatch(figure):
        return {figure, str(int(figure.replace(".", "")))}
    if _THOUSANDS.fullmatch(figure):
        return {figure, f"{figure[:-3]}.{figure[-3:]}"}
    return {figure}


def stated_figures(wanted: set[str], numbers: set[str]) -> set[str]:
    """The figures of ``wanted`` that ``numbers`` (normalised, as from :func:`figures`) state."""
    return {figure for figure in wanted if figure_forms(figure) & numbers}


def unstated_figures(answer: str, evidence: str, asked: str = "") -> set[str]:
    """The figures of ``answer`` that neither ``evidence`` nor the question ``asked`` states, in
    any of their exact forms, and that are not one of the question's quantities times or over
    one the evidence states (:func:`applied_figures`).

    What the user reads must be traceable to the document's words: a figure the model
    rounded, added up or made up is not, however plausible. Numbers inside names such as
    "10-Q" are not figures here.
    """
    wanted = figures(answer)
    unstated = wanted - stated_figures(wanted, all_numbers(f"{evidence}\n{asked}"))
    given, stated = figures(asked), all_numbers(evidence)
    unstated = {figure for figure in unstated if not applied_figures(figure, given, stated)}
    return unstated - restated_quantities(answer, unstated, asked)


def applied_figures(figure: str, asked: set[str], stated: set[str]) -> bool:
    """Whether ``figure`` is a quantity of the question applied to one the evidence states: the
    one times, over or a percentage of the other ("64 GB of RAM" and "25% of the memory": 16 GB),
    to the figure's precision. A rule of the documents applied to the user's own numbers is
    their answer, where two figures of the evidence combined are the model's own arithmetic."""
    try:
        value = float(figure)
    except ValueError:
        return False
    tolerance = 0.5 * 10 ** -len(figure.split(".")[1]) if "." in figure else 0.5
    for a in _values(asked):
        for b in _values(stated):
            candidates = (a * b, a * b / 100, a / b if b else None, b / a if a else None)
            if any(c is not None and abs(c - value) <= tolerance for c in candidates):
                return True
    return False


def _values(numbers: set[str]) -> list[float]:
    found = []
    for number in numbers:
        try:
            found.append(float(number))
        except ValueError:
            continue
    return [v for v in found if v not in (0.0, 1.0)]


def _blanked(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with ``pattern``'s matches turned to spaces, so that offsets still hold."""
    return pattern.sub(lambda m: " " * len(m.group()), text)


def _numbers_only(text: str) -> str:
    """``text`` with citations, dates, list markers and names such as "10-Q" blanked, offsets kept."""
    for pattern in (MARKER, _DATE, _LIST_MARKER, _HYPHENATED_NAME):
        text = _blanked(pattern, text)
    return text


def _inside_a_name(text: str, start: int) -> bool:
    """Whether the number starting at ``start`` is part of a name ("Q3", "FY24")."""
    return start > 0 and text[start - 1].isalpha()


def figure_spans(text: str, wanted: set[str]) -> dict[str, tuple[int, int]]:
    """Where ``text`` first writes each figure of ``wanted`` (as compared): its ``(start, end)``.

    Citations, dates, list markers and names such as "10-Q" are skipped, as
    :func:`unstated_figures` skips them, so a figure is found where it stands as a figure.
    """
    text = _numbers_only(text)
    spans: dict[str, tuple[int, int]] = {}
    for match in _NUMBER.finditer(text):
        figure = normalise_figure(match.group()).rstrip(".")
        if figure in wanted:
            spans.setdefault(figure, match.span())
    return spans


def written_forms(text: str, wanted: set[str]) -> list[str]:
    """The figures of ``wanted`` (as compared) the way ``text`` writes them ("$81.8 billion" → "$81.8"),
    in order of first appearance, each once: how a trace names an answer's unstated figures."""
    spans = sorted(figure_spans(text, wanted).values())
    return [as_written(text[start:end]) for start, end in spans]


def as_written(raw: str) -> str:
    """A figure as a text writes it, for people: its match without a full stop or parentheses."""
    return raw.rstrip(".").strip("()")


_DIRECTION = re.compile(
    r"\b(?:(?P<rise>increas\w*|rose|rise[sn]?|rising|grew|grow(?:s|n|th)?|gain(?:s|ed)?|higher|up)|"
    r"decreas\w*|fell|fall(?:s|en|ing)?|declin\w*|drop\w*|lower|down|reduc\w*)\b",
    re.IGNORECASE,
)
_NEAR = 40  # characters either side of a number in which a word of direction speaks of it


def rise_of_a_decrease(sentence: str, evidence: str) -> list[str]:
    """The numbers ``sentence`` calls a rise ("a 3% increase") that ``evidence`` writes only in
    parentheses, an accountant's minus ("Change: (3)%"): the fact turned upside down.

    The word of direction nearest the number speaks of it ("rose 8% while the quarter fell 1%":
    1% fell). Any number counts here, one digit too, since a change of (1)% is as much a fact
    as one of (12)%; a number the evidence also writes without parentheses is left alone.
    """
    negative, positive = set(), set()
    evidence = _numbers_only(evidence)
    for found in _NUMBER.finditer(evidence):
        if _inside_a_name(evidence, found.start()):
            continue
        raw, number = found.group(), normalise_figure(found.group()).rstrip(".")
        # Only a number closed in its own parentheses is a minus: "(3)", "(3)%", "(1,234)";
        # a period label "(2023 Q1)" opens one around more than the number.
        if not (raw.startswith("(") and raw.endswith(")")):
            positive.add(number)
        elif len(number) > 1 or evidence[found.end() : found.end() + 2].strip().startswith("%"):
            negative.add(number)  # one digit in parentheses is a footnote mark unless a % follows
    only_negative = negative - positive
    blanked = _numbers_only(sentence)
    turned = []
    for match in _NUMBER.finditer(blanked):
        number = normalise_figure(match.group()).rstrip(".")
        if number not in only_negative or "(" in match.group() or _inside_a_name(blanked, match.start()):
            continue
        start = max(0, match.start() - _NEAR)
        words = list(_DIRECTION.finditer(blanked[start : match.end() + _NEAR]))
        if not words:
            continue
        nearest = min(
            words,
            key=lambda w: min(abs(start + w.start() - match.end()), abs(start + w.end() - match.start())),
        )
        if nearest.group("rise"):
            turned.append(as_written(match.group()))
    return turned


_UNITS = {
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), ("time", 0.001)),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("time", 1.0)),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), ("time", 60.0)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), ("time", 3600.0)),
    **dict.fromkeys(("day", "days"), ("time", 86400.0)),
    **dict.fromkeys(("b", "byte", "bytes"), ("size", 1.0)),
    **dict.fromkeys(("kb", "kib", "kilobyte", "kilobytes"), ("size", 1024.0)),
    **dict.fromkeys(("mb", "mib", "megabyte", "megabytes"), ("size", 1024.0**2)),
    **dict.fromkeys(("gb", "gib", "gigabyte", "gigabytes"), ("size", 1024.0**3)),
    **dict.fromkeys(("tb", "tib", "terabyte", "terabytes"), ("size", 1024.0**4)),
}
_NUMBER_WORDS = {
    "a": 1.0, "an": 1.0, "one": 1.0, "half": 0.5, "quarter": 0.25, "two": 2.0, "three": 3.0, "four": 4.0,
    "five": 5.0, "six": 6.0, "seven": 7.0, "eight": 8.0, "nine": 9.0, "ten": 10.0, "twenty": 20.0,
    "thirty": 30.0, "sixty": 60.0, "hundred": 100.0,
}  # fmt: skip
_UNIT = "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True))
_QUANTITY = re.compile(
    rf"(?<![\w.])(\d+(?:\.\d+)?|{'|'.join(_NUMBER_WORDS)})\s*(?:(?:a|an|of\s+a)\s+)?({_UNIT})\b",
    re.IGNORECASE,
)


def quantities(text: str) -> list[tuple[str, str, float]]:
    """The quantities ``text`` writes with a unit of time or size: (the number as written, its
    dimension, its value in seconds or bytes). "half a second" is 0.5 s, "64 GB" 64 GiB."""
    found = []
    for match in _QUANTITY.finditer(text):
        raw, unit = match.group(1), match.group(2).lower()
        number = _NUMBER_WORDS.get(raw.lower())
        value = number if number is not None else float(raw)
        dimension, factor = _UNITS[unit]
        found.append((raw, dimension, value * factor))
    return found


def restated_quantities(answer: str, wanted: set[str], asked: str) -> set[str]:
    """The figures of ``wanted`` that ``answer`` writes as a quantity the question ``asked`` gave
    in other words or units ("500 milliseconds" for "half a second"): the user's own, not an
    invention."""
    given = [(dimension, value) for _, dimension, value in quantities(asked)]
    restated = set()
    for raw, dimension, value in quantities(answer):
        figure = normalise_figure(raw).rstrip(".")
        if figure in wanted and any(
            d == dimension and math.isclose(v, value, rel_tol=1e-6) for d, v in given
        ):
            restated.add(figure)
    return restated
