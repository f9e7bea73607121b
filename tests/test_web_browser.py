"""The web page in a real browser (Debian's chromium, headless), by keyboard only, against a
real loopback server with the fake LLM: sign in, ask, evidence, answer, open the cited
passage, follow up, rate, then the admin page's charts. A document holding ``<script>`` and
an ``onerror`` image is shown as text and nothing of it runs."""

from __future__ import annotations

import pytest

from evaluation.doubles.fake_llm import FakeLLMServer
from evaluation.live_server import LiveServer
from evaluation.web_walk import browser_missing, walk_through
from index_build.builder import ingest
from server.settings import load_settings
from tests.samples import write_sample_corpus

pytestmark = pytest.mark.skipif(browser_missing() is not None, reason=browser_missing() or "")
USER = "user-key-" + "3" * 31
ADMIN = "admin-key-" + "4" * 30
HOSTILE = (
    "<html><head><title>Badge office</title></head><body><h1>Badge office</h1>"
    "<p>Visitor badges are printed at the front desk; write &lt;script&gt;window.pwned=1&lt;/script&gt; "
    'and &lt;img src=x onerror="window.pwned=2"&gt; on the form to test the printer.</p></body></html>'
)


def test_sign_in_ask_follow_up_rate_and_see_the_chart_by_keyboard(tmp_path, embedder):
    docs = write_sample_corpus(tmp_path / "handbook")
    (docs / "badges.html").write_text(HOSTILE)
    ingest(tmp_path / "index", [docs], embedder=embedder)
    with FakeLLMServer() as llm:
        settings = load_settings(
            index__dir=tmp_path / "index",
            stores__conversations_path=tmp_path / "conversations.sqlite3",
            stores__feedback_path=tmp_path / "feedback.sqlite3",
            llm__api_base=llm.url,
            access__api_keys={"staff": {"key": USER}, "boss": {"key": ADMIN, "scopes": ["admin"]}},
        )
        with LiveServer(settings, embedder) as server:
            walk = walk_through(
                server.url,
                USER,
                ADMIN,
                "Where are visitor badges printed?",
                "And what should I write on the form?",
                screenshots=tmp_path / "shots",
            )
    assert walk.evidence and any("front desk" in quote for quote in walk.evidence), "the evidence first"
    assert "[1]" in walk.answer_text and "front desk" in walk.answer_text and walk.cited_inline
    assert "<script>window.pwned=1</script>" in walk.answer_text, "the document's markup shown as text"
    assert walk.injected_elements == 0 and walk.alerts == [], "nothing of the document runs or renders"
    assert walk.passage_marked and "Badge office" in walk.passage_where, (
        "the quote highlighted in its passage"
    )
    assert walk.turns == 4 and walk.conversations == 1, "the follow-up in the same conversation"
    assert "saved" in walk.rating_status
    assert "admin" in walk.admin_refused, "a staff key sees no admin page"
    assert walk.admin_overview.startswith("1 judgement;")
    assert walk.charts == 5


def test_a_server_without_keys_opens_the_page_signed_in_on_its_own_machine(tmp_path, embedder):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from evaluation.web_walk import browser

    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    settings = load_settings(
        index__dir=tmp_path / "index",
        stores__conversations_path=tmp_path / "conversations.sqlite3",
        stores__feedback_path=tmp_path / "feedback.sqlite3",
    )
    with LiveServer(settings, embedder) as server:
        driver = browser()
        try:
            driver.get(server.url + "/")
            WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "workspace").is_displayed())
            assert driver.find_element(By.ID, "who").text == "No key needed on this machine"
            assert not driver.find_element(By.ID, "sign-in").is_displayed()
            assert not driver.find_element(By.ID, "notice").is_displayed(), "no error shown for it"
        finally:
            driver.quit()
