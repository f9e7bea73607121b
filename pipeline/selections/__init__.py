"""The context selection strategies, one module each, registered in
:data:`pipeline.context.SELECTIONS` (a new strategy is a new module here)."""
