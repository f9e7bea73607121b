"""Rebuild lines, headings and tables from the word cells of a natively parsed PDF.

docling's model-free PDF pipeline gives one item per text line, with no headings and with
every table cell in its own paragraph, so a row's label and its figures drift apart. Its
parsed pages still hold each word's rectangle and font name, which is enough to:

- group words into lines by vertical centre, and a line into column segments where the
  horizontal gap is wider than the line height;
- treat runs of lines with two or more numeric segments as table rows, rendered as
  Markdown rows so ``Total net sales | 81,797 | 82,959`` stays together;
- call a short, non-numeric, single-segment line a heading when it is mostly bold or
  clearly taller than body text; heading levels follow the heading's height (taller is
  outer), bold body-height headings being innermost;
- drop running headers and footers: lines near the top or bottom edge, or first or last on
  their page, whose text (digits ignored) repeats there on many pages;
- join lines into paragraphs by the document's own line spacing: a double-spaced protocol
  puts a full line height between the lines of one paragraph, so a fixed gap would make every
  line a paragraph of its own (and every line break a sentence break downstream);
- repair punctuation that a font's Mac Roman encoding turned into Latin-1 letters
  ("Òhappy.Ó" is “happy.”, "donÕt" is don’t).

Everything here is plain Python over :class:`Word` tuples, so it is tested without PDFs.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from statistics import median

from index_build.document import Block

_NUMERIC_CELL = re.compile(r"^[($]*\s*-?\$?\s*\d[\d,]*(\.\d+)?\s*\)?\s*%?\)?$|^[—–-]+$")
_GLUE_FORWARD = {"$", "(", "($"}
_GLUE_BACKWARD = {"%", ")", "%)"}
# "Item 2.", "Note 3", "PART I", "4.1": a heading number set apart from its title by a tab stop.
_NUMBERING = re.compile(
    r"^((item|part|note|section|chapter|appendix)\s+)?[\dIVXLC]+[A-Z]?(\.\d+)*\.?$", re.IGNORECASE
)
_MAC_ROMAN_HINT = re.compile("[ÐÑÒÓÔÕ]")
_MAC_ROMAN_DOUBLE = re.compile(r"Ò([^ÒÓ\n]{1,200}?)Ó")
_MAC_ROMAN_APOSTROPHE = re.compile(r"(?<=[A-Za-z])[ÕÔ](?=[A-Za-z]|\b)")
_MAC_ROMAN_DASH = re.compile(r"(?<=[\s\d])[ÐÑ](?=[\s\d])")
_BOLD = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)

HEADING_MAX_WORDS = 14
HEADING_HEIGHT_RATIO = 1.18
EDGE_FRACTION = 0.07


@dataclass(frozen=True, slots=True)
class Word:
    """A word cell in top-left page coordinates (points)."""

    text: str
    left: float
    top: float
    right: float
    bottom: float
    bold: bool

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def centre(self) -> float:
        return (self.top + self.bottom) / 2


@dataclass(slots=True)
class Line:
    """Words sharing a baseline, split into column segments."""

    page: int
    top: float
    bottom: float
    height: float
    segments: list[str]
    bold_fraction: float

    @property
    def text(self) -> str:
        return " ".join(self.segments)

    @property
    def numeric_segments(self) -> int:
        return sum(1 for s in self.segments if _NUMERIC_CELL.match(s))


def words_to_lines(words: list[Word], page: int) -> list[Line]:
    """Group a page's words into lines (top to bottom) and each line into column segments."""
    lines: list[list[Word]] = []
    anchor: Word | None = None  # the first word of the current line sets its centre and height
    for word in sorted(words, key=lambda w: (w.centre, w.left)):
        if not word.text.strip():
            continue
        if anchor is not None and abs(word.centre - anchor.centre) <= 0.5 * max(anchor.height, word.height):
            lines[-1].append(word)
            continue
        anchor = word
        lines.append([word])
    return [_make_line(ws, page) for ws in lines]


def _make_line(words: list[Word], page: int) -> Line:
    words.sort(key=lambda w: w.left)
    height = median(w.height for w in words)
    segments: list[list[str]] = [[words[0].text]]
    for prev, word in zip(words, words[1:]):
        if word.left - prev.right > height:
            segments.append([word.text])
        else:
            segments[-1].append(word.text)
    chars = sum(len(w.text) for w in words)
    bold_chars = sum(len(w.text) for w in words if w.bold)
    return Line(
        page=page,
        top=min(w.top for w in words),
        bottom=max(w.bottom for w in words),
        height=height,
        segments=_glue_symbols([repair_mac_roman_quotes(" ".join(s)) for s in segments]),
        bold_fraction=bold_chars / chars if chars else 0.0,
    )


