"""The chunkers, one module each, registered in :data:`index_build.chunking.CHUNKERS` (a new
chunker is a new module here)."""
