"""The model runtime: everything that loads or talks to a model.

``llm`` connects DSPy to the configured OpenAI-compatible server (vLLM in production) or to
``embedded_llm``, the packaged llama.cpp server started on this machine; ``reranker`` is the
optional cross-encoder; ``enrichment`` asks the LLM for a line of context per chunk at
ingest; ``factories`` builds each of them, and the pipeline's configurations, from the
settings. Heavy libraries are imported here lazily, never at package import.
"""
