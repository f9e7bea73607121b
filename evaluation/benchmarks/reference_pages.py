"""`make bench ONLY=reference-pages`: a question that names an option finds the entry defining it.

Staff ask about a setting or an option by its name ("what does archive_command do?"). A manual
defines each in one definition-list entry (``archive_command (string) — …``, ``--data-only —
…``) and mentions it on many other pages: a chapter about the feature, the release notes, a
page of examples, even another manual. The questions here come from the corpus itself, not from
any question set: every identifier that exactly one page defines (its entry's term holds a
snake_case or dotted name, or a long option), asked "what does <name> do?". Measured: the share
whose first hit, and whose first three hits, are on the defining page, per collection; and how
often a release note comes first.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from evaluation.answers import indexed_dataset
from evaluation.benchmarks import DATA
from index_build.docling_blocks import defined_terms
from server.service import open_service
from server.settings import Settings

# A name a user copies from a manual: words joined by underscores or dots, or a long option.
_NAME = re.compile(r"^(?:--[a-z][a-z0-9-]+|[A-Za-z][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+)$")
RELEASE_NOTE = re.compile(r"release", re.IGNORECASE)


def defined_names(chunks: Any) -> dict[str, str]:
    """Each name that exactly one page's entries define, and that page (a chunk's source)."""
    pages: dict[str, set[str]] = defaultdict(set)
    for chunk in chunks:
        for term in defined_terms(chunk.text):
            name = next((token for token in term.split() if _NAME.match(token)), None)
            if name is not None:
                pages[name].add(chunk.source)
    return {name: next(iter(found)) for name, found in pages.items() if len(found) == 1}


def bench_reference_pages(settings: Settings, docs: Path = DATA / "techdocs" / "docs") -> dict[str, Any]:
    """The measures of the module docstring over ``docs`` (one collection per folder)."""
    indexed = indexed_dataset(settings, docs, Path(".docfinder/eval"), "bench")
    return asyncio.run(_measure(indexed))


async def _measure(settings: Settings) -> dict[str, Any]:
    per_collection: dict[str, dict[str, Any]] = {}
    async with open_service(settings) as service:
        snapshot = service.parts.index.current()
        for name, collection in snapshot.collections.items():
            defined = defined_names(collection.chunks)
            first = top3 = release_first = 0
            missed: list[list[str]] = []
            for term, page in sorted(defined.items()):
                found = await service.search(f"what does {term} do?", k=3)
                sources = [hit.chunk.source for hit in found.hits]
                first += bool(sources) and sources[0] == page
                top3 += page in sources
                release_first += bool(sources) and bool(RELEASE_NOTE.search(Path(sources[0]).name))
                if sources and sources[0] != page and len(missed) < 10:
                    missed.append([term, Path(page).name, Path(sources[0]).name])
            asked = len(defined)
            per_collection[name] = {
                "names": asked,
                "defining_page_first": round(first / asked, 3) if asked else None,
                "defining_page_in_top3": round(top3 / asked, 3) if asked else None,
                "release_note_first": release_first,
                "first_misses": missed,
            }
    return {"per_collection": per_collection}
