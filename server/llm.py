"""The language model behind the agent, chosen by settings.

- ``llm_api_base`` set: any OpenAI-compatible server (vLLM in production), through DSPy's
  ``hosted_vllm/`` route, which sends ``max_tokens`` (llama.cpp ignores the newer
  ``max_completion_tokens``).
- unset: the embedded model. It needs the packaged GGUF and a llama.cpp server, which
  ``make install`` will provide; until it is installed, asking fails at start with a clear
  message instead of on the first question.
"""

from __future__ import annotations

from typing import Any

from pipeline.errors import ConfigurationError
from server.settings import Settings


def make_lm(settings: Settings) -> Any:
    """A configured ``dspy.LM``; deterministic (temperature 0), no retries, no cache."""
    import dspy

    if settings.llm_api_base is None:
        raise ConfigurationError(
            "no LLM configured: set llm_api_base (DOCFINDER_LLM_API_BASE) to an OpenAI-compatible server, "
            "e.g. http://localhost:8000/v1 for vLLM"
        )
    return dspy.LM(
        f"hosted_vllm/{settings.llm_model}",
        api_base=settings.llm_api_base,
        api_key=settings.llm_api_key.get_secret_value() or "not-needed",
        max_tokens=settings.llm_max_tokens,
        temperature=0.0,
        timeout=settings.llm_timeout_s,
        num_retries=0,
        cache=False,
    )
