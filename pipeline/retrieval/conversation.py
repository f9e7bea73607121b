"""A follow-up in a conversation, made searchable by code, without an LLM call.

"and if things go wrong after the real run, can we still go back?" names nothing a search can
find; the question it follows ("... the 13 -> 15 upgrade with pg_upgrade ...") does. Asking the
model to rewrite the follow-up first costs a whole LLM call (11 to 13 s before any evidence on
the embedded model); the search needs only the words, so the follow-up is searched together
with the user's previous question, and the model reads the conversation when it answers.
"""

from __future__ import annotations

from collections.abc import Sequence

USER = "user"


def search_query(message: str, earlier_questions: Sequence[str]) -> str:
    """The text to search for ``message``: itself, after the latest of ``earlier_questions``
    (the user's, oldest first) when there is one."""
    if not earlier_questions:
        return message
    return f"{earlier_questions[-1].strip()} {message.strip()}"


def user_questions(history: Sequence[tuple[str, str]]) -> list[str]:
    """The user's turns of a conversation's ``(role, text)`` history, oldest first."""
    return [text for role, text in history if role == USER]
