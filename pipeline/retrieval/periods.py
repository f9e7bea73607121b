"""Periods and versions named in text: "Q1 2023", "2023 Q1", "July 1, 2023", "fiscal 2022", "v4.2".

Documents are dated by the period they cover (a quarter, a month, a day), or carry a version
or release number; questions name them ("in Q1 2023", "version 4.2 of the manual"). Both
sides are parsed by the same functions, so a question and a document agree on what
"Q1 2023" means. Nothing here knows any particular kind of document.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORDINAL_QUARTER = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}

_YEAR = r"((?:19|20)\d\d)"
_QUARTER_YEAR = re.compile(rf"\bQ([1-4])(?:\s*(?:FY|fiscal)?\s*['’]?)[\s/-]*{_YEAR}\b", re.IGNORECASE)
_YEAR_QUARTER = re.compile(rf"\b{_YEAR}[\s/-]*Q([1-4])\b", re.IGNORECASE)
_WORD_QUARTER = re.compile(
    rf"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?)?{_YEAR}\b",
    re.IGNORECASE,
)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}),?\s+{_YEAR}\b", re.IGNORECASE)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})\s+({_MONTH})\.?,?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+{_YEAR}\b", re.IGNORECASE)
_ISO_DATE = re.compile(rf"\b{_YEAR}-(\d{{2}})-(\d{{2}})\b")
_FISCAL_YEAR = re.compile(rf"\b(?:FY\s?['’]?|fiscal\s+(?:year\s+)?){_YEAR}\b", re.IGNORECASE)
_BARE_YEAR = re.compile(rf"(?<![\d,.$])\b{_YEAR}\b(?![\d,.]\d)")
_VERSION = re.compile(
    r"(?:\b(?:version|ver\.?|release|rel\.?|revision|rev\.?|edition)\s*|(?<![\w.])v)(\d+(?:\.\d+){0,3})\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True, order=True)
class Period:
    """A span of time: a year, a quarter of it, a month, or a single day (0 = not given).

    Quarters are the labels a text uses ("Q1 2023"), not necessarily calendar quarters: a
    document named "2023 Q1" is Q1 2023 whatever months its fiscal quarter covers.
    """

    year: int
    quarter: int = 0
    month: int = 0
    day: int = 0

    def label(self) -> str:
        """``2023 Q1``, ``2023-07-01``, ``2023-07`` or ``2023``."""
        if self.quarter:
            return f"{self.year} Q{self.quarter}"
        if self.day:
            return f"{self.year}-{self.month:02d}-{self.day:02d}"
        if self.month:
            return f"{self.year}-{self.month:02d}"
        return str(self.year)

    def end(self) -> tuple[int, int, int]:
        """The last day of the span, as (year, month, day): what "newer" compares."""
        month = self.quarter * 3 if self.quarter else (self.month or 12)
        day = self.day or calendar.monthrange(self.year, month)[1]
        return (self.year, month, day)

    def covers(self, other: Period) -> bool:
        """Whether ``other`` (as precise or more) lies within this span."""
        if self.year != other.year:
            return False
        if self.quarter:
            if other.quarter:
                return other.quarter == self.quarter
            return bool(other.month) and (other.month - 1) // 3 + 1 == self.quarter
        if self.month:
            return other.month == self.month and (not self.day or other.day == self.day)
        return True


def parse_period(label: str) -> Period | None:
    """The inverse of :meth:`Period.label` (``None`` for an empty or foreign label)."""
    found = periods_in(label, bare_years=True)
    return found[0] if found else None


def periods_in(text: str, *, bare_years: bool = False) -> list[Period]:
    """Every period ``text`` names, most precise forms first, without repeats.

    ``bare_years`` also takes a lone year ("in 2022"), which is right for a question or a
    file name but too noisy for a document's body.
    """
    found: list[Period] = []
    taken: list[tuple[int, int]] = []

    def add(period: Period, match: re.Match[str]) -> None:
        if any(start < match.end() and match.start() < end for start, end in taken):
            return
        taken.append(match.span())
        if period not in found:
            found.append(period)

    for m in _QUARTER_YEAR.finditer(text):
        add(Period(int(m.group(2)), int(m.group(1))), m)
    for m in _YEAR_QUARTER.finditer(text):
        add(Period(int(m.group(1)), int(m.group(2))), m)
    for m in _WORD_QUARTER.finditer(text):
        add(Period(int(m.group(2)), _ORDINAL_QUARTER[m.group(1).lower()]), m)
    for m in _ISO_DATE.finditer(text):
        if 1 <= int(m.group(2)) <= 12 and 1 <= int(m.group(3)) <= 31:
            add(Period(int(m.group(1)), 0, int(m.group(2)), int(m.group(3))), m)
    for m in _MONTH_DAY_YEAR.finditer(text):
        if 1 <= int(m.group(2)) <= 31:
            add(Period(int(m.group(3)), 0, _MONTHS[m.group(1).lower()], int(m.group(2))), m)
    for m in _DAY_MONTH_YEAR.finditer(text):
        if 1 <= int(m.group(1)) <= 31:
            add(Period(int(m.group(3)), 0, _MONTHS[m.group(2).lower()], int(m.group(1))), m)
    for m in _MONTH_YEAR.finditer(text):
        add(Period(int(m.group(2)), 0, _MONTHS[m.group(1).lower()]), m)
    for m in _FISCAL_YEAR.finditer(text):
        add(Period(int(m.group(1))), m)
    if bare_years:
        for m in _BARE_YEAR.finditer(text):
            add(Period(int(m.group(1))), m)
    return found


def versions_in(text: str) -> list[str]:
    """Version or release numbers ``text`` names ("version 4.2", "v4.2", "release 3"), in order."""
    return list(dict.fromkeys(m.group(1) for m in _VERSION.finditer(text)))


def version_key(version: str) -> tuple[int, ...]:
    """A version as comparable numbers: ``4.10`` is newer than ``4.9``."""
    return tuple(int(part) for part in version.split(".") if part.isdigit())
