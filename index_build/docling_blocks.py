"""A ``DoclingDocument`` flattened into the blocks docfinder chunks: headings, paragraphs,
Markdown tables, and entries kept whole.

Technical manuals put their facts in structures that paragraphs tear apart. A parameter is a
definition-list entry, its name in the term and its default in the description
(``random_page_cost (floating point)`` / ``... The default is 4.0.``); a command is a code block of
several lines. Cut into sentences, "The default is 4.0." no longer says of what, and a
command's lines become separate fragments. So each definition-list entry becomes one
``entry`` block, its term, a dash and its description (``random_page_cost (floating point) —
Sets the planner's estimate ...``), and each code block one ``entry`` block with its lines:
chunking keeps an entry whole in one chunk when it fits, and evidence extraction makes it one
unit (:mod:`index_build.evidence`).

The pieces of one paragraph with inline code or links (docling's inline groups) are joined
into one block, without a space inside brackets or before punctuation. A page's navigation
bars are left out (:func:`navigation_links`), and a table keeps its words, not its links'
targets or its cells' padding (:func:`readable_table`). An admonition's title ("Note", "Tip")
heads no section: the box's text, and what follows it, stay in the section they stand in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from index_build.document import Block, ParsedDocument

DESCRIPTION_LIST = "description list"  # docling's name for the list group of an HTML <dl>
DESCRIPTIONS = "descriptions"  # and for the group of a term's <dd> descriptions
TERM_SEPARATOR = " — "
# An entry's term at the start of its block: a name, its options or its type ("lock_timeout
# (integer)", "-t --target-release"), a few words before the separator, and its description a
# sentence ("— Sets the ..."). A paragraph's own dash comes after more words, or after a finished
# sentence, and goes on in small letters ("When you archive — and most sites do — test it").
_DEFINED_TERM = re.compile(
    rf"^(?P<term>[^\n.!?]{{1,60}}?){re.escape(TERM_SEPARATOR)}(?=[A-Z0-9\"'(`])", re.MULTILINE
)
MAX_TERM_WORDS = 6
_LINK = re.compile(r"^\[([^\]]*)\]\(([^)]*)\)$")
_ABSOLUTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)  # a link to another site
_IMAGE_MARK = "<!-- image -->"  # docling's Markdown for an image
_IMAGE = re.compile(rf"^(.*?)\s*{re.escape(_IMAGE_MARK)}$")
_NAVIGATION_ROWS = 3
_LINK_IN_TEXT = re.compile(r"!?\[([^\]]*)\]\((?:[^()\s]|\([^()\s]*\))*\)")
_PADDING = re.compile(r"[ \t]{2,}")
_RULE = re.compile(r"-{3,}")
_SECTION_REFERENCE = re.compile(
    r"^(?:(?:Table|Figure|Example)\s+)?(?:[A-Z]|\d{1,3})(?:\.\d{1,3})*\.\s+[^\n—]{1,150}$"
)
_LIST_TITLE_WORDS = 4  # "Table of Contents", "List of Examples"
# The title of an admonition box: DocBook writes ``<div class="note"><h3>Note</h3>``, the same
# heading level as the section the box stands in. Read as a heading it would head everything
# after the box up to the next real section (in the PostgreSQL manual a tenth of the chunks:
# "random_page_cost" under "20.7. Query Planning > Note", not "20.7.2. Planner Cost Constants"),
# in citations, in search's heading field and in the model's prompt. It heads nothing.
ADMONITION_TITLE = re.compile(
    r"^\s*(?:note|tip|hint|warning|caution|important|attention|danger|remark)\s*:?\s*$", re.IGNORECASE
)
_NO_SPACE_BEFORE = tuple(",.;:!?)]")
_NO_SPACE_AFTER = tuple("([")


def docling_to_parsed(doc: Any, fallback_title: str) -> ParsedDocument:
    """Flatten a ``DoclingDocument`` into heading, text, table and entry blocks (module docstring)."""
    from docling_core.types.doc import (
        CodeItem,
        DocItemLabel,
        GroupLabel,
        SectionHeaderItem,
        TableItem,
        TextItem,
        TitleItem,
    )

    blocks = _Blocks()
    navigation: set[str] = set()  # the link labels of the page's navigation bars
    title = ""
    for item, _depth in doc.iterate_items():
        parent = item.parent.resolve(doc) if item.parent is not None else None
        page = item.prov[0].page_no if getattr(item, "prov", None) else 0
        if isinstance(item, TitleItem):
            title = title or item.text.strip()
            blocks.add(Block("heading", item.text.strip(), page, 1))
        elif isinstance(item, SectionHeaderItem):
            if not ADMONITION_TITLE.match(item.text):  # a box's label: its section goes on
                blocks.add(Block("heading", item.text.strip(), page, item.level + 1))
        elif isinstance(item, TableItem):
            markdown = item.export_to_markdown(doc=doc).strip()
            links = navigation_links(markdown)
            if links:
                navigation |= links
            elif markdown:
                blocks.add(Block("table", readable_table(markdown.replace(_IMAGE_MARK, "")), page))
        elif isinstance(item, TextItem):
            if item.label in (DocItemLabel.PAGE_HEADER, DocItemLabel.PAGE_FOOTER):
                continue
            if item.label == DocItemLabel.CAPTION and parent is doc.body:
                continue  # an image's alt text ("[Note]", "Prev"), gathered out of the reading order
            text = item.text.strip()
            if not text or text.lower() in navigation:
                continue
            inline = parent.self_ref if getattr(parent, "label", None) == GroupLabel.INLINE else None
            entry = _entry_of(item, doc)
            if entry is not None:
                code = isinstance(item, CodeItem) and inline is None
                blocks.add_to_entry(entry.term, entry.in_description, text, page, inline, code)
            elif inline is not None:
                blocks.add_inline(inline, text, page, isinstance(item, CodeItem))
            elif isinstance(item, CodeItem):
                blocks.add(Block("entry", text, page))
            else:
                prefix = "- " if item.label == DocItemLabel.LIST_ITEM else ""
                blocks.add(Block("text", prefix + text, page))
    page_count = len(doc.pages) if getattr(doc, "pages", None) else 0
    first_heading = next((b.text for b in blocks.blocks if b.kind == "heading"), "")
    return ParsedDocument(
        title=title or first_heading or fallback_title,
        blocks=tuple(without_contents_lists(blocks.blocks)),
        page_count=page_count,
    )


def without_contents_lists(blocks: list[Block]) -> list[Block]:
    """``blocks`` less a page's table of contents: a run of at least two entries that are each a
    section number and a title (DocBook's ``dl.toc``: "11.2.3. GiST", "Table 9.1. Comparison
    Operators"), with the short title just above it ("Table of Contents").

    The same titles head the sections themselves. In the lists they were 6 % of the techdocs
    manuals' evidence units, no fact in any: matching a question by its title, they took the
    context's room and sent the citation to the chapter page instead of the section that answers.
    """

    def is_reference(i: int) -> bool:
        return blocks[i].kind == "entry" and bool(_SECTION_REFERENCE.match(blocks[i].text))

    dropped: set[int] = set()
    for referencing, run in groupby(range(len(blocks)), key=is_reference):
        run = list(run)
        if referencing and len(run) >= 2:
            dropped.update(run)
            above = blocks[run[0] - 1] if run[0] else None
            if above is not None and above.kind == "text" and len(above.text.split()) <= _LIST_TITLE_WORDS:
                dropped.add(run[0] - 1)
    return [b for i, b in enumerate(blocks) if i not in dropped]


def navigation_links(markdown: str) -> set[str]:
    """The link labels of a navigation bar, lower-cased; empty for any other table.

    Generated manuals (DocBook's HTML, as PostgreSQL's and Debian's) frame every page with a
    small table of links to the previous, next and parent pages ("Prev | Up | Next" over the
    neighbours' titles): the same words on hundreds of pages, no evidence of anything. A table
    of at most ``_NAVIGATION_ROWS`` rows, at least two distinct links (or linked images) and at least half of
    its cells links is such a bar; its link labels, repeated as loose words beside it, are left
    out too. A bar links pages of its own site: a link to another site (the Debian Reference's
    two-package tables link each package's page, popularity and size) is content.
    """
    rows = [line for line in markdown.splitlines() if not _is_rule(line)]
    cells = [c.strip() for line in rows for c in line.strip().strip("|").split("|")]
    cells = [c for c in cells if c]
    links = [label for label in map(_local_link_label, cells) if label is not None]
    labels = {label.lower() for label in links if label}
    if len(rows) > _NAVIGATION_ROWS or len(labels) < 2 or len(links) * 2 < len(cells):
        return set()
    return labels


def readable_table(markdown: str) -> str:
    """A Markdown table as its words: each link as its label, each cell without its padding.

    docling writes an HTML table's links as Markdown links and pads every cell to its column's
    width. In the Debian Reference's package tables a row is three links (the package's page,
    its popularity graph, its size report) and a description: ``| [`fail2ban`](http://packages
    .debian.org/sid/fail2ban) | [V:111, I:125](http://qa.debian.org/popcon-graph.php?...) | ...
    | ban IPs that cause multiple authentication errors |`` padded with spaces. Link targets are
    no words of the document: they fill the embedder's 256-token window, add "http", "org" and
    "php" to BM25, and take the room of other evidence in the LLM's token budget (on the Debian
    Reference they were 15 % of all characters). The citation links the document itself.
    """
    lines = []
    for line in markdown.splitlines():
        line = _PADDING.sub(" ", _LINK_IN_TEXT.sub(lambda found: found.group(1).strip(), line))
        lines.append(_RULE.sub("---", line) if _is_rule(line) else line)
    return "\n".join(lines)


def _is_rule(line: str) -> bool:
    """Whether a Markdown table line is the rule under its header (``|---|:--|``), not a row."""
    return not set(line) - set("|-: ")


def _local_link_label(cell: str) -> str | None:
    """The label of a cell that is one link within the site (or one linked image), else None."""
    link = _LINK.match(cell)
    if link is not None:
        return None if _ABSOLUTE.match(link.group(2).strip()) else link.group(1).strip()
    image = _IMAGE.match(cell)
    return image.group(1).strip() if image is not None else None


@dataclass(frozen=True, slots=True)
class _Entry:
    term: str  # the self_ref of the entry's term item
    in_description: bool


def _entry_of(item: Any, doc: Any) -> _Entry | None:
    """The definition-list entry ``item`` belongs to (the innermost), with whether it is in the
    description rather than the term; None outside definition lists."""
    in_description = False
    node = item
    while node.parent is not None:
        parent = node.parent.resolve(doc)
        name = getattr(parent, "name", "")
        if name == DESCRIPTIONS:
            in_description = True
        if name == DESCRIPTION_LIST:
            return _Entry(node.self_ref, in_description)
        node = parent
    return None


class _Blocks:
    """The blocks in reading order, with the paragraph or entry being joined at the end."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.inline: str | None = None  # the inline group the last block is joining
        self.all_code = False  # whether that group's pieces are all code
        self.entry: str | None = None  # the definition-list term the last block is joining
        self.described = False  # whether the entry has its separator after the term
        self.entry_inline: str | None = None

    def add(self, block: Block) -> None:
        self.blocks.append(block)
        self.inline = self.entry = None

    def add_inline(self, group: str, text: str, page: int, code: bool) -> None:
        """A piece of a paragraph with inline code or links: joined to the paragraph's block. A
        group of code pieces alone over several lines (a command synopsis with placeholders in
        it) is a code block: an entry."""
        if self.inline == group and self.blocks:
            self.all_code &= code
            self._append(_joined(self.blocks[-1].text, text))
        else:
            self.add(Block("text", text, page))
            self.inline, self.all_code = group, code
        last = self.blocks[-1]
        if self.all_code and "\n" in last.text and last.kind == "text":
            self.blocks[-1] = Block("entry", last.text, last.page)

    def add_to_entry(
        self, term: str, in_description: bool, text: str, page: int, inline: str | None, code: bool
    ) -> None:
        """A piece of a definition-list entry: its term, a separator, then its description's
        paragraphs (a space apart), code blocks and list items (a line apart)."""
        if self.entry != term or not self.blocks:
            self.add(Block("entry", text, page))
            self.entry, self.described, self.entry_inline = term, in_description, inline
            return
        last = self.blocks[-1].text
        if in_description and not self.described:
            joined = f"{last}{TERM_SEPARATOR}{text}"
            self.described = True
        elif inline is not None and inline == self.entry_inline:
            joined = _joined(last, text)
        elif code:
            joined = f"{last}\n{text}"
        else:
            joined = f"{last} {text}"
        self.entry_inline = inline
        self._append(joined)

    def _append(self, text: str) -> None:
        last = self.blocks[-1]
        self.blocks[-1] = Block(last.kind, text, last.page, last.level)


def defined_terms(text: str) -> list[str]:
    """The terms of the definition-list entries in a chunk's ``text`` (each block's words before
    :data:`TERM_SEPARATOR`), in order: what its entries define, as a heading names what its
    section is about."""
    found = (match.group("term").strip() for match in _DEFINED_TERM.finditer(text))
    return [term for term in found if term and len(term.split()) <= MAX_TERM_WORDS]


def _joined(text: str, piece: str) -> str:
    """Two pieces of one paragraph, a space between them unless punctuation or a bracket says not."""
    separator = "" if piece.startswith(_NO_SPACE_BEFORE) or text.endswith(_NO_SPACE_AFTER) else " "
    return text + separator + piece
