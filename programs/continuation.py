"""A DSPy call that continues an earlier call's conversation, so that the LLM reads only what is new.

The grounding check of an answer needs the evidence the answer was written from. Sent as a
prompt of its own, that evidence is read a second time: on the embedded CPU model about 700
tokens, 8 s. Sent as the next turn of the generate call's conversation (the same system and
user messages, the answer as the assistant's turn, then the check as a new user turn), its
prompt begins with exactly the tokens the server has just read and written, and a server that
keeps its prompt cache (llama.cpp's ``cache_prompt``, vLLM's prefix caching) reads only the
new turn, about 100 tokens.

:func:`continuing` wraps the adapter in use so that a :class:`dspy.Predict` of any signature
makes its call that way: its instructions and inputs become the user turn (no system message
of its own, which would come first and share nothing), and its reply is parsed as usual.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dspy


@dataclass(frozen=True, slots=True)
class Conversation:
    """The messages of an earlier call and its reply, as the LLM read and wrote them."""

    messages: tuple[dict[str, Any], ...]

    @classmethod
    def of_call(cls, predictor: dspy.Predict, inputs: dict[str, Any], reply: str) -> Conversation:
        """The conversation of ``predictor`` called with ``inputs`` and answered by ``reply`` (raw text).

        The messages are formatted again by the adapter in use, which gives the same text as
        the call sent (the same signature, demos and inputs).
        """
        sent = current_adapter().format(predictor.signature, predictor.demos, inputs)
        return cls((*sent, {"role": "assistant", "content": reply}))


def current_adapter() -> Any:
    """The adapter DSPy uses for a call now (the configured one, else its default)."""
    return dspy.settings.adapter or dspy.ChatAdapter()


def reply_text(predictor: dspy.Predict, prediction: dspy.Prediction) -> str:
    """The reply as the adapter would have the LLM write it, for a call whose raw text was not kept."""
    outputs = {name: prediction[name] for name in predictor.signature.output_fields}
    return current_adapter().format_assistant_message_content(predictor.signature, outputs)


def continuing(adapter: Any, earlier: Conversation) -> Any:
    """A copy of ``adapter`` whose calls continue ``earlier``: its turns, then the signature's own.

    Parsing and the reply's format constraint are the adapter's own; only the messages change.
    Its fallback to another adapter (ChatAdapter's to JSON) is turned off: that one would
    format the call anew, without the earlier turns, and ask about evidence it cannot see.
    The signature's instructions (learnt ones included) open the new user turn. Its demos
    are not shown: an example's evidence is not in this conversation, and examples placed
    between the evidence and the question would break the shared prefix.
    """
    continued = copy.copy(adapter)
    if hasattr(continued, "use_json_adapter_fallback"):
        continued.use_json_adapter_fallback = False

    def format_continued(
        signature: Any, demos: Sequence[dict[str, Any]], inputs: dict[str, Any]
    ) -> list[dict]:
        request = adapter.format_user_message_content(signature, inputs, main_request=True)
        turn = f"{signature.instructions.strip()}\n\n{request}"
        return [*earlier.messages, {"role": "user", "content": turn}]

    continued.format = format_continued  # an instance attribute: Adapter.__call__ reads self.format
    return continued
