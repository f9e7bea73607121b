"""The Slack bot: the real Bolt ``AsyncApp`` over HTTP with signed events, against a local fake
Slack Web API, the real service and a deterministic OpenAI-compatible LLM."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiohttp.test_utils import TestClient
from slack_sdk.signature import SignatureVerifier

from bots.common import NOT_ENABLED, WRITING
from bots.slack import to_mrkdwn
from evaluation.doubles.fake_chat import FakeSlackAPI
from evaluation.doubles.fake_llm import FakeLLMServer
from pipeline.wording import EVIDENCE_HEADING
from server.doors.chat_bots import mount_slack
from server.service import DocfinderService
from tests.bot_server import BotServer

SECRET = "slack-signing-secret"
QUESTION_TS = "1699999999.000100"


@pytest.fixture(scope="module")
def llm():
    with FakeLLMServer(delay_s=0.2) as server:  # slow enough to see the ack come before the answer
        yield server


@pytest.fixture
async def slack(tmp_path, embedder, llm):
    async with FakeSlackAPI() as api, BotServer(tmp_path, embedder, llm.url, mount_slack) as bots:

        async def start(**overrides):
            return await bots.start(
                slack__bot_token="xoxb-test",
                slack__signing_secret=SECRET,
                slack__api_url=api.url,
                **overrides,
            )

        yield start, api


def signed(payload: dict, secret: str = SECRET, age_s: int = 0) -> tuple[str, dict[str, str]]:
    body = json.dumps(payload)
    timestamp = str(int(time.time()) - age_s)
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    return body, {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature,
    }


def event_callback(event: dict) -> dict:
    return {
        "token": "legacy",
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": f"Ev{time.monotonic_ns()}",
        "event_time": int(time.time()),
        "authorizations": [{"team_id": "T1", "user_id": "UBOT", "is_bot": True}],
        "event": event,
    }


def mention(text: str, channel: str = "C1", ts: str = QUESTION_TS, thread_ts: str | None = None) -> dict:
    event = {"type": "app_mention", "user": "U1", "text": f"<@UBOT> {text}", "ts": ts, "channel": channel}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event_callback(event)


def reaction(kind: str, name: str, channel: str, ts: str, user: str = "U2") -> dict:
    return event_callback(
        {
            "type": kind,
            "user": user,
            "reaction": name,
            "item": {"type": "message", "channel": channel, "ts": ts},
            "item_user": "UBOT",
            "event_ts": f"{time.time():.6f}",
        }
    )


async def post(client: TestClient, payload: dict, **sign) -> int:
    body, headers = signed(payload, **sign)
    response = await client.post("/slack/events", data=body, headers=headers)
    return response.status


def final_answers(api: FakeSlackAPI) -> list[dict]:
    return [u for u in api.made("chat.update") if u.get("blocks")]


async def test_a_mention_gets_a_placeholder_progress_then_the_answer_in_its_thread(slack):
    start, api = slack
    client, service = await start()
    assert await post(client, mention("When are proposals due?")) == 200
    assert not final_answers(api), "the event is acknowledged before the answer is ready"

    await api.wait_for(lambda a: final_answers(a))
    [placeholder] = api.made("chat.postMessage")
    assert placeholder["channel"] == "C1" and placeholder["thread_ts"] == QUESTION_TS
    updates = api.made("chat.update")
    assert all(u["ts"] for u in updates)
    progress = [u["text"] for u in updates[:-1]]
    assert any("Searching the documents" in t for t in progress)
    shown = next(t for t in progress if t.startswith(EVIDENCE_HEADING))
    assert "15 April" in shown and shown.endswith(WRITING), "the documents' words while the answer is written"
    blocks = updates[-1]["blocks"]
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    assert blocks[0]["type"] == "section" and "[1]" in blocks[0]["text"]["text"]
    evidence = blocks[1]["text"]["text"]
    assert evidence.startswith("> [") and "“" not in evidence, "the evidence under the answer, verbatim"
    assert (
        "Proposals are submitted through the Observing Tool before the deadline on 15 April." in evidence
    ), "the document's own words"
    sources = blocks[2]["elements"][0]["text"]
    assert sources.startswith("[1] ") and "Proposal preparation" in sources
    assert "file://" not in sources and "/tmp" not in json.dumps(blocks), "no server paths in chat"

    # A follow-up in the same thread continues the conversation (the condense step sees it).
    assert await post(client, mention("And the limit?", ts="1699999999.000300", thread_ts=QUESTION_TS)) == 200
    await api.wait_for(lambda a: len(final_answers(a)) == 2)
    history = service.conversations.history(f"slack:T1:C1:{QUESTION_TS}")
    assert [role for role, _ in history] == ["user", "assistant", "user", "assistant"]
    assert api.made("chat.postMessage")[1]["thread_ts"] == QUESTION_TS


async def test_the_answer_is_edited_in_progressively_while_it_is_written(slack, llm):
    start, api = slack
    client, _ = await start()
    llm.token_delay_s = 0.15  # a few seconds of writing: room for several edits a second apart
    try:
        assert await post(client, mention("When are proposals due?")) == 200
        await api.wait_for(lambda a: final_answers(a))
    finally:
        llm.token_delay_s = 0.0
    edits = [
        (t, params) for t, (name, params) in zip(api.times, api.calls, strict=True) if name == "chat.update"
    ]
    drafts = [  # below the evidence shown first
        (t, p["text"].removesuffix(f" {WRITING}").split("\n\n")[-1])
        for t, p in edits
        if p["text"].endswith(f" {WRITING}") and p["text"].startswith(EVIDENCE_HEADING)
    ]
    final = edits[-1][1]["text"]
    assert len(drafts) >= 2, "the answer appears while it is written"
    assert all(final.startswith(text) for _, text in drafts), (
        "each draft is a beginning of the answer",
        drafts,
        final,
    )
    assert len(drafts[0][1]) < len(drafts[-1][1]) < len(final)
    times = [t for t, _ in edits]
    for when, _ in drafts:  # each draft waits a second after the edit before it
        before = times[times.index(when) - 1]
        assert when - before >= 0.9, "at most one edit a second while the answer is written"


async def test_reactions_on_an_answer_create_and_retract_feedback(slack):
    start, api = slack
    client, service = await start()
    await post(client, mention("When are proposals due?"))
    await api.wait_for(lambda a: final_answers(a))
    answer_ts = final_answers(api)[0]["ts"]  # the placeholder, edited into the answer

    for payload in (
        reaction("reaction_added", "+1", "C1", answer_ts),
        reaction("reaction_added", "x::skin-tone-3", "C1", answer_ts, user="U3"),
        reaction("reaction_added", "tada", "C1", answer_ts),  # not feedback
        reaction("reaction_added", "+1", "C1", "1600000000.000001"),  # not an answer
    ):
        assert await post(client, payload) == 200
    await _wait_rows(service, 2)
    await asyncio.sleep(0.3)  # the two ignored reactions must not add rows late
    records = service.feedback.records()
    assert sorted((r.rating, r.label) for r in records) == [(1, "Incorrect answer"), (4, None)]
    record = records[0]
    assert (
        record.platform == "slack" and record.channel == "C1" and record.question == "When are proposals due?"
    )
    assert record.sources and record.user and record.user != "U2"  # pseudonymised

    assert await post(client, reaction("reaction_removed", "+1", "C1", answer_ts)) == 200
    await _wait_rows(service, 1)
    assert service.feedback.records()[0].label == "Incorrect answer"


async def test_unsigned_forged_and_stale_requests_get_401(slack):
    start, api = slack
    client, _ = await start()
    body = json.dumps(mention("When are proposals due?"))
    unsigned = await client.post("/slack/events", data=body, headers={"Content-Type": "application/json"})
    assert unsigned.status == 401
    assert await post(client, mention("When are proposals due?"), secret="not-the-secret") == 401
    assert await post(client, mention("When are proposals due?"), age_s=10 * 60) == 401
    await asyncio.sleep(0.3)
    assert not api.made("chat.postMessage")


async def test_outside_its_channels_the_bot_says_politely_that_it_is_not_enabled(slack):
    start, api = slack
    client, _ = await start(slack__channels=["C1"], slack__direct_messages=False)
    await post(client, mention("When are proposals due?", channel="C2"))
    direct = {
        "type": "message",
        "channel_type": "im",
        "user": "U1",
        "text": "Hi?",
        "ts": "1.2",
        "channel": "D1",
    }
    await post(client, event_callback(direct))
    await api.wait_for(lambda a: len(a.made("chat.postMessage")) == 2)
    assert [m["text"] for m in api.made("chat.postMessage")] == [NOT_ENABLED, NOT_ENABLED]
    assert {m["channel"] for m in api.made("chat.postMessage")} == {"C2", "D1"}


async def test_a_thousand_concurrent_reactions_make_exactly_a_thousand_rows(slack):
    start, api = slack
    client, service = await start()
    await post(client, mention("When are proposals due?"))
    await api.wait_for(lambda a: final_answers(a))
    answer_ts = final_answers(api)[0]["ts"]
    statuses = await asyncio.gather(
        *(
            post(client, reaction("reaction_added", "+1", "C1", answer_ts, user=f"U{n:04d}"))
            for n in range(1000)
        )
    )
    assert statuses == [200] * 1000
    await _wait_rows(service, 1000, timeout=120)
    await asyncio.sleep(0.5)
    records = service.feedback.records()
    assert len(records) == 1000 and len({r.user for r in records}) == 1000


async def _wait_rows(service: DocfinderService, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while len(service.feedback.records()) != count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(service.feedback.records())} feedback rows, expected {count}")
        await asyncio.sleep(0.05)


async def test_the_rating_hint_offers_exactly_the_configured_reactions(slack):
    start, api = slack
    client, _ = await start(
        slack__reactions={"tada": {"rating": 5}, "thinking_face": {"label": "Confusing"}, "x": {"rating": 1}}
    )
    assert await post(client, mention("When are proposals due?")) == 200
    await api.wait_for(lambda a: final_answers(a))
    blocks = final_answers(api)[-1]["blocks"]
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    hint = blocks[-1]["elements"][0]["text"]
    assert hint == "Was this useful? React with :tada: 5/5 · :x: 1/5 · :thinking_face: confusing."


def test_a_code_block_in_an_answer_reaches_slack_as_written():
    """Answers about manuals carry commands and configuration files: Slack's bold and link
    rewriting must not touch them, and a language tag would show as the block's first line."""
    answer = (
        "Run this **first** [1]:\n```sh\necho **x** <y> [a](https://z)\n```\nSee [the page](https://d/x)."
    )
    assert to_mrkdwn(answer) == (
        "Run this *first* [1]:\n```\necho **x** &lt;y&gt; [a](https://z)\n```\nSee <https://d/x|the page>."
    )
