"""The agent's LLM calls: one at a time, bounded in time, their tokens counted, a reply streamed.

Every call of the answering agent goes through :class:`LLMCalls`, which turns the ways an LLM
fails into docfinder's errors (the message names what went wrong, never the server's address;
the log has the details), counts the calls and the tokens each used (reported by the next
step of the trace), and streams one output field of a call to a token sink as it is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import dspy

from pipeline.answers import TokenSink
from pipeline.errors import LLMUnavailableError, UnreadableReplyError
from pipeline.streaming import AnswerToken, StreamedField
from programs.continuation import Conversation, continuing, current_adapter

log = logging.getLogger(__name__)


class LLMCalls:
    """The LLM calls of one question (see the module docstring)."""

    def __init__(
        self,
        timeout_s: float,
        on_token: TokenSink | None = None,
        slot: asyncio.Semaphore | None = None,
        on_wait: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.on_token = on_token
        # The LLM's admission: beyond the questions the service lets it serve at once, a call waits
        # here (``on_wait`` says so once), and the timeout measures the LLM, not the queue before it.
        self.slot = slot
        self.on_wait = on_wait
        self.made = 0
        self.drafts = 0  # drafts streamed, each numbered so that a door replaces the one before
        self.streamed = False  # whether any draft's text reached the token sink
        self.unreported: list[tuple[str, dict[str, int]]] = []  # made, not yet reported by a step

    async def call(
        self,
        name: str,
        predictor: dspy.Predict,
        stream: str | None = None,
        raw: list[str] | None = None,
        continues: Conversation | None = None,
        **inputs: Any,
    ) -> dspy.Prediction:
        """One LLM call, reported by the next step; with ``stream`` (an output field) and a token
        sink, that field streams and ``raw`` receives the reply's text as written; with
        ``continues``, the call is the next turn of that conversation."""
        prediction, tokens = await self.ask(predictor, inputs, stream, raw, continues)
        self.note(name, tokens)
        return prediction

    def note(self, name: str, tokens: dict[str, int]) -> None:
        """Count a call made (``name``, its tokens) for the next step to report."""
        self.unreported.append((name, tokens))
        self.made += 1

    async def ask(
        self,
        predictor: dspy.Predict,
        inputs: dict[str, Any],
        stream: str | None = None,
        raw: list[str] | None = None,
        continues: Conversation | None = None,
    ) -> tuple[dspy.Prediction, dict[str, int]]:
        """The prediction and the tokens it used, or :class:`LLMUnavailableError` /
        :class:`UnreadableReplyError`."""
        # Every call streams, whoever listens: a call given up (a timeout, a client gone) then
        # closes its connection and the server stops writing, where a plain request runs to its
        # end and keeps a one-slot embedded server busy for the questions after it.
        sink = self.on_token if stream is not None else None
        if self.slot is not None and self.slot.locked() and self.on_wait is not None:
            await self.on_wait()
            self.on_wait = None  # said once a question
        written: list[str] = [] if raw is None else raw
        async with self.slot if self.slot is not None else contextlib.nullcontext():
            prediction, tokens = await self._timed(
                self._streaming(predictor, stream, sink, inputs, written, continues)
            )
        if not tokens["completion"]:
            # A server that streams without reporting usage (llama-cpp-python) sends a token a
            # chunk: the chunks that carried text are the reply's tokens; its prompt stays uncounted.
            tokens["completion"] = sum(1 for piece in written if piece)
        return prediction, tokens

    async def _timed(self, reply: Awaitable[dspy.Prediction]) -> tuple[dspy.Prediction, dict[str, int]]:
        """``reply`` within the timeout, its errors turned into docfinder's, with its tokens."""
        try:
            with dspy.track_usage() as usage:  # this call's tokens only (a contextvar: safe per task)
                prediction = await asyncio.wait_for(reply, timeout=self.timeout_s)
        except TimeoutError as exc:
            raise LLMUnavailableError(f"no answer from the language model in {self.timeout_s:g} s") from exc
        except _unavailable_errors() as exc:
            log.warning("the language model cannot be reached: %s", exc)
            raise LLMUnavailableError("the language model cannot be reached") from exc
        except _parse_errors() as exc:
            log.warning("the language model's reply could not be read: %s", exc)
            raise UnreadableReplyError(
                "the language model's reply could not be read", getattr(exc, "lm_response", None) or ""
            ) from exc
        except _too_long_errors() as exc:
            log.warning("the prompt is longer than the language model's window: %s", exc)
            raise LLMUnavailableError("the prompt is longer than the language model's window") from exc
        except _refusals() as exc:  # after the window: a prompt too long is one kind of refusal
            log.warning("the language model server refused the call: %s", exc)
            raise LLMUnavailableError(_refusal(exc)) from exc
        by_model = usage.get_total_tokens().values()
        tokens = {
            "prompt": sum(u.get("prompt_tokens") or 0 for u in by_model),
            "completion": sum(u.get("completion_tokens") or 0 for u in by_model),
        }
        return prediction, tokens

    async def send_final(self, text: str) -> None:
        """The composed answer as the last draft: it replaces the model's text a door showed while
        it was written (nothing is sent when no draft was streamed)."""
        if self.on_token is not None and self.streamed:
            self.drafts += 1
            await self.on_token(AnswerToken(text, text, self.drafts, composed=True))

    async def _streaming(
        self,
        predictor: dspy.Predict,
        field: str | None,
        sink: TokenSink | None,
        inputs: dict[str, Any],
        raw: list[str],
        continues: Conversation | None,
    ) -> dspy.Prediction:
        """``predictor`` with the LLM's reply streamed: every piece appended to ``raw`` and, with a
        ``sink``, ``field``'s text sent to it as it comes (a new draft, numbered). With
        ``continues``, the call is the next turn of that conversation.

        DSPy sends the raw chunks of a streamed completion to ``send_stream``; the reply is
        still parsed whole at the end, so the prediction is the same as without streaming.
        """
        import anyio

        draft = 0
        if sink is not None:
            self.drafts += 1
            draft = self.drafts
        decoded = StreamedField(field or "")
        send, receive = anyio.create_memory_object_stream[Any](64)

        async def relay() -> None:
            async with receive:
                async for chunk in receive:
                    piece = _chunk_text(chunk)
                    raw.append(piece)
                    if sink is not None and (text := decoded.feed(piece)):
                        self.streamed = True
                        await sink(AnswerToken(text, decoded.value, draft))

        relaying = asyncio.create_task(relay())
        try:
            async with send:  # closed when the call ends, which ends the relay
                with dspy.context(send_stream=send):
                    if continues is not None:
                        return await _continuing(predictor, continues, inputs)
                    return await predictor.acall(**inputs)
        finally:
            await relaying


