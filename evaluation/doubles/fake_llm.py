"""A deterministic OpenAI-compatible chat server on loopback, for tests and load benchmarks.

It reads which fields the reply must have from the request's JSON schema, or, where none is
sent (the embedded model writes a reply of one free-text field unconstrained), from the JSON
adapter's closing instruction, and fills them from the prompt: the domain ``general``, the
question itself as a rephrasing, an answer that takes the first sentence of the first passage
without its opening word (a quote that an answer copies word for word is not shown) and cites
it as [1], and ``yes`` for both checks. As an answer judge it gives its verdict on each item by
word overlap (:func:`judge_verdict`). Same prompt, same reply, whichever process asks. It runs
in its own thread, so subprocesses (the CLI, an MCP stdio server) can use it too; it can be
told to answer slowly, to refuse with 503s or to put a figure no document states in every
answer, and streams its reply when asked to.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import threading
import time
from typing import Any

from aiohttp import web

# An input field's value runs to the next field marker or to the adapter's closing instruction.
_FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with |\Z)", re.S)


INVENTED = " It cost $47,913 [1]."  # a figure no test document states


def _reworded(line: str) -> str:
    """The first sentence of ``line`` without its opening word, the next one capitalised: the
    answer a fake model writes from it, which its quote says more than (a word the answer lacks)."""
    words = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0].split(" ", 1)
    return words[1][:1].upper() + words[1][1:] if len(words) == 2 and words[1] else line


def reply_fields(schema: dict[str, Any], prompt: str, invent_figure: bool = False) -> dict[str, Any]:
    """The deterministic reply for a signature's output ``schema`` given the user ``prompt``; with
    ``invent_figure``, an answer written from passages adds a figure they do not state."""
    inputs = {name: value.strip() for name, value in _FIELD.findall(prompt)}
    question = inputs.get("question") or inputs.get("message") or "the question"
    passages = inputs.get("passages", "")
    first = re.search(r"\[1\][^\n]*\n([^\n]+)", passages)
    reply: dict[str, Any] = {}
    for name in schema.get("properties", {}):
        if name == "domain":
            reply[name] = "general"
        elif name in {"rephrased", "rewritten", "standalone_question"}:
            reply[name] = question
        elif name == "answer" and first:
            reply[name] = f"{_reworded(first.group(1)[:200])} [1]" + (INVENTED if invent_figure else "")
        elif name == "answer":
            reply[name] = "The documents do not answer it."
        elif name == "sources":
            reply[name] = [1] if first else []
        elif name in {"supported", "useful"}:
            reply[name] = "yes"
        elif name == "verdict":
            reply[name] = judge_verdict(inputs)
        else:
            reply[name] = f"A {name} for the test."
    return reply


_TERM = re.compile(r"\d[\d,.]*\d|\d|[a-z]{4,}")
_STOPWORDS = {
    "were",
    "with",
    "that",
    "this",
    "from",
    "have",
    "been",
    "which",
    "their",
    "they",
    "than",
    "what",
}


def _terms(text: str) -> set[str]:
    """Numbers and words of four letters or more, lower-cased, without common filler words."""
    return {t.rstrip(".,") for t in _TERM.findall(text.lower())} - _STOPWORDS


def judge_verdict(inputs: dict[str, str]) -> str:
    """The deterministic judge: which signature is asked is told by its input fields.

    - a statement (against a context, or the one passage it cites): yes when every term of the
      statement is in it;
    - a passage useful for a reference answer: yes when it shares a number, or two words, with it;
    - a text relevant to a question: yes when it shares a word with the question.
    """
    if "statement" in inputs:
        supported = _terms(inputs["statement"]) <= _terms(inputs.get("context", ""))
        return "yes" if supported else "no"
    if "reference_answer" in inputs:
        reference, passage = _terms(inputs["reference_answer"]), _terms(inputs.get("passage", ""))
        numbers = {t for t in reference if t[0].isdigit()}
        return "yes" if passage & numbers or len(passage & reference) >= 2 else "no"
    return "yes" if _terms(inputs.get("text", "")) & _terms(inputs.get("question", "")) else "no"


class FakeLLMServer:
    """``with FakeLLMServer() as llm:`` then point ``llm.api_base`` at ``llm.url``."""

    def __init__(
        self,
        delay_s: float = 0.0,
        token_delay_s: float = 0.0,
        bad_verdicts: bool = False,
        invent_figure: bool = False,
        port: int = 0,
        crash_with: int | None = None,
        error_status: int | None = None,
        garbage: bool = False,
        one_slot: bool = False,
        stream_usage: bool = True,
    ) -> None:
        self.delay_s = delay_s
        self.stream_usage = stream_usage  # False: a stream ends without its usage, as llama-cpp-python's does
        self.error_status = error_status  # every chat request answered with this HTTP error status
        self.garbage = garbage  # every chat request answered 200 with a body that is not JSON
        # Like llama.cpp's server: one request at a time, the others wait for the slot; a streamed
        # reply whose client has gone stops (and frees the slot) at its next chunk.
        self.slot = asyncio.Lock() if one_slot else None
        self.abandoned = 0  # streamed replies stopped because their client went away
        self.crash_with = crash_with  # a signal that kills this process at its first chat request
        self.invent_figure = invent_figure  # every answer carries a figure the documents do not state
        self.bad_verdicts = bad_verdicts  # a judge whose verdicts are neither yes nor no
        self.prompts: list[str] = []  # every user prompt received, in order
        self.schemas: list[dict[str, Any]] = []  # and the reply schema each one asked for
        self.conversations: list[list[dict[str, Any]]] = []  # and every request's whole message list
        self.replies: list[str] = []  # and the reply's text, as sent (streamed or not)
        self.token_delay_s = token_delay_s
        self.streamed = 0  # replies sent as a stream (``"stream": true``)
        self.in_flight = 0
        self.most_in_flight = 0  # the most requests it was answering at one time
        self.unavailable = False
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving (the port refuses connections from now on); safe to call twice."""
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.slot is None:
                return await self._reply(request)
            async with self.slot:
                return await self._reply(request)
        finally:
            self.in_flight -= 1

    async def _reply(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        if self.crash_with is not None:  # a model server dying in native code, mid-request
            os.kill(os.getpid(), self.crash_with)
        if self.unavailable:
            return web.json_response({"error": {"message": "model is loading"}}, status=503)
        if self.error_status is not None:
            error = {"message": f"refused with {self.error_status}", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=self.error_status)
        if self.garbage:
            return web.Response(text="<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        body = await request.json()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        prompt = body["messages"][-1]["content"]
        schema = _schema(body.get("response_format") or {}) or _asked_fields(prompt)
        self.prompts.append(prompt)
        self.schemas.append(schema)
        fields = reply_fields(schema, prompt, self.invent_figure)
        if self.bad_verdicts and "verdict" in fields:
            fields["verdict"] = "maybe"
        content = json.dumps(fields)
        self.conversations.append(body["messages"])
        self.replies.append(content)
        if body.get("stream"):
            return await self._stream(request, body, content, len(prompt) // 4)
        # Written whole before it is sent: a client that leaves meanwhile is not noticed.
        await asyncio.sleep(self.token_delay_s * -(-len(content) // 5))
        return web.json_response(
            {
                "id": f"chatcmpl-{self.requests}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt) // 4,
                    "completion_tokens": len(content) // 4,
                    "total_tokens": (len(prompt) + len(content)) // 4,
                },
            }
        )

    async def _stream(
        self, request: web.Request, body: dict[str, Any], content: str, prompt_tokens: int
    ) -> web.StreamResponse:
        """The reply as an OpenAI stream: chunks of a few characters, then the usage, then [DONE]."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        self.streamed += 1

        async def send(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            chunk = {
                "id": f"chatcmpl-{self.requests}",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        for start in range(0, len(content), 5):
            if request.transport is None or request.transport.is_closing():
                self.abandoned += 1  # the client went away: stop writing, as llama.cpp's server does
                return response
            await send({"content": content[start : start + 5]})
            await asyncio.sleep(self.token_delay_s)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(content) // 4}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        await send({}, "stop", **({"usage": usage} if self.stream_usage else {}))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _asked_fields(prompt: str) -> dict[str, Any]:
    """The fields a prompt without a schema asks for ("Respond with a JSON object in the following
    order of fields: `answer`."), as a schema's properties."""
    asked = re.search(r"following order of fields: (.*)$", prompt, re.M)
    return {"properties": {name: {} for name in re.findall(r"`(\w+)`", asked.group(1))}} if asked else {}


def _schema(response_format: dict[str, Any]) -> dict[str, Any]:
    if response_format.get("type") == "json_schema":
        return response_format["json_schema"]["schema"]
    return response_format.get("schema", {})


def main() -> None:
    """``python fake_llm.py --port N [--crash-with SIGSEGV]``: serve until killed, in its own
    process, as the embedded model server would (what the crash tests supervise)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--crash-with", help="a signal name: die by it at the first chat request")
    args = parser.parse_args()
    crash_with = signal.Signals[args.crash_with].value if args.crash_with else None
    with FakeLLMServer(port=args.port, crash_with=crash_with):
        print(f"fake LLM serving on 127.0.0.1:{args.port}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
