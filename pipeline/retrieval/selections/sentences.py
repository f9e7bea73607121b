"""``sentences``: the passages' sentences in retrieval order, near-duplicates dropped, optionally
only the top-n by a sentence scorer kept, until the budget is full."""

from __future__ import annotations

from pipeline.retrieval.context import SELECTIONS, ContextPiece, SelectionInput
from pipeline.retrieval.ordering import dedupe, split_sentences
from pipeline.steps import Step


@SELECTIONS.register("sentences")
def sentences(selection: SelectionInput) -> list[ContextPiece]:
    pool = [
        (hit, sentence, position)
        for hit in selection.hits
        for position, sentence in enumerate(split_sentences(hit.chunk.text))
    ]
    kept = [pool[i] for i in dedupe([s for _, s, _ in pool], selection.config.dedupe_threshold)]
    scores = [hit.score for hit, _, _ in kept]
    scorer = selection.sentence_scorer
    if scorer is not None and selection.config.top_sentences:
        scores = list(scorer([s for _, s, _ in kept]))
        best = sorted(range(len(kept)), key=lambda i: -scores[i])[: selection.config.top_sentences]
        keep = sorted(best)
        kept, scores = [kept[i] for i in keep], [scores[i] for i in keep]
    selection.trace.append({"step": Step.SENTENCES, "pooled": len(pool), "after_dedupe": len(kept)})
    pieces, used = [], 0
    for (hit, sentence, _), score in zip(kept, scores):
        size = selection.tokenizer.count(sentence)
        if used + size <= selection.config.budget_tokens:
            pieces.append(ContextPiece(hit.chunk, sentence, score))
            used += size
    return pieces
