"""``evidence``: the sentences and table rows (with their table headers) that in-document
deepening found, covering every document the question needs first (:mod:`pipeline.retrieval.evidence`)."""

from __future__ import annotations

from pipeline.retrieval.context import SELECTIONS, ContextPiece, SelectionInput
from pipeline.retrieval.evidence import select_evidence


@SELECTIONS.register("evidence")
def evidence(selection: SelectionInput) -> list[ContextPiece]:
    search = selection.evidence
    if search is None:
        raise ValueError("the evidence selection needs the in-document search's candidates")
    selection.trace.append(search.trace)
    chosen = select_evidence(search, selection.config.budget_tokens, selection.tokenizer)
    return [ContextPiece(c.chunk, c.unit.text, c.score, c.document_rank, c.unit) for c in chosen]