async def _continuing(
    predictor: dspy.Predict, earlier: Conversation, inputs: dict[str, Any]
) -> dspy.Prediction:
    """``predictor``'s call as the next turn of ``earlier`` (through the adapter in use)."""
    with dspy.context(adapter=continuing(current_adapter(), earlier)):
        return await predictor.acall(**inputs)


def _chunk_text(chunk: Any) -> str:
    """The text of one streamed completion chunk (anything else DSPy sends carries none)."""
    choices = getattr(chunk, "choices", None)
    if not choices:
        return ""
    return getattr(choices[0].delta, "content", None) or ""


def _unavailable_errors() -> tuple[type[BaseException], ...]:
    """LM errors meaning the server is down, overloaded or too slow (not a bad request)."""
    from dspy.utils.exceptions import LMRateLimitError, LMServerError, LMTimeoutError, LMTransportError

    return (OSError, LMTransportError, LMTimeoutError, LMServerError, LMRateLimitError)


def _refusals() -> tuple[type[BaseException], ...]:
    """Any other error of the LM's: the server refused the call (401, 400, 404) or answered with
    something that is no reply (an HTML page, broken JSON)."""
    from dspy.utils.exceptions import LMError

    return (LMError,)


def _refusal(exc: BaseException) -> str:
    """What a client is told of a refused call: what went wrong, never the server's address."""
    from dspy.utils.exceptions import LMAuthError, LMInvalidRequestError

    if isinstance(exc, LMAuthError):
        return "the language model server refused docfinder's credentials (see llm.api_key)"
    if isinstance(exc, LMInvalidRequestError):
        return "the language model server refused the request (see llm.model and llm.api_base)"
    return "the language model server's reply could not be read"


def _too_long_errors() -> tuple[type[BaseException], ...]:
    """A prompt the model cannot read whole (its context window is too small for it)."""
    from dspy.utils.exceptions import ContextWindowExceededError

    return (ContextWindowExceededError,)


def _parse_errors() -> tuple[type[BaseException], ...]:
    """A reply that does not fit the signature's output fields, even after DSPy's own fallbacks."""
    from dspy.utils.exceptions import AdapterParseError

    return (AdapterParseError,)
