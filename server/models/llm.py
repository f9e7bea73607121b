"""The language model behind the agent, chosen by settings.

- ``llm.api_base`` set: any OpenAI-compatible server (vLLM in production), through DSPy's
  ``hosted_vllm/`` route, which sends ``max_tokens`` (llama.cpp ignores the newer
  ``max_completion_tokens``).
- unset: the embedded model (:mod:`server.models.embedded_llm`), a llama.cpp server that the
  service starts on first use, restarts when it crashes, and stops when it closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlsplit

from pipeline.errors import ConfigurationError
from server.models.embedded_llm import LlamaServer, ensure_model_file
from server.runtime.supervised_server import SupervisedServer
from server.settings import Settings


def make_lm(settings: Settings, api_base: str | None = None) -> Any:
    """A ``dspy.LM`` for ``api_base`` (default: the setting): temperature 0, no retries, no cache."""
    import dspy

    base = api_base or settings.llm.api_base
    if base is None:
        raise ConfigurationError(
            "no LLM server: set llm.api_base (DOCFINDER_LLM__API_BASE) or use the embedded model"
        )
    return dspy.LM(
        f"hosted_vllm/{settings.llm.model}",
        api_base=base,
        api_key=settings.llm.api_key.get_secret_value() or "not-needed",
        max_tokens=settings.llm.max_tokens,
        temperature=0.0,
        timeout=settings.llm.timeout_s,
        num_retries=0,
        cache=False,
    )


def judge_lm_settings(settings: Settings, api_base: str, model: str | None = None) -> dict[str, Any]:
    """The ``dspy.context`` settings (LM and adapter) of a judge at another OpenAI-compatible endpoint."""
    if urlsplit(api_base).scheme not in ("http", "https") or not urlsplit(api_base).hostname:
        raise ConfigurationError(f"the judge endpoint must be an http(s) URL, not {api_base!r}")
    judge = settings.changed({"llm.api_base": api_base, "llm.model": model or settings.llm.model})
    return {"lm": make_lm(judge), "adapter": make_adapter(judge)}


@asynccontextmanager
async def open_lm(settings: Settings) -> AsyncIterator[Any]:
    """The LLM for a session: the configured server, or the embedded one started here and stopped on exit."""
    async with open_language_model(settings) as (lm, _server):
        yield lm


@asynccontextmanager
async def open_language_model(settings: Settings) -> AsyncIterator[tuple[Any, SupervisedServer | None]]:
    """The LLM and, for the embedded model, the supervisor of its server process (which restarts it
    when it crashes, and gives it up when it cannot run here); None for a configured server."""
    if settings.llm.api_base is not None:
        yield make_lm(settings), None
        return
    model = await asyncio.to_thread(ensure_model_file, settings.llm.model_cache_dir)
    server = LlamaServer(
        model,
        log_path=settings.llm.model_cache_dir / "llama-server.log",
        n_ctx=settings.llm.context_tokens,
        threads=settings.llm.threads,
        prompt_cache_mb=settings.llm.prompt_cache_mb,
    )
    async with server:
        yield make_lm(settings, api_base=server.api_base), server


@dataclass(frozen=True, slots=True)
class LLMProblem:
    """Why a server LLM did not answer: ``reason`` is safe to show anyone (no address, no model
    name); ``detail`` is for the operator's log."""

    reason: str
    detail: str


# Fixed, not a setting: how long start and `doctor` wait for a configured LLM server to list its
# models. A slower server is reported as not answering; questions still wait llm.timeout_s.
STARTUP_PROBE_TIMEOUT_S = 5.0


async def probe_llm_server(api_base: str, api_key: str, timeout_s: float) -> LLMProblem | None:
    """What is wrong with the OpenAI-compatible server at ``api_base`` (``GET /models``), or None.

    Asked at start, so that an unreachable server is reported then, with its URL, rather than
    as a timeout on the first question; and by ``/healthz`` when no question has looked lately.
    """
    import aiohttp

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
            session.get(f"{api_base.rstrip('/')}/models", headers=headers) as response,
        ):
            if response.status >= 400:
                return LLMProblem(
                    f"it answers HTTP {response.status}", f"HTTP {response.status} from /models"
                )
            return None
    except TimeoutError as exc:
        return LLMProblem(f"no answer within {timeout_s:g} s", f"timed out after {timeout_s:g} s: {exc}")
    except aiohttp.ClientConnectionError as exc:
        return LLMProblem("cannot connect to it", f"{type(exc).__name__}: {exc}")
    except aiohttp.ClientError as exc:
        return LLMProblem("its reply could not be read", f"{type(exc).__name__}: {exc}")


def is_free_text(signature: Any) -> bool:
    """Whether ``signature``'s one output field is a plain string, with no constraint of its own."""
    fields = list(signature.output_fields.values())
    return len(fields) == 1 and fields[0].annotation is str and not fields[0].metadata


def make_adapter(settings: Settings) -> Any:
    """DSPy's JSON adapter with replies constrained to each signature's JSON schema by the server.

    DSPy sends no ``response_format`` for ``hosted_vllm/`` models, so without this the small
    embedded model is only asked, not forced, to reply in JSON. llama.cpp takes the schema as
    ``{"type": "json_object", "schema": ...}`` (it rejects ``json_schema``); vLLM and other
    OpenAI-compatible servers take the standard ``{"type": "json_schema", ...}``.

    The embedded model's reply of one free-text field (the answer, a search query) goes
    unconstrained: llama-cpp-python checks the grammar against the model's whole vocabulary
    at every token, which halved the writing speed on 2 cores (4.1 against 7.6 tokens a second),
    and a schema of one string adds nothing the adapter's parser (``json_repair``) does not
    mend. Decoding is greedy, so the reply is the constrained one up to the first token the
    grammar would have forced (the JSON's layout). Yes/no verdicts, labels and lists stay
    constrained.
    """
    import dspy
    import pydantic

    llama_cpp_style = settings.llm.api_base is None

    class ConstrainedJSONAdapter(dspy.JSONAdapter):
        def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any) -> None:
            if llama_cpp_style and is_free_text(signature):
                return
            # A field's constraints (a list's length) live in its metadata: keep them in the schema.
            fields = {
                name: (
                    Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation,
                    ...,
                )
                for name, field in signature.output_fields.items()
            }
            schema = pydantic.create_model("Reply", **fields).model_json_schema()
            if llama_cpp_style:
                lm_kwargs["response_format"] = {"type": "json_object", "schema": schema}
            else:
                lm_kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": signature.__name__, "schema": schema},
                }

    return ConstrainedJSONAdapter()