def _glue_symbols(segments: list[str]) -> list[str]:
    """Attach lone ``$``, ``(``, ``%`` and ``)`` segments to the figure they belong to."""
    out: list[str] = []
    carry = ""
    for seg in segments:
        if seg in _GLUE_FORWARD:
            carry += seg
            continue
        if seg in _GLUE_BACKWARD and out:
            out[-1] += seg
            continue
        out.append(carry + seg)
        carry = ""
    if carry:
        out.append(carry)
    return out


def drop_running_headers(pages: list[list[Line]], page_heights: list[float]) -> list[list[Line]]:
    """Remove the running headers and footers: lines at a page's top or bottom whose digit-free
    text recurs there on at least a third of the pages.

    A line is at the top or bottom when it lies near the page's edge, or when it is the page's
    first or last line: a report's footer ("<publisher> | <report> | 11") or a bare page number
    is often set just under the page's last text, which ends higher on some pages than on others,
    far from the edge. Left in, such lines stand in the chunks the model reads and are quoted as
    the evidence that comes closest to a question about the document (docs/benchmarks.md,
    3 December, twenty-fourth session).
    """
    if len(pages) < 3:
        return pages

    def key(line: Line) -> str:
        return re.sub(r"\d+", "#", line.text.lower()).strip()

    def ends(lines: list[Line], height: float) -> set[int]:
        """The positions of the page's lines at its top or bottom."""
        return {
            i
            for i, line in enumerate(lines)
            if i in (0, len(lines) - 1)
            or line.top < EDGE_FRACTION * height
            or line.bottom > (1 - EDGE_FRACTION) * height
        }

    page_ends = [ends(lines, height) for lines, height in zip(pages, page_heights)]
    counts = Counter(k for lines, at in zip(pages, page_ends) for k in {key(lines[i]) for i in at})
    threshold = max(3, len(pages) // 3)
    repeated = {k for k, n in counts.items() if n >= threshold}
    return [
        [line for i, line in enumerate(lines) if not (i in at and key(line) in repeated)]
        for lines, at in zip(pages, page_ends)
    ]


def body_height(lines: list[Line]) -> float:
    """The line height that carries most characters: the document's body text size."""
    weights: Counter[float] = Counter()
    for ln in lines:
        weights[round(ln.height * 2) / 2] += len(ln.text)
    return weights.most_common(1)[0][0] if weights else 10.0


def _heading_style(line: Line, body: float) -> tuple[float, bool] | None:
    """(rounded height, bold) when the line looks like a heading, else None."""
    text = line.text
    words = text.split()
    numbered = len(line.segments) == 2 and _NUMBERING.match(line.segments[0])
    if not (len(line.segments) == 1 or numbered) or not words or len(words) > HEADING_MAX_WORDS:
        return None
    letters = sum(c.isalpha() for c in text)
    if letters < 3 or letters < 0.5 * len(text.replace(" ", "")):
        return None
    if not (text[0].isupper() or text[0].isdigit()):
        return None
    if text.endswith((",", ";")) or (text.endswith(".") and len(words) > 6):
        return None
    taller = line.height >= HEADING_HEIGHT_RATIO * body
    bold = line.bold_fraction >= 0.8
    if not (taller or bold):
        return None
    return (round(line.height * 2) / 2, bold)


def _table_rows(lines: list[Line]) -> list[bool]:
    """Mark the lines that belong to tables: runs anchored on rows with two or more figures."""
    numeric = [ln.numeric_segments >= 2 for ln in lines]
    in_table = list(numeric)
    anchors = [i for i, n in enumerate(numeric) if n]
    # Short label lines between table rows ("Operating expenses:") belong to the table.
    for a, b in zip(anchors, anchors[1:]):
        gap = range(a + 1, b)
        if 0 < len(gap) <= 3 and all(
            len(lines[i].text.split()) <= HEADING_MAX_WORDS and lines[i].page == lines[a].page for i in gap
        ):
            for i in gap:
                in_table[i] = True
    # Header lines just above a table: multi-column ("Three Months Ended", the dates) or a
    # group label ("Net sales:").
    for i in range(len(lines)):
        if in_table[i] and (i == 0 or not in_table[i - 1]):
            j = i - 1
            while j >= 0 and i - j <= 3 and lines[j].page == lines[i].page and _table_header(lines[j]):
                in_table[j] = True
                j -= 1
    return in_table


def _table_header(line: Line) -> bool:
    return len(line.segments) >= 2 or (line.text.endswith(":") and len(line.text.split()) <= 5)


def _markdown_row(segments: list[str]) -> str:
    return "| " + " | ".join(s.replace("|", "/") for s in segments) + " |"


def lines_to_blocks(lines: list[Line]) -> list[Block]:
    """Turn a document's lines into heading, paragraph and Markdown table blocks."""
    if not lines:
        return []
    body = body_height(lines)
    styles = {i: _heading_style(ln, body) for i, ln in enumerate(lines)}
    in_table = _table_rows(lines)
    levels = _heading_levels({s for i, s in styles.items() if s and not in_table[i]})
    new_paragraph_gap = _paragraph_gap(
        lines, [not in_table[i] and styles[i] is None for i in range(len(lines))]
    )

    blocks: list[Block] = []
    paragraph: list[Line] = []
    table: list[Line] = []

    def flush() -> None:
        if paragraph:
            blocks.append(Block("text", _join_lines(paragraph), paragraph[0].page))
            paragraph.clear()
        if table:
            rows = [_markdown_row(ln.segments) for ln in table]
            width = max(len(ln.segments) for ln in table)
            rows.insert(1, _markdown_row(["---"] * width))
            blocks.append(Block("table", "\n".join(rows), table[0].page))
            table.clear()

    previous: Line | None = None
    for i, line in enumerate(lines):
        style = styles[i]
        if in_table[i]:
            if paragraph or (table and line.page != table[-1].page):
                flush()
            table.append(line)
        elif style is not None:
            flush()
            level = levels[style]
            last = blocks[-1] if blocks else None
            if (
                last is not None
                and last.kind == "heading"
                and last.level == level
                and previous is not None
                and previous.page == line.page
                and line.top - previous.bottom < line.height
            ):
                blocks[-1] = Block("heading", f"{last.text} {line.text}", last.page, level)
            else:
                blocks.append(Block("heading", line.text, line.page, level))
        else:
            if table:
                flush()
            if paragraph and (
                line.page != paragraph[-1].page
                or line.top - paragraph[-1].bottom > new_paragraph_gap * line.height
            ):
                flush()
            paragraph.append(line)
        previous = line
    flush()
    return blocks


def _paragraph_gap(lines: list[Line], is_body: list[bool]) -> float:
    """The gap between two body lines, in line heights, above which the second starts a paragraph.

    0.9 for single-spaced text; for wider spacing, half a line more than the document's usual
    gap between consecutive body lines (most of which are inside paragraphs).
    """
    gaps = [
        (b.top - a.bottom) / b.height
        for a, b, body_a, body_b in zip(lines, lines[1:], is_body, is_body[1:])
        if body_a and body_b and a.page == b.page and b.height > 0 and 0 <= b.top - a.bottom < 3 * b.height
    ]
    return max(0.9, median(gaps) + 0.5) if gaps else 0.9


def repair_mac_roman_quotes(text: str) -> str:
    """``text`` with quotes and dashes that a Mac Roman font decoded as Latin-1 put back.

    Only in the places where the letter cannot be meant: Ò…Ó around a word or phrase, Õ or Ô
    between letters (an apostrophe), Ð or Ñ standing alone between spaces or digits (a dash).
    """
    if not _MAC_ROMAN_HINT.search(text):
        return text
    text = _MAC_ROMAN_DOUBLE.sub(lambda m: f"\u201c{m.group(1)}\u201d", text)
    text = _MAC_ROMAN_APOSTROPHE.sub("\u2019", text)
    return _MAC_ROMAN_DASH.sub(lambda m: "\u2013" if m.group() == "Ð" else "\u2014", text)


def _heading_levels(styles: set[tuple[float, bool]]) -> dict[tuple[float, bool], int]:
    """Rank heading styles: taller first, bold before regular at equal height; at most 4 levels."""
    ordered = sorted(styles, key=lambda s: (-s[0], not s[1]))
    return {style: min(rank + 1, 4) for rank, style in enumerate(ordered)}


def _join_lines(lines: list[Line]) -> str:
    text = ""
    for ln in lines:
        part = ln.text
        if text.endswith("-") and part[:1].islower():
            text = text[:-1] + part
        else:
            text = f"{text} {part}" if text else part
    return text


def is_bold_font(font_name: str) -> bool:
    """Whether a PDF font name denotes a bold face (``/Arial-BoldMT``, ``TimesNewRomanPS-Black``)."""
    return bool(_BOLD.search(font_name or ""))
