"""Whether a reply to a question asking "how many" or "how much" states a quantity at all.

Asked "max_connections is at the default 100. how many of those can our app use?", the 1.5B
model answered "up to 100 concurrent connections can be active", verified, over a quote saying
"max_connections minus superuser_reserved_connections". Every sentence passed every check of what
it states, because it states nothing of what was asked: its one number is the user's own.

So a reply to a question that asks for a quantity (:func:`asks_for_a_quantity`) answers it only
if it states one the question does not: a number (one digit will do: "3 connections"; a year or a
citation marker will not) or a word for one ("none", "twice", "half", "three"). A reply that
states none is no answer, however well its sentences rest on the evidence: the checks drop it,
and the user reads the evidence that comes closest instead. Loose on purpose: any number the
question lacks will do, whatever it counts; whether it is the right one is the figure and role
checks' (:mod:`pipeline.figures`, :mod:`pipeline.answering.roles`). One narrowing: asked what
something cost, what was spent or paid, a word for a number counts things, not money ("What was
the total cost of the GEAR pilot?" answered with which agencies run it, "the other three pilot
agencies"), so there a number in digits, a currency or a scale ("$4.2 million", "12,500", "three
million dollars", "free") is needed.
"""

from __future__ import annotations

import re

from pipeline.citations import blank_markers
from pipeline.figures import all_numbers

# "how many", "how much", "what was the total cost / number / amount": a count or an amount.
_ASKS_FOR_A_QUANTITY = re.compile(
    r"\bhow\s+(?:many|much)\b"
    r"|\bwhat\s+(?:is|was|are|were)\s+(?:the\s+)?(?:total\s+|overall\s+|combined\s+)?"
    r"(?:cost|number|amount|price|percentage|count|sum)\b",
    re.IGNORECASE,
)
# An amount of money asked for: a cost, a price, what was spent or paid.
_ASKS_FOR_MONEY = re.compile(
    r"\b(?:costs?|price[sd]?|spen[dt]|spending|paid|pay|budget|fees?|salar(?:y|ies))\b", re.IGNORECASE
)
# An amount of money in words: a currency, a scale, or none at all.
_MONEY_WORDS = re.compile(
    r"\b(?:dollars?|euros?|pounds?|cents?|usd|eur|gbp|thousand|million|billion|trillion|free|"
    r"no\s+(?:cost|charge|fee))\b|[$€£¥]",
    re.IGNORECASE,
)
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_QUANTITY_WORDS = re.compile(
    r"\b(?:none|no|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"fifteen|twenty|thirty|forty|fifty|hundred|thousand|million|billion|dozen|half|"
    r"quarter|third|twice|once|double|triple|single)\b",
    re.IGNORECASE,
)


def asks_for_a_quantity(question: str) -> bool:
    """Whether ``question`` asks for a count or an amount ("how many", "how much", "what was the
    total cost")."""
    return bool(_ASKS_FOR_A_QUANTITY.search(question))


def states_a_quantity(reply: str, question: str) -> bool:
    """Whether ``reply`` states a number or a word for one that ``question`` does not (for a cost, a
    number in digits or an amount of money in words)."""
    text = blank_markers(reply)
    numbers = {n for n in all_numbers(text) - all_numbers(question) if not _YEAR.match(n)}
    if numbers:
        return True
    if _ASKS_FOR_MONEY.search(question):  # "three pilot agencies" counts agencies, not dollars
        return bool(_MONEY_WORDS.search(text))
    asked = {word.lower() for word in _QUANTITY_WORDS.findall(question)}
    return any(word.lower() not in asked for word in _QUANTITY_WORDS.findall(text))
