"""A caller's own conversations, listed and read back (the web page's history): a caller sees
only the conversations it started, and another's id is the same "not found" as no id at all."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pipeline.answers import Caller
from pipeline.errors import NotFoundError
from server.core.access import require_scope
from server.stores.opening import Stores


@dataclass(frozen=True, slots=True)
class ConversationEntry:
    conversation_id: str
    title: str  # its first question
    updated_at: str
    turns: int


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # "user" or "assistant"
    text: str
    answer_id: str | None
    created_at: str


class ConversationDesk:
    """Lists and reads conversations for the caller that owns them."""

    def __init__(self, stores: Stores) -> None:
        self.stores = stores

    async def conversations(self, caller: Caller, limit: int = 50) -> list[ConversationEntry]:
        """The caller's conversations, the latest first."""
        require_scope(caller, "ask")
        rows = await asyncio.to_thread(self.stores.conversations.conversations_of, caller.owner, limit)
        return [ConversationEntry(*row) for row in rows]

    async def conversation(self, caller: Caller, conversation_id: str) -> list[Turn]:
        """Every turn of one of the caller's conversations, oldest first."""
        require_scope(caller, "ask")
        owner = await asyncio.to_thread(self.stores.conversations.owner, conversation_id)
        if owner is None or owner != caller.owner:
            raise NotFoundError(f"no conversation with id {conversation_id!r}")
        rows = await asyncio.to_thread(self.stores.conversations.transcript, conversation_id)
        return [Turn(*row) for row in rows]
