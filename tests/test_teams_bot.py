"""The Teams bot: real Bot Framework Activities posted to ``/api/messages`` (botbuilder's
``CloudAdapter`` on aiohttp), replies received by a local fake connector."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from bots.common import NOT_ENABLED
from evaluation.doubles.fake_chat import FakeConnector
from evaluation.doubles.fake_llm import FakeLLMServer
from pipeline.wording import EVIDENCE_HEADING
from server.doors.chat_bots import mount_teams
from tests.bot_server import BotServer

CHANNEL_THREAD = "19:general@thread.tacv2;messageid=1700000000001"


@pytest.fixture(scope="module")
def llm():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
async def teams(tmp_path, embedder, llm):
    async with FakeConnector() as connector, BotServer(tmp_path, embedder, llm.url, mount_teams) as bots:

        async def start(**overrides):  # the fake connector is the one channel service replies may go to
            return await bots.start(teams__service_urls=[connector.url], **overrides)

        yield start, connector


def activity(connector: FakeConnector, **fields) -> dict:
    base = {
        "type": "message",
        "id": f"msg-{time.monotonic_ns()}",
        "timestamp": "2026-11-22T10:00:00.000Z",
        "serviceUrl": connector.url,
        "channelId": "msteams",
        "from": {"id": "29:ada", "name": "Ada", "aadObjectId": "aad-ada"},
        "conversation": {"id": CHANNEL_THREAD, "conversationType": "channel"},
        "recipient": {"id": "28:docfinder", "name": "docfinder"},
        "channelData": {"team": {"id": "team-1"}, "channel": {"id": "19:general@thread.tacv2"}},
    }
    return {**base, **fields}


def question(connector: FakeConnector, text: str, **fields) -> dict:
    return activity(
        connector,
        text=f"<at>docfinder</at> {text}",
        entities=[
            {
                "type": "mention",
                "mentioned": {"id": "28:docfinder", "name": "docfinder"},
                "text": "<at>docfinder</at>",
            }
        ],
        **fields,
    )


def cards(connector: FakeConnector) -> list[dict]:
    return [a for a in connector.messages() if a.get("attachments")]


async def test_a_mention_gets_typing_then_an_adaptive_card_with_sources(teams):
    start, connector = teams
    client, service = await start()
    response = await client.post("/api/messages", json=question(connector, "When are proposals due?"))
    assert response.status in (200, 201)
    await connector.wait_for(lambda c: cards(c))
    assert connector.activities[0]["type"] == "typing"
    [reply] = cards(connector)
    assert reply["_conversation"] == CHANNEL_THREAD
    card = reply["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
    texts = [block["text"] for block in card["content"]["body"]]
    assert "[1]" in texts[0] and "15 April" in texts[0], "the answer quotes the document's words"
    assert texts[1] == "Evidence" and texts[2].startswith("[") and "“" in texts[2], "more evidence, verbatim"
    assert reply["_replaces"].startswith(EVIDENCE_HEADING), "the answer replaces the evidence shown first"
    assert [u["id"] for u in connector.updates] == [reply["id"]]
    sources = texts.index("Sources")
    source = texts[sources + 1]
    assert source.startswith("[1] ") and "Proposal preparation" in source
    assert "file://" not in json.dumps(card) and "/tmp" not in json.dumps(card), "no server paths in chat"
    assert reply["text"] == texts[0]
    assert texts[-1] == (  # the rating hint, from the default reaction map
        "Was this useful? React with ❤️ perfect answer, accurate · 👍 4/5 · 😮 confusing · 😢 2/5 · "
        "😠 incorrect answer."
    )

    # The reply chain is the conversation: a follow-up there reaches the condense step.
    await client.post("/api/messages", json=question(connector, "And the co-investigators?"))
    await connector.wait_for(lambda c: len(cards(c)) == 2)
    history = service.conversations.history(f"teams:{CHANNEL_THREAD}")
    assert [role for role, _ in history] == ["user", "assistant", "user", "assistant"]


async def test_reactions_on_the_answer_card_create_and_retract_feedback(teams):
    start, connector = teams
    client, service = await start()
    connector.update_reply_delay_s = 1.0  # the card shows a second before the bot hears it was delivered
    await client.post("/api/messages", json=question(connector, "When are proposals due?"))
    await connector.wait_for(lambda c: cards(c))
    answer_id_in_teams = cards(connector)[0]["id"]

    added = activity(
        connector, type="messageReaction", replyToId=answer_id_in_teams, reactionsAdded=[{"type": "angry"}]
    )
    assert (await client.post("/api/messages", json=added)).status in (200, 201)
    unrelated = activity(
        connector, type="messageReaction", replyToId="some-other", reactionsAdded=[{"type": "like"}]
    )
    await client.post("/api/messages", json=unrelated)
    [record] = service.feedback.records()
    assert (record.rating, record.label, record.platform) == (1, "Incorrect answer", "teams")
    assert record.question == "When are proposals due?" and record.user and record.user != "aad-ada"

    removed = activity(
        connector, type="messageReaction", replyToId=answer_id_in_teams, reactionsRemoved=[{"type": "angry"}]
    )
    await client.post("/api/messages", json=removed)
    assert service.feedback.records() == []


async def test_outside_its_teams_the_bot_says_politely_that_it_is_not_enabled(teams):
    start, connector = teams
    client, _ = await start(teams__conversations=["team-2"])
    await client.post("/api/messages", json=question(connector, "When are proposals due?"))
    await connector.wait_for(lambda c: c.messages())
    await asyncio.sleep(0.3)
    assert [m["text"] for m in connector.messages()] == [NOT_ENABLED]


async def test_with_an_app_id_a_post_without_a_valid_token_gets_401(teams):
    start, connector = teams
    client, _ = await start(teams__app_id="00000000-0000-0000-0000-000000000001", teams__app_password="pw")
    body = question(connector, "When are proposals due?")
    assert (await client.post("/api/messages", json=body)).status == 401
    forged = {"Authorization": "Bearer not.a.jwt"}
    assert (await client.post("/api/messages", json=body, headers=forged)).status == 401
    await asyncio.sleep(0.3)
    assert connector.activities == []
