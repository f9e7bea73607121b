"""``docfinder eval feedback``: replay an exported feedback set against the current index.

For every question whose answer people judged good, the sources of that answer are gold:
does retrieval still rank one of them in the top k, and how high? Questions judged bad are
counted and listed, to be looked at after a change. This turns the reactions collected in
Slack and Teams into a regression test for retrieval.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from evaluation.feedback_report import is_good, load_items
from pipeline.citations import citation_link
from server.service import DocfinderService


def _document(link: str) -> str:
    """A source link without its page fragment: the document it points at."""
    return link.split("#", 1)[0]


async def evaluate_feedback(service: DocfinderService, items_path: Path, k: int) -> dict[str, Any]:
    """Hit rate and MRR of the gold sources of good answers in the top ``k``; bad ones listed."""
    items = load_items(items_path)
    prefixes = service.settings.index.source_url_prefixes
    good = [i for i in items if is_good(i["rating"], i["label"]) and i["sources"]]
    ranks: list[int | None] = []
    missed = []
    for item in good:
        gold = {_document(s) for s in item["sources"]}
        result = await service.search(item["question"], k=k, collections=item.get("collections") or None)
        found = [_document(citation_link(h.chunk.source, h.chunk.pages, prefixes)) for h in result.hits]
        rank = next((n for n, document in enumerate(found, start=1) if document in gold), None)
        ranks.append(rank)
        if rank is None:
            missed.append(item["question"])
    bad = [i for i in items if not is_good(i["rating"], i["label"]) and (i["rating"] or i["label"])]
    return {
        "items": len(items),
        "good_with_sources": len(good),
        "k": k,
        f"gold_source_hit@{k}": round(sum(r is not None for r in ranks) / len(good), 4) if good else None,
        "mrr": round(statistics.fmean(1 / r if r else 0.0 for r in ranks), 4) if good else None,
        "missed": missed,
        "judged_bad": len(bad),
        "to_review": sorted({i["question"] for i in bad}),
    }
