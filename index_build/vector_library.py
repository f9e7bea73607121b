"""Loading usearch, the vector index library, safely next to ONNX Runtime."""

from __future__ import annotations

from types import ModuleType


def usearch_index() -> ModuleType:
    """``usearch.index``, loaded after ``onnxruntime``.

    With usearch 2.26.6 and onnxruntime 1.31.1, loading usearch's extension first makes the
    later load of onnxruntime's extension crash the process (SIGSEGV); the other order is
    safe. Every use of usearch goes through here, so the embedder can load at any time.
    """
    import onnxruntime  # noqa: F401  (load order matters, see above)
    from usearch import index

    return index
