"""The context selection strategies, one module each, registered in
:data:`pipeline.retrieval.context.SELECTIONS` (a new strategy is a new module here)."""
