"""Reading one string field out of a JSON reply while it is still being written.

The LLM answers in JSON (``{"answer": "…", "sources": [1]}``, asked for or constrained), so
the answer's text arrives token by token inside a JSON string: escaped, and split anywhere,
even inside an escape. :class:`StreamedField` is fed the raw pieces and returns the field's
decoded new text, so a front door can show the answer as it is written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

DRAFT_INTERVAL_S = 1.0  # the answer being written is shown at most this often (chat APIs' edit limits)
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@dataclass(frozen=True, slots=True)
class AnswerToken:
    """New text of the answer being written; ``draft`` counts the answers written for one question
    (a failed check writes another, which replaces the text shown so far). The last one, with
    ``composed``, is the answer as code composed it from the checked draft and the documents'
    words, whole; the final answer follows at once, so a door may skip it."""

    text: str
    answer_so_far: str
    draft: int
    composed: bool = False


class StreamedField:
    """Incremental decoder of the string value of ``field`` in a streamed JSON object."""

    def __init__(self, field: str) -> None:
        self._opening = re.compile(r'"' + re.escape(field) + r'"\s*:\s*"')
        self._raw = ""  # everything received, until the value starts
        self._pending = ""  # the undecoded tail of the value (an escape split across pieces)
        self._started = False
        self.done = False
        self.value = ""

    def feed(self, piece: str) -> str:
        """Take the next raw piece of the reply; returns the value's newly decoded text (may be empty)."""
        if self.done or not piece:
            return ""
        if not self._started:
            self._raw += piece
            opening = self._opening.search(self._raw)
            if opening is None:
                return ""
            self._started = True
            piece, self._raw = self._raw[opening.end() :], ""
        text = self._decode(self._pending + piece)
        self.value += text
        return text

    def _decode(self, raw: str) -> str:
        out: list[str] = []
        i = 0
        while i < len(raw):
            char = raw[i]
            if char == '"':
                self.done = True
                self._pending = ""
                return "".join(out)
            if char != "\\":
                out.append(char)
                i += 1
                continue
            if i + 1 >= len(raw):
                break  # the escape continues in the next piece
            kind = raw[i + 1]
            if kind == "u":
                if i + 6 > len(raw):
                    break
                escape_end = i + 6
                # A surrogate pair is two escapes; wait for the second before decoding.
                if 0xD800 <= int(raw[i + 2 : i + 6], 16) <= 0xDBFF:
                    if i + 12 > len(raw):
                        break
                    escape_end = i + 12
                out.append(json.loads('"' + raw[i:escape_end] + '"'))
                i = escape_end
                continue
            out.append(_ESCAPES.get(kind, kind))
            i += 2
        self._pending = raw[i:]
        return "".join(out)
