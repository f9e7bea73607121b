"""A walk through the web page in a real browser (Debian's chromium, headless, driven by
Selenium through Debian's chromedriver), by keyboard only: sign in, ask, see the evidence and
the answer, open a cited passage, follow up, rate, then the admin page's charts. The browser
test (tests/test_web_browser.py) asserts on what it saw; ``make bench ONLY=web`` times it and
keeps its screenshots."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = ("chromium", "chromium-browser")
CHROMEDRIVER = "chromedriver"
WAIT_S = 60.0


def browser_missing() -> str | None:
    """Why no walk-through can run here (None when chromium and chromedriver are installed)."""
    if not any(shutil.which(name) for name in CHROMIUM) or not shutil.which(CHROMEDRIVER):
        return "Debian's chromium and chromium-driver are not installed (.ci/run installs them)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra)"
    return None


@dataclass
class Walk:
    """What the walk-through saw and how long the page took."""

    first_evidence_s: float = 0.0
    answer_s: float = 0.0
    follow_up_evidence_s: float = 0.0
    answer_text: str = ""
    evidence: list[str] = field(default_factory=list)
    cited_inline: bool = False
    passage_marked: list[str] = field(default_factory=list)
    passage_where: str = ""
    turns: int = 0
    conversations: int = 0
    rating_status: str = ""
    admin_refused: str = ""
    admin_overview: str = ""
    charts: int = 0
    injected_elements: int = 0
    alerts: list[Any] = field(default_factory=list)
    screenshots: list[Path] = field(default_factory=list)


def browser(width: int = 1280, height: int = 900):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(n) for n in CHROMIUM if shutil.which(n))
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(options=options, service=Service(executable_path=shutil.which(CHROMEDRIVER)))


def walk_through(
    base_url: str,
    user_key: str,
    admin_key: str,
    question: str,
    follow_up: str,
    screenshots: Path | None = None,
) -> Walk:
    """The walk-through (see the module docstring), by keyboard; ``screenshots`` keeps a PNG
    of each page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    walk = Walk()
    driver = browser()
    wait = WebDriverWait(driver, WAIT_S)

    def shot(name: str) -> None:
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            path = screenshots / f"{name}.png"
            driver.save_screenshot(str(path))
            walk.screenshots.append(path)

    def focused():
        return driver.switch_to.active_element

    def ask(text: str) -> float:
        answers = len(driver.find_elements(By.CSS_SELECTOR, ".turn.assistant form.rating"))
        wait.until(lambda d: focused().get_attribute("id") == "question")  # where the page puts focus
        box = focused()
        box.send_keys(text)
        started = time.perf_counter()
        box.send_keys(Keys.CONTROL, Keys.ENTER)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".turn.assistant:last-child .evidence li"))
        evidence_s = time.perf_counter() - started
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".turn.assistant form.rating")) > answers)
        walk.answer_s = time.perf_counter() - started
        return evidence_s

    try:
        driver.get(base_url + "/")
        driver.execute_script("window.alerted = []; window.alert = (m) => window.alerted.push(m);")
        key = driver.find_element(By.ID, "key")
        key.send_keys(user_key, Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "workspace").is_displayed())
        wait.until(lambda d: focused().get_attribute("id") == "question")
        walk.first_evidence_s = ask(question)
        last = ".turn.assistant:last-child"
        walk.evidence = [
            e.text for e in driver.find_elements(By.CSS_SELECTOR, f"{last} .evidence blockquote")
        ]
        walk.answer_text = driver.find_element(By.CSS_SELECTOR, f"{last} .answer").text
        shot("answer")
        # An [n] in the answer's text, else its first source (an answer of quotes cites none inline).
        cites = driver.find_elements(By.CSS_SELECTOR, f"{last} .answer button.cite, {last} .sources button")
        walk.cited_inline = bool(driver.find_elements(By.CSS_SELECTOR, f"{last} .answer button.cite"))
        cites[0].send_keys(Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is not None)
        wait.until(lambda d: "Loading" not in d.find_element(By.ID, "passage-text").text)
        walk.passage_marked = [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#passage-text mark")]
        walk.passage_where = driver.find_element(By.ID, "passage-where").text
        shot("passage")
        focused().send_keys(Keys.ESCAPE)
        wait.until(lambda d: d.find_element(By.ID, "passage").get_attribute("open") is None)
        focused().send_keys("/")  # back to the question by keyboard
        wait.until(lambda d: focused().get_attribute("id") == "question")
        walk.follow_up_evidence_s = ask(follow_up)
        walk.turns = len(driver.find_elements(By.CSS_SELECTOR, "#turns > li"))
        walk.conversations = len(driver.find_elements(By.CSS_SELECTOR, "#conversations li"))
        rating = driver.find_element(By.CSS_SELECTOR, f"{last} form.rating")
        star = rating.find_element(By.CSS_SELECTOR, "input[value='2']")
        star.send_keys(Keys.SPACE)
        label = rating.find_element(By.TAG_NAME, "select")
        label.send_keys("Correct, but missing information")
        label.send_keys(Keys.TAB)
        focused().send_keys(Keys.ENTER)
        wait.until(lambda d: rating.find_element(By.CSS_SELECTOR, ".status").text)
        walk.rating_status = rating.find_element(By.CSS_SELECTOR, ".status").text
        walk.injected_elements = len(
            driver.find_elements(By.CSS_SELECTOR, "#turns img, #turns script, #passage-text img")
        )
        walk.alerts = driver.execute_script(
            "return window.alerted.concat(window.pwned ? [window.pwned] : [])"
        )
        shot("rated")
        driver.get(base_url + "/admin")
        wait.until(lambda d: d.find_element(By.ID, "notice").is_displayed())
        walk.admin_refused = driver.find_element(By.ID, "notice").text
        driver.find_element(By.ID, "key").send_keys(admin_key, Keys.ENTER)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "svg.chart rect"))
        walk.admin_overview = driver.find_element(By.ID, "overview").text
        walk.charts = len(driver.find_elements(By.CSS_SELECTOR, "svg.chart"))
        shot("admin")
        driver.set_window_size(390, 844)
        shot("admin-phone")
        driver.get(base_url + "/")
        wait.until(lambda d: d.find_element(By.ID, "workspace").is_displayed())
        shot("phone")
    finally:
        driver.quit()
    return walk
