"""The audit's checks on pairs of near statements: contradictions, stale statements and
copy-paste drift, each confirmed by code (:func:`pipeline.audit.statements.compare`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from pipeline.audit.findings import Finding, Statement
from pipeline.audit.statements import (
    FIGURES,
    MIN_WORDS,
    Comparison,
    code_like,
    compare,
    content_words,
    version_of,
    word_count,
)
from pipeline.text import analyze

DRIFT_MIN_WORDS = 10  # a drifted passage shorter than this is a template sentence, not a copy
COPIED_MIN_WORDS = 5  # ... unless the statements around it read the same in both documents
OWN_WORDS = 2  # content words a statement needs in its own text: a row needs a label
_NAME_LIKE = re.compile(r"_|[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")
SIBLING_UNITS = 50  # statements of one document this close are one section's variants ("IN" / "NOT IN")
TEMPLATE_VARIANTS = 3  # one wording with this many values is a template filled per item, not one claim
_DENIAL = re.compile(r"\b(?:not|no|never|cannot|none)\b|n't\b", re.IGNORECASE)
_LETTERS = re.compile(r"[A-Za-z]+")
_PROSE_END = re.compile(r"[.!?:][\"')\]”’]*\s*$")


def comparable(statement: Statement) -> bool:
    """Whether a statement says enough to be compared: a table row, a definition entry ("term —
    what it is") or a sentence that ends as one (a line of a program's output, "there are 2
    rows in ttest", is no claim of the documentation's), words of its own (a row of figures
    only, whose subject is somewhere above, is not), more prose than code (of a definition,
    its description: the term may be code), and, with its subject,
    :data:`~pipeline.audit.statements.MIN_WORDS` content words."""
    text = statement.text.strip()
    return (
        (text.startswith("|") or " — " in text or bool(_PROSE_END.search(text)))
        and content_words(text) >= OWN_WORDS
        and not code_like(text.partition(" — ")[2] or text)  # a term may be code: "$_TD->{event}"
        and content_words(f"{statement.subject} {statement.text}") >= MIN_WORDS
    )


def pair_findings(statements: Sequence[Statement], pairs: Iterable[tuple[int, int, float]]) -> list[Finding]:
    """A finding for each pair of near statements whose words show a problem (one per pair).

    ``statements`` are in reading order, document by document (their distance within one
    document tells a section's variants from a restatement far away)."""
    findings: list[Finding] = []
    drifted: dict[str, int] = {}  # a drift's words → its finding: one template, one finding
    held = {(s.doc_id, s.text) for s in statements}
    variants: dict[str, set[str]] = {}
    for statement in statements:
        variants.setdefault(_template(statement), set()).add(statement.text)
    for i, j, similarity in pairs:
        a, b = statements[i], statements[j]
        if a.text == b.text and a.subject == b.subject:
            continue
        if _row_label(a.text) != _row_label(b.text):
            continue  # two rows of a table are about what their first cells name
        comparison = compare(*_as_read(a, b))
        finding = _finding(a, b, comparison, similarity, _copied_around(statements, i, j))
        if finding is None:
            continue
        if finding.kind == "contradiction" and (
            (a.doc_id == b.doc_id and abs(i - j) <= SIBLING_UNITS)
            or len(variants[_template(a)]) >= TEMPLATE_VARIANTS
        ):
            continue  # a section describing variants ("IN", "NOT IN"), or a template ("Int32(4)", "Int32(8)")
        if a.doc_id != b.doc_id and ((b.doc_id, a.text) in held or (a.doc_id, b.text) in held):
            continue  # a document holding both wordings has two sibling statements ("IS NULL", "IS NOT NULL")
        if finding.kind == "near_duplicate":
            first = drifted.setdefault(" ".join(sorted((a.text, b.text))), len(findings))
            if first != len(findings):
                findings[first] = replace(findings[first], count=findings[first].count + 1)
                continue
        findings.append(finding)
    return findings


def unsettled_pairs(
    statements: Sequence[Statement], pairs: Iterable[tuple[int, int, float]], limit: int
) -> list[tuple[Statement, Statement, float]]:
    """The ``limit`` nearest pairs code could not settle, for an LLM to judge: statements of two
    chunks, each stating a figure or a negation, whose words differ in more than values (a
    paraphrase: "defaults to 5 minutes" / "defaults to 300 seconds")."""
    found = []
    for i, j, similarity in sorted(pairs, key=lambda p: -p[2]):
        a, b = statements[i], statements[j]
        if a.chunk_id == b.chunk_id or not (_claims(a.text) and _claims(b.text)):
            continue
        if compare(*_as_read(a, b)).relation in ("different", "drift"):
            found.append((a, b, similarity))
            if len(found) >= limit:
                break
    return found


def _claims(text: str) -> bool:
    """Whether ``text`` states a figure or denies something: what a contradiction is made of."""
    return bool(FIGURES.search(text)) or bool(_DENIAL.search(text))


def _template(statement: Statement) -> str:
    """A statement's wording with its values masked, under its subject read exactly: the same
    wording under "Release 15.11" and "Release 15.10" is two subjects, not one template."""
    return f"{statement.subject.lower()} {FIGURES.sub('#', statement.text.lower())}"


def _row_label(text: str) -> str:
    """A table row's first cell (what the row is about); "" for a sentence."""
    return text.strip().strip("|").split("|")[0].strip().lower() if text.lstrip().startswith("|") else ""


def _as_read(a: Statement, b: Statement) -> tuple[str, str]:
    """Two statements as compared: each with its subject, unless only one has one (a word
    added, such as "not", can lift a sentence over the words that call for its heading)."""
    if a.subject and b.subject:
        return f"{a.subject}: {a.text}", f"{b.subject}: {b.text}"
    return a.text, b.text


def _copied_around(statements: Sequence[Statement], i: int, j: int) -> bool:
    """Whether the statements just before or just after ``i`` and ``j`` (in their documents)
    read the same: the two stand in one copied passage."""
    for step in (-1, 1):
        m, n = i + step, j + step
        if min(m, n) >= 0 and max(m, n) < len(statements):
            beside_a, beside_b = statements[m], statements[n]
            same_place = beside_a.doc_id == statements[i].doc_id and beside_b.doc_id == statements[j].doc_id
            if same_place and beside_a.text == beside_b.text:
                return True
    return False


def _finding(
    a: Statement, b: Statement, comparison: Comparison, similarity: float, copied_around: bool = False
) -> Finding | None:
    sure = round(min(1.0, (similarity + comparison.ratio) / 2), 2)
    collections = tuple(sorted({a.collection, b.collection}))
    relation = comparison.relation
    if relation == "value":
        old = " ".join(comparison.values[0])
        new = " ".join(comparison.values[1])
        why = f"the same statement with another value: {old!r} here, {new!r} there"
        return Finding("contradiction", "high", sure, why, (a, b), comparison.diff, collections=collections)
    if relation == "polarity":
        why = "the same statement, once negated: one passage says the opposite of the other"
        return Finding("contradiction", "high", sure, why, (a, b), comparison.diff, collections=collections)
    if relation == "version":
        older, newer = version_of(comparison.removed), version_of(comparison.added)
        first, second = (a, b) if older <= newer else (b, a)
        low, high = sorted((older, newer))
        why = (
            f"the same statement for release {_release(low)} and for release {_release(high)}: "
            "the first passage is tied to the older one"
        )
        return Finding(
            "stale", "medium", sure, why, (first, second), comparison.diff, collections=collections
        )
    if (
        relation == "drift"
        and a.doc_id != b.doc_id
        and min(word_count(a.text), word_count(b.text)) >= _drift_words(copied_around)
        and not _fills_a_template(a, b, comparison)
    ):
        why = (
            f"a passage copied between two documents whose words have drifted ({comparison.ratio:.0%} alike)"
        )
        return Finding("near_duplicate", "low", sure, why, (a, b), comparison.diff, collections=collections)
    return None


def _drift_words(copied_around: bool) -> int:
    return COPIED_MIN_WORDS if copied_around else DRIFT_MIN_WORDS


def _fills_a_template(a: Statement, b: Statement, comparison: Comparison) -> bool:
    """Whether two statements are one template filled in for two subjects, not a copy that
    drifted: a changed word is an identifier ("pg_receivexlog", "SupportRequestCost") or a
    capitalised name, or each
    side's changed words are in its own title or heading ("Do not throw an error if the event
    trigger does not exist" on DROP EVENT TRIGGER, "… if the trigger …" on DROP TRIGGER)."""
    removed = [t for t in comparison.removed if t[0].isalnum()]
    added = [t for t in comparison.added if t[0].isalnum()]
    if any(_NAME_LIKE.search(w) or w[0].isupper() for w in removed + added):
        return True  # a name changed: "CREATE VIEW" for "CREATE STATISTICS", one person thanked for another
    return _in_its_place(a, removed) and _in_its_place(b, added)


def _in_its_place(statement: Statement, words: Sequence[str]) -> bool:
    """Whether each of ``words`` stands, as a word stem, in the statement's title or heading
    ("servers" in "foreign_server_options")."""
    place = set(analyze(" ".join(_LETTERS.findall(f"{statement.title} {statement.heading}"))))
    return all(set(analyze(" ".join(_LETTERS.findall(w)))) <= place for w in words)


def _release(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version)) or "?"
