"""Hardening benchmarks for what attackers and careless clients send (part of ``hardening``).

1. Ingest bomb: a 0.3 MB DOCX whose XML expands to 40 MB (400,000 identical paragraphs), a
   22 MB HTML table, and two small files (round three of hardening): a 240 KB Markdown table
   of 20,000 columns and 1 MB of nested ``<div>``, beside one small guide, ingested by
   ``docfinder ingest`` in a process of its own: its time, the peak memory of its largest
   process (the ingest or a conversion child), what it skipped and why, and the index it
   wrote. The SEC filings are ingested the
   same way (when ../shared/data has them), as the reference for memory on real documents.
2. Hostile bodies: numbers of 5,000 digits, JSON that is not an object, broken JSON, deep
   nesting, lone surrogates and bytes that are not UTF-8, sent to every route that reads a
   body (the REST API, ``/mcp``, ``/slack/events`` signed and unsigned, ``/api/messages``);
   the number of 5xx answers must be 0.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from evaluation.benchmarks import DATA
from evaluation.doubles.hostile_files import huge_html, nested_divs, wide_markdown_table, write_docx_bomb

SEC_DOCS = DATA / "sec10q" / "docs"
BOMB_PARAGRAPHS = 400_000
HTML_ROWS = 500_000  # about 22 MB
BENCH_KEY = "hardening-bench-key-" + "7" * 24
SLACK_SECRET = "hardening-bench-signing-secret"

# One body per kind of malice, each sent to every route.
HOSTILE_BODIES: dict[str, bytes] = {
    "integer of 5,000 digits in an object": (
        b'{"question": "x", "query": "x", "answer_id": "x", "k": ' + b"9" * 5000 + b"}"
    ),
    "integer of 5,000 digits alone": b"9" * 5000,
    "negative integer of 5,000 digits in a list": b"[-" + b"9" * 5000 + b"]",
    "float with a 5,000-digit exponent": b'{"k": 1e' + b"9" * 5000 + b"}",
    "JSON list": b"[1, 2]",
    "JSON string": b'"text"',
    "JSON null": b"null",
    "JSON true": b"true",
    "not JSON": b"notjson",
    "form payload that is not JSON": b"payload=notjson",
    "truncated JSON": b'{"question": ',
    "nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "lone surrogate": b'{"question": "\\ud800", "query": "\\ud800"}',
    "bytes that are not UTF-8": b'{"question": "\xff\xfe"}',
    "event that is a string": b'{"type": "event_callback", "event": "text"}',
    "empty body": b"",
}


def ingest_peak(paths: list[Path], index: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run ``docfinder ingest`` in a fresh process; its seconds, report, and the peak resident
    memory of its largest process (the ingest itself or one of its conversion children)."""
    command = [
        str(Path(sys.executable).parent / "docfinder"),
        "ingest",
        *map(str, paths),
        "--index",
        str(index),
        "--json",
    ]
    # getrusage(RUSAGE_CHILDREN) of a fresh wrapper counts only this ingest and its children.
    wrapper = (
        "import resource, subprocess, sys, json\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps({'rc': done.returncode, 'peak_kb': peak, 'out': done.stdout,\n"
        "                  'err': done.stderr[-2000:]}))\n"
    )
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", wrapper, *command], capture_output=True, text=True, env=env
    )
    seconds = time.perf_counter() - started
    measured = json.loads(result.stdout)
    try:
        report = json.loads(measured["out"])
    except json.JSONDecodeError:
        raise RuntimeError(f"ingest failed (rc {measured['rc']}): {measured['err']}") from None
    return {
        "seconds": round(seconds, 1),
        "peak_mb_largest_process": round(measured["peak_kb"] / 1024, 1),
        "exit_code": measured["rc"],
        "documents": report.get("documents"),
        "skipped": {Path(f["path"]).name: f["reason"] for f in report.get("failures", [])},
        "index_mb": round(_size(index) / 2**20, 1),
    }


