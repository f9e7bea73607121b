"""Planted documentation problems for measuring the audit (``make bench ONLY=audit``).

Real pages are copied and one change is planted in each copy, in the prose of a paragraph
(never in code, tables of examples or headings), as a writer's slip would put it there:

- ``contradiction``: a figure changed ("wait 30 seconds" → "wait 61 seconds"), or a statement
  negated ("is" → "is not"; "does" → "does not"); ``contradiction:default`` a default changed
  ("the default is 64" → "the default is 129"), ``contradiction:date`` a date's day ("November
  29, 1998" → "November 2, 1998");
- ``near_duplicate``: one word of a long sentence changed (copy-paste drift);
- ``stale``: a release number moved back ("version 9.3 and later" → "version 8.2 and later").

The copy keeps the original's name with ``.planted-<kind>-<n>`` before its suffix, so every
plant is a pair: the original passage and the changed copy. A plant is scored as found when
a finding of its kind quotes the copy's passage that holds the changed words.
"""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

KINDS = ("contradiction", "near_duplicate", "stale")
_PROSE_TAGS = re.compile(r"<(/?)(p|pre|code|table|h[1-6]|title|script|style|head|a)\b", re.IGNORECASE)
_TAG = re.compile(r"(<[^>]+>)")
_FIGURE = re.compile(
    r"\b(\d{1,4})(?=\s+(?:bytes|seconds|minutes|hours|days|percent|MB|kB|GB|connections|rows|times|"
    r"characters|bits|pages|files|entries|columns|tables|levels)\b)"
)
_VERB = re.compile(r"\b(is|are|can|will|must|should|does|do)\s+(?!(?:not|never|no|only)\b)([a-z]{3,})\b")
_DEFAULT = re.compile(r"\b(default(?:s to| is| value is| of)\s+)(\d{1,5})\b")
_DATE = re.compile(
    r"\b((?:January|February|March|April|May|June|July|August|September|October|November|December)\s+)"
    r"(\d{1,2})(?=,?\s+\d{4})|\b(\d{4}-\d{2}-)(\d{2})\b"
)
_VERSION = re.compile(r"\b((?:PostgreSQL|version|release)\s+)(9\.\d|1[0-5])\b")
_LONG_WORD = re.compile(r"\b[a-z]{6,}\b")
_SENTENCE_WORDS = 15


@dataclass(frozen=True, slots=True)
class Plant:
    """One planted change: its kind, the copy it is in, and the changed words as they read."""

    kind: str
    copy: Path
    planted: str
    original: str
    how: str = ""  # "default", "date" for those contradictions; else the kind


def plant_corpus(
    source: Path, out: Path, documents: int, per_kind: dict[str, int], seed: int = 7
) -> list[Plant]:
    """A corpus under ``out`` (one folder per collection of ``source``): ``documents`` pages
    drawn from ``source``, and a changed copy of some of them for each plant."""
    rng = random.Random(seed)
    pages = sorted(p for p in source.rglob("*.htm*") if p.is_file())
    chosen = rng.sample(pages, min(documents, len(pages)))
    plants: list[Plant] = []
    used: set[Path] = set()
    for key, wanted in per_kind.items():
        kind, _, how = key.partition(":")
        special = {"stale": _VERSION, "default": _DEFAULT, "date": _DATE}.get(how or kind)
        candidates = chosen[:] if special is None else [p for p in pages if special.search(_text_of(p))]
        rng.shuffle(candidates)
        for page in candidates:
            if sum(1 for p in plants if p.kind == kind and p.how == (how or kind)) >= wanted:
                break
            if page in used:
                continue
            change = _plant(how or kind, page.read_text(encoding="utf-8", errors="replace"), rng)
            if change is None:
                continue
            html, planted, original = change
            folder = out / page.parent.relative_to(source)
            folder.mkdir(parents=True, exist_ok=True)
            copy = folder / f"{page.stem}.planted-{kind}-{len(plants)}{page.suffix}"
            copy.write_text(html, encoding="utf-8")
            used.add(page)
            plants.append(Plant(kind, copy, planted, original, how or kind))
    for page in {*chosen, *used}:
        folder = out / page.parent.relative_to(source)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(page, folder / page.name)
    return plants


def _text_of(page: Path) -> str:
    return "".join(text for text, _ in _prose(page.read_text(encoding="utf-8", errors="replace")))


def _prose(html: str) -> Iterator[tuple[str, int]]:
    """The text between tags inside paragraphs (not code, tables, headings or links), with its offset."""
    depth = {"p": 0, "skip": 0}
    offset = 0
    for segment in _TAG.split(html):
        if segment.startswith("<"):
            match = _PROSE_TAGS.match(segment)
            if match:
                closing, name = match.group(1) == "/", match.group(2).lower()
                key = "p" if name == "p" else "skip"
                depth[key] = max(0, depth[key] + (-1 if closing else 1))
        elif depth["p"] and not depth["skip"]:
            yield segment, offset
        offset += len(segment)


def _plant(kind: str, html: str, rng: random.Random) -> tuple[str, str, str] | None:
    """``html`` with one change of ``kind``, the changed words and the words they replace."""
    sites = []
    for text, offset in _prose(html):
        if kind == "contradiction":
            sites += [("figure", m, offset) for m in _FIGURE.finditer(text)]
            sites += [("negation", m, offset) for m in _VERB.finditer(text)]
        elif kind == "default":
            sites += [("default", m, offset) for m in _DEFAULT.finditer(text)]
        elif kind == "date":
            sites += [("date", m, offset) for m in _DATE.finditer(text)]
        elif kind == "stale":
            sites += [("version", m, offset) for m in _VERSION.finditer(text)]
        elif len(text.split()) >= _SENTENCE_WORDS:
            sites += [("word", m, offset) for m in _LONG_WORD.finditer(text)]
    if not sites:
        return None
    how, match, offset = rng.choice(sites)
    start, end = offset + match.start(), offset + match.end()
    original = match.group(0)
    if how == "figure":
        new = str(int(match.group(1)) * 2 + 1)
    elif how == "default":
        new = f"{match.group(1)}{int(match.group(2)) * 2 + 1}"
    elif how == "date":
        prefix, day = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        new = f"{prefix}{int(day) % 28 + 1:0{len(day)}d}"
    elif how == "negation":
        new = f"{match.group(1)} not {match.group(2)}"
    elif how == "version":
        major = match.group(2).split(".")[0]
        older = "8.2" if major == "9" else f"9.{int(major) - 9}"
        new = f"{match.group(1)}{older}"
    else:
        new = "certain"
    return html[:start] + new + html[end:], new, original
