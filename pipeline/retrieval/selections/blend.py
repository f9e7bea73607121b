"""``blend``: the best passages whole, then the best evidence units of the documents the question
needs, in the room left.

Whole passages keep what a fact needs around it: a procedure's next step, the sentence after
the one that matched, a parameter's description under its name. Evidence units reach what the
best passages miss: the table row deep in a long filing, the sentence of a long page that no
top passage holds. Measured on the three dev sets at the agent's budget, each alone loses on
some set (whole passages on tables by period, units on manuals and reports), so the budget is
shared: ``chunk_share`` of it to the passages by retrieval score, the rest to the units
(:func:`pipeline.retrieval.evidence.select_evidence`) of chunks not already whole in the context.

Units earn their room when the question is about a document: it names it (a company's filing,
a report), or retrieval's best passages all come from it. A question that names nothing, over
a corpus of many short pages (a manual), is answered by the pages retrieval ranks best; there
units of the top pages crowd out the passages ranked next, which hold the answer as often. With
``units_for = "focused"`` such a question reads the best passages whole in the whole budget: the
context then holds at least what top-k passages hold on every dev set, but the replies did not
state more (docs/benchmarks.md), so by default every question gets units.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.retrieval.context import SELECTIONS, ContextPiece, SelectionInput, choose_passages
from pipeline.retrieval.evidence import select_evidence
from pipeline.retrieval.selections.topk import select_topk
from pipeline.steps import Step


@SELECTIONS.register("blend")
def blend(selection: SelectionInput) -> list[ContextPiece]:
    search = selection.evidence
    if search is None:
        raise ValueError("the blend selection needs the in-document search's candidates")
    config = selection.config
    rank = {doc: i for i, doc in enumerate(search.documents)}

    def grouped(passages: list[ContextPiece]) -> list[ContextPiece]:
        """Whole passages in their document's group, as the evidence's documents are ordered."""
        return [replace(p, group=rank.get(p.chunk.doc_id, len(rank))) for p in passages]

    if config.units_for == "focused" and not search.named:
        best = choose_passages(selection, select_topk)
        if len({piece.chunk.doc_id for piece in best}) > 1:
            note = "no document named or dominant: the best passages whole"
            selection.trace.append({"step": Step.SELECT_CONTEXT, "note": note})
            return grouped(best)
    passage_budget = int(config.budget_tokens * config.chunk_share)
    whole = choose_passages(
        replace(selection, config=config.model_copy(update={"budget_tokens": passage_budget})), select_topk
    )
    used = sum(selection.tokenizer.count(piece.text) for piece in whole)
    taken = {piece.chunk.chunk_id for piece in whole}
    rest = replace(search, units=[u for u in search.units if u.chunk.chunk_id not in taken])
    selection.trace.append(search.trace)
    units = select_evidence(rest, config.budget_tokens - used, selection.tokenizer)
    return [
        *grouped(whole),
        *(ContextPiece(u.chunk, u.unit.text, u.score, u.document_rank, u.unit) for u in units),
    ]
