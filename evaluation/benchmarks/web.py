"""`make bench ONLY=web`: the web page walked through in Debian's chromium (headless) by
keyboard, on the embedded defaults (the bundled docs, the embedded model on this machine's
CPU), timing the first evidence on the page and keeping a screenshot of each page under
``bench-results/web/``. Skips with a reason where chromium is not installed (``.ci/browser``)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from evaluation.live_server import LiveServer
from evaluation.web_walk import browser_missing, walk_through
from server.core.ingest import run_ingest
from server.settings import load_settings

DOCS = Path(__file__).resolve().parents[2] / "docs"
SCREENSHOTS = Path("bench-results") / "web"
USER = "bench-staff-" + "5" * 28
ADMIN = "bench-admin-" + "6" * 28
QUESTION = "How do I add my own documents to docfinder?"
FOLLOW_UP = "And how do I remove them again?"


def bench_web() -> dict[str, Any]:
    missing = browser_missing()
    if missing is not None:
        return {"skipped": missing}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = load_settings(
            index__dir=root / "index",
            stores__conversations_path=root / "conversations.sqlite3",
            stores__feedback_path=root / "feedback.sqlite3",
            access__api_keys={"staff": {"key": USER}, "boss": {"key": ADMIN, "scopes": ["admin"]}},
        )
        run_ingest(settings, [DOCS], collection="docfinder-docs")
        with LiveServer(settings, start_llm=True) as server:
            walk = walk_through(server.url, USER, ADMIN, QUESTION, FOLLOW_UP, screenshots=SCREENSHOTS)
    return {
        "first_evidence_s": round(walk.first_evidence_s, 2),
        "follow_up_evidence_s": round(walk.follow_up_evidence_s, 2),
        "last_answer_s": round(walk.answer_s, 1),
        "evidence_quotes": len(walk.evidence),
        "answer_cites_inline": walk.cited_inline,
        "passage_marked_quotes": len(walk.passage_marked),
        "turns": walk.turns,
        "charts": walk.charts,
        "rating": walk.rating_status,
        "screenshots": [str(p) for p in walk.screenshots],
    }
