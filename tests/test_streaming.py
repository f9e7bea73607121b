"""Reading the answer field out of a JSON reply while it streams (pipeline.streaming)."""

from __future__ import annotations

import json
import random

import pytest

from pipeline.streaming import StreamedField

VALUES = [
    "Net sales were $81,797 million [2].",
    'He said "yes"\n\tthen left \\ again / twice',
    "émigré 😀 café ünïcode",
    "",
]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("ascii_only", [True, False])
def test_the_value_decodes_exactly_whatever_the_pieces(value, ascii_only):
    reply = json.dumps({"answer": value, "sources": [1, 2]}, ensure_ascii=ascii_only)
    pieces = random.Random(7)
    for _ in range(200):  # split anywhere: inside keys, escapes, surrogate pairs
        field, got, start = StreamedField("answer"), "", 0
        while start < len(reply):
            end = start + pieces.randint(1, 6)
            got += field.feed(reply[start:end])
            start = end
        assert got == field.value == value and field.done


def test_text_after_the_value_and_other_fields_is_ignored():
    field = StreamedField("answer")
    assert field.feed('{"question": "answer?", "answer":"It') == "It"
    assert field.feed(' is."') == " is."
    assert field.feed(', "answer": "again"}') == "" and field.value == "It is."


def test_nothing_comes_out_until_the_field_starts():
    field = StreamedField("answer")
    assert field.feed('{"sources": [1], "ans') == ""
    assert field.feed('wer": "') == "" and field.feed("ok") == "ok" and not field.done
