"""How docfinder words what it is doing and what went wrong, for every front door.

Users see :func:`status_text` (Slack's placeholder, the CLI's spinner) and
:func:`error_message` (chat replies); tools and logs see :func:`describe_step`, one
technical line per agent step (MCP progress, the CLI's step list). One place, so a step
is never called two things.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from pipeline.citations import marker
from pipeline.errors import DocfinderError, InvalidRequestError, TransientError
from pipeline.steps import Step

STEP_TEXT: dict[Step, str] = {
    Step.RECEIVED: "Looking through the documentation…",
    Step.QUEUED: "The language model is answering other questions; yours is next in line…",
    Step.CONDENSE: "Reading the conversation so far…",
    Step.CLASSIFY_QUERY: "Working out what the question is about…",
    Step.REVIEW_QUERY: "Working out what the question is about…",
    Step.RETRIEVE: "Searching the documents…",
    Step.SPARSE_FALLBACK: "Looking for rarely mentioned facts…",
    Step.TRANSFORM_QUERY: "Trying a different search…",
    Step.EVIDENCE: "Found the evidence; writing the answer…",
    Step.GENERATE: "Writing the answer…",
    Step.COMPOSE: "Checking the answer against the sources…",
    Step.CITE_SENTENCES: "Checking the answer against the sources…",
    Step.CITE_FIGURES: "Checking the answer against the sources…",
    Step.SUPPORTED: "Checking the answer against the sources…",
    Step.USEFUL: "Checking the answer against the sources…",
}


EVIDENCE_HEADING = "While the answer is written, this is what the documents say:"


def status_text(step: str) -> str | None:
    """The wording a user sees for an agent step, or None for steps not worth showing."""
    return STEP_TEXT.get(step)


def evidence_preview(event: dict[str, Any]) -> str | None:
    """The strongest evidence of an ``evidence`` step, as users read it while the answer is
    written (None for any other step): each unit in the document's words with its citation
    number and where it stands."""
    quotes = event.get("quotes") if event.get("step") == Step.EVIDENCE else None
    if not quotes:
        return None
    lines = [EVIDENCE_HEADING]
    for quote in quotes:
        pages = quote.get("pages") or []
        where = (
            f"{_file_name(quote['source'])}, p. {pages[0]}"
            if pages and pages[0]
            else _file_name(quote["source"])
        )
        lines.append(f"{marker(quote['n'])} “{quote['text']}” ({where})")
    return "\n".join(lines)


def _file_name(source: str) -> str:
    return source.rstrip("/").rsplit("/", 1)[-1]


def error_message(exc: DocfinderError) -> str:
    """A clear, polite message for a failed question."""
    if isinstance(exc, TransientError):
        return f"Sorry, I cannot answer right now ({exc}). Please try again in a few minutes."
    if isinstance(exc, InvalidRequestError):
        return f"Sorry, I cannot answer that: {exc}."
    return f"Sorry, something went wrong while answering: {exc}."


def describe_step(event: dict[str, Any]) -> str:
    """One technical line for a trace event: the step and what it found or decided."""
    step = event["step"]
    if step == Step.RETRIEVE:
        return f"retrieve: {len(event.get('candidates', []))} candidates"
    if step == Step.GRADE_DOCUMENTS:
        return f"grade_documents: kept {len(event.get('kept', []))}"
    if step == Step.EVIDENCE:
        return f"evidence: {len(event.get('quotes', []))} units shown"
    if step == Step.COMPOSE:
        dropped = ", ".join(d["reason"] for d in event.get("dropped", []))
        return f"compose: {event.get('kind')}" + (f" (dropped: {dropped})" if dropped else "")
    if step == Step.CITE_SENTENCES:
        labels = ", passage labels removed" if event.get("labels_removed") else ""
        return f"cite_sentences: {len(event.get('added', []))} sentence(s) cited{labels}"
    if step == Step.CITE_FIGURES:
        added = ", ".join(f"{a['figure']} → {marker(a['passage'])}" for a in event.get("added", []))
        return f"cite_figures: {added}"
    if "verdict" in event:
        return f"{step}: {event['verdict']}"
    return step


# Control characters (C0, DEL, C1) and the bidirectional overrides that reorder what a reader sees.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, lines: bool = False) -> str:
    """``text`` safe for a terminal or one log line: control characters written as escapes
    (``\\x1b``, ``\\n``), so a file name or title can neither drive the terminal (retitle it,
    clear it) nor start a forged log line. With ``lines``, line breaks and tabs stay (a
    document's text, an answer: printed as they are written, their escape sequences not)."""
    kept = "\n\t" if lines else ""
    return _INVISIBLE.sub(lambda m: m.group() if m.group() in kept else _escaped(m.group()), text)


def _escaped(character: str) -> str:
    return character.encode("unicode_escape").decode("ascii")


def without_invisible(text: str) -> str:
    """``text`` without control characters (line breaks and tabs kept) and invisible format
    characters (zero-width spaces and joiners, bidirectional marks and overrides): a question
    of only these asks nothing, and inside one they only hide what it says."""
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf"))