def bench_ingest_bomb(work: Path, env: dict[str, str]) -> dict[str, Any]:
    """Phase 1: the bomb beside a guide; the SEC filings for reference (see the module docstring)."""
    bombs = work / "bombs"
    bombs.mkdir()
    (bombs / "guide.md").write_text("# Guide\n\nThe guide explains the cryostat warm-up.\n")
    expanded = write_docx_bomb(bombs / "attachment.docx", BOMB_PARAGRAPHS)
    huge_html(bombs / "inventory.html", HTML_ROWS)
    wide_markdown_table(bombs / "wide-table.md")  # small files: round three of hardening
    nested_divs(bombs / "nested.html")
    sizes = {p.name: round(p.stat().st_size / 2**20, 2) for p in sorted(bombs.iterdir())}
    measured: dict[str, Any] = {
        "bomb": {
            "files_mb": sizes,
            "docx_expands_to_mb": round(expanded / 2**20, 1),
            **ingest_peak([bombs], work / "bomb-index", env),
        }
    }
    if SEC_DOCS.is_dir():
        measured["sec_filings"] = ingest_peak([SEC_DOCS], work / "sec-index", env)
    else:
        measured["sec_filings"] = f"skipped: {SEC_DOCS} is absent"
    return measured


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def hostile_env(env: dict[str, str], slack_api_url: str) -> dict[str, str]:
    """The server settings of phase 2: an API key (so /mcp is mounted), Slack (its Web API a
    local fake, as reachable as the real one) and Teams."""
    return {
        **env,
        "DOCFINDER_ACCESS__API_KEYS": json.dumps({"bench": {"key": BENCH_KEY, "scopes": ["admin"]}}),
        "DOCFINDER_SLACK__BOT_TOKEN": "xoxb-hardening-bench",
        "DOCFINDER_SLACK__SIGNING_SECRET": SLACK_SECRET,
        "DOCFINDER_SLACK__API_URL": slack_api_url,
        "DOCFINDER_TEAMS__APP_ID": "00000000-0000-0000-0000-000000000000",
        "DOCFINDER_TEAMS__APP_PASSWORD": "hardening-bench",
    }


async def bench_hostile(env: dict[str, str]) -> dict[str, Any]:
    """Phase 2 against ``docfinder serve http`` started with :func:`hostile_env`."""
    from evaluation.benchmarks.load_fault import start_server
    from evaluation.doubles.fake_chat import FakeSlackAPI

    async with FakeSlackAPI() as slack:
        process, url = await asyncio.to_thread(start_server, hostile_env(env, slack.url))
        try:
            return await bench_hostile_bodies(url)
        finally:
            process.terminate()
            await asyncio.to_thread(process.wait, 30)


async def bench_hostile_bodies(url: str) -> dict[str, Any]:
    """Phase 2: every hostile body to every route; statuses by route and the 5xx examples."""
    bearer = {"Authorization": f"Bearer {BENCH_KEY}"}
    mcp = {**bearer, "Accept": "application/json, text/event-stream"}
    routes: dict[str, dict[str, str]] = {
        "/v1/ask": bearer,
        "/v1/ask/stream": bearer,
        "/v1/search": bearer,
        "/v1/feedback": bearer,
        "/mcp": mcp,
        "/slack/events (unsigned)": {},
        "/slack/events (signed)": {},
        "/api/messages": {},
    }
    by_route: dict[str, dict[str, int]] = {}
    server_errors: list[str] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        for route, headers in routes.items():
            path = route.split(" ")[0]
            statuses: dict[str, int] = {}
            for name, body in HOSTILE_BODIES.items():
                for content_type in ("application/json", "application/x-www-form-urlencoded"):
                    sent = {**headers, "Content-Type": content_type}
                    if route.endswith("(signed)"):
                        sent.update(_slack_signature(body))
                    async with session.post(f"{url}{path}", data=body, headers=sent) as response:
                        await response.read()
                        key = str(response.status)
                        statuses[key] = statuses.get(key, 0) + 1
                        if response.status >= 500:
                            server_errors.append(f"{route} {content_type}: {name} → {response.status}")
            by_route[route] = dict(sorted(statuses.items()))
    return {
        "requests": sum(sum(s.values()) for s in by_route.values()),
        "bodies": list(HOSTILE_BODIES),
        "statuses_by_route": by_route,
        "server_errors": len(server_errors),
        "server_error_examples": server_errors[:10],
    }


def _slack_signature(body: bytes) -> dict[str, str]:
    timestamp = str(int(time.time()))
    digest = hmac.new(SLACK_SECRET.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256)
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": f"v0={digest.hexdigest()}"}
