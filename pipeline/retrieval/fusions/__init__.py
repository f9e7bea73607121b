"""The fusions of the BM25 and dense branches, one module each, registered in
:data:`pipeline.retrieval.fusion.FUSIONS` (a new fusion is a new module here)."""
