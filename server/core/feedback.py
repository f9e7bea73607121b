"""Feedback on answers: ratings and labels from the API and MCP (checked against the caller's
conversations) and emoji reactions from the chat bots (found through the message that shows
the answer), kept with pseudonymised users."""

from __future__ import annotations

import asyncio

from pipeline.answers import Caller, Feedback, FeedbackRecord, Platform
from pipeline.errors import NotFoundError
from server.core.access import require_scope
from server.core.feedback_summary import FeedbackSummary, summarise
from server.runtime.metrics import Metrics
from server.stores.feedback import validate_feedback
from server.stores.opening import Stores


class FeedbackDesk:
    """Where the doors hand in feedback, and the bots note which message shows which answer."""

    def __init__(self, stores: Stores, metrics: Metrics) -> None:
        self.stores = stores
        self.metrics = metrics

    async def record_feedback(self, feedback: Feedback, caller: Caller | None = None) -> FeedbackRecord:
        """Store feedback on an answer given earlier (committed before this returns).

        With ``caller`` (the API, MCP), the answer must be in one of the caller's conversations;
        chat bots pass none, having found the answer through the message that shows it.
        """
        if caller is not None:
            require_scope(caller, "feedback")
        validate_feedback(feedback)
        answer = await asyncio.to_thread(self.stores.conversations.answer, feedback.answer_id)
        if caller is not None and not caller.names_conversations:
            owner = await asyncio.to_thread(self.stores.conversations.owner, answer.conversation_id)
            if owner != caller.owner:
                raise NotFoundError(f"no answer with id {feedback.answer_id!r}")
        record = await asyncio.to_thread(self.stores.feedback.add, feedback, answer)
        self.metrics.feedback.labels(feedback.label or "none", feedback.platform).inc()
        return record

    async def remember_message(self, platform: Platform, message_ref: str, answer_id: str) -> None:
        """Note which answer a chat message shows (for reactions to it)."""
        await asyncio.to_thread(self.stores.conversations.remember_message, platform, message_ref, answer_id)

    async def answer_for_message(self, platform: Platform, message_ref: str) -> str:
        """The answer id shown by a chat message; :class:`NotFoundError` for any other message."""
        return await asyncio.to_thread(self.stores.conversations.answer_for_message, platform, message_ref)

    async def retract_feedback(self, answer_id: str, platform: Platform, user: str, reaction: str) -> int:
        """Remove the feedback that ``reaction`` by ``user`` gave on ``answer_id``; returns how many rows."""
        return await asyncio.to_thread(self.stores.feedback.retract, answer_id, platform, user, reaction)

    async def summary(self, caller: Caller) -> FeedbackSummary:
        """Every judgement summed up (admin keys only): what the admin page charts."""
        require_scope(caller, "admin")
        return summarise(await asyncio.to_thread(self.stores.feedback.records))

    async def records(self, caller: Caller) -> list[FeedbackRecord]:
        """Every judgement, oldest first (admin keys only): the export, an evaluation set."""
        require_scope(caller, "admin")
        return await asyncio.to_thread(self.stores.feedback.records)
