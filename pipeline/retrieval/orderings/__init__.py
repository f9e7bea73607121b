"""The orderings of the selected context, one module each, registered in
:data:`pipeline.retrieval.context.ORDERINGS` (a new ordering is a new module here)."""
