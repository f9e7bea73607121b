"""The documentation audit over the live index (``docfinder audit``, ``GET /v1/audit``, the MCP
``audit`` tool): every evidence unit of the chosen collections becomes a statement, near pairs
by their stored vectors are compared by code (:mod:`pipeline.audit`), links are checked against
the indexed documents, and the questions left unanswered come from the answer and feedback
stores. Admins only: it reads every collection it is given."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from index_build.layout import VERSIONS
from index_build.snapshot import CollectionIndex, IndexSnapshot, open_version
from pipeline.answers import LOCAL_CALLER, Caller
from pipeline.audit.checks import comparable, pair_findings, unsettled_pairs
from pipeline.audit.demand import Unanswered, demand_findings
from pipeline.audit.facts import fact_pairs, short_facts
from pipeline.audit.findings import Finding, Statement, by_severity
from pipeline.audit.links import broken_links
from pipeline.audit.neighbours import near_pairs, same_term_pairs, same_wording_pairs
from pipeline.audit.statements import content_words
from pipeline.citations import citation_link
from pipeline.errors import InvalidRequestError, NotFoundError
from pipeline.protocols import Embedder
from server.core.access import Access, require_scope
from server.core.live_index import LiveIndex
from server.models.language_model import LanguageModel
from server.settings import Settings
from server.stores.opening import Stores

NEIGHBOURS = 6  # nearest statements each one is compared with
# Cosine of unit vectors below which two statements are not compared. Low, since a unit's vector
# is pooled from its chunk: the same sentence in two other passages stood at 0.6 in a test.
MIN_SIMILARITY = 0.55
SUBJECT_WORDS = 8  # content words below which a sentence is read with its heading ("The default is 4MB.")
MISSING_LABELS = frozenset({"Correct, but missing information", "Cannot be answered"})
UNANSWERED_OUTCOMES = ("not_in_documents", "unverified")
_VERSION_ID = re.compile(r"^\d{8}T\d{6}(?:\.\d{6})?-[0-9a-f]{4}$")
Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True, slots=True)
class AuditReport:
    findings: list[Finding]
    about: dict[str, Any]


class Auditor:
    """Audits the live index for the service (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        index: LiveIndex,
        stores: Stores,
        access: Access,
        embedder: Callable[[], Embedder],
        llm: LanguageModel,
    ) -> None:
        self.settings = settings
        self.index = index
        self.stores = stores
        self.access = access
        self.embedder = embedder
        self.llm = llm

    async def audit(
        self,
        caller: Caller,
        collections: list[str] | None = None,
        since: str | None = None,
        progress: Progress | None = None,
        judge: int = 0,
    ) -> AuditReport:
        """Every finding in ``collections`` (all by default), most severe first; with ``since``
        (an index version id), only statements changed since that version, against all. With
        ``judge``, the LLM judges up to that many near pairs code could not settle, both
        passages quoted to it (:class:`programs.signatures.JudgePair`)."""
        require_scope(caller, "admin")
        chosen = self.access.allowed_collections(collections, caller)
        progress = progress or _quiet
        report, unsettled = await asyncio.to_thread(self._audit, chosen, since, progress, judge)
        if unsettled:
            judged = await self._judged(unsettled, progress)
            report = AuditReport(
                by_severity(report.findings + judged), {**report.about, "judged": len(unsettled)}
            )
        if caller is LOCAL_CALLER:
            return report
        return AuditReport([self._public(f) for f in report.findings], report.about)

    def _public(self, finding: Finding) -> Finding:
        """A finding as a remote caller sees it: sources by their public name, links only to
        published URLs."""
        passages = []
        for s in finding.passages:
            public = self.access.public_source(s.source)
            published = public.startswith(("http://", "https://"))
            passages.append(replace(s, source=public, link=s.link if published else ""))
        return replace(finding, passages=tuple(passages))

    async def _judged(
        self, unsettled: Sequence[tuple[Statement, Statement, float]], progress: Progress
    ) -> list[Finding]:
        """A contradiction for each pair the LLM judges contradictory."""
        import dspy

        from programs.signatures import JudgePair

        findings = []
        judge = dspy.Predict(JudgePair)
        with dspy.context(**await self.llm.dspy_settings()):
            for n, (a, b, similarity) in enumerate(unsettled, start=1):
                verdict = (await judge.acall(passage_a=_quoted(a), passage_b=_quoted(b))).verdict
                progress("LLM judging pairs", n, len(unsettled))
                if verdict == "contradict":
                    why = "judged contradictory by the LLM, both passages quoted to it (code could not tell)"
                    findings.append(
                        Finding(
                            "contradiction",
                            "medium",
                            round(min(similarity, 0.6), 2),
                            why,
                            (a, b),
                            collections=tuple(sorted({a.collection, b.collection})),
                        )
                    )
        return findings

    def _audit(
        self, collections: list[str] | None, since: str | None, progress: Progress, judge: int
    ) -> tuple[AuditReport, list[tuple[Statement, Statement, float]]]:
        started = time.perf_counter()
        snapshot = self.index.current()
        chosen = snapshot.select(collections)
        statements, vectors, firsts, facts = self._statements(chosen, progress)
        eligible = np.array([comparable(s) for s in statements], dtype=bool)
        eligible[facts] = False  # compared only with facts of their exact subject (pipeline.audit.facts)
        focus = None
        if since is not None:
            earlier = self._earlier_texts(since)
            focus = np.array([(s.source, s.text) not in earlier for s in statements], dtype=bool)
        total = int(eligible.sum() if focus is None else (eligible & focus).sum())
        done = [0]

        def step(rows: int) -> None:
            done[0] += rows
            progress("comparing statements", done[0], total)

        chunks = np.array([hash(s.chunk_id) for s in statements], dtype=np.int64)
        pairs = near_pairs(vectors, eligible, NEIGHBOURS, MIN_SIMILARITY, focus, step, chunks)
        seen = {(i, j) for i, j, _ in pairs}
        texts = [s.text for s in statements]
        pairs += [p for p in same_wording_pairs(texts, vectors, eligible, focus) if p[:2] not in seen]
        pairs += [p for p in fact_pairs(statements, facts) if focus is None or focus[p[0]] or focus[p[1]]]
        seen = {(i, j) for i, j, _ in pairs}
        # One term defined in two places: its values and denials are compared (and judged, with
        # --judge); a drift between two programs' entries for one option is a template, not a copy.
        by_term = [p for p in same_term_pairs(texts, vectors, eligible, focus) if p[:2] not in seen]
        findings = pair_findings(statements, pairs)
        findings += [f for f in pair_findings(statements, by_term) if f.kind != "near_duplicate"]
        pairs += by_term
        known = {record.path for record in snapshot.files}
        findings += broken_links(
            [(statements[i], text) for i, text in firsts if focus is None or focus[i]], known
        )
        findings += self._unanswered([c.name for c in chosen])
        about = {
            "index_version": snapshot.version_id,
            "collections": [c.name for c in chosen],
            "since": since,
            "statements": len(statements),
            "compared_pairs": len(pairs),
            "seconds": round(time.perf_counter() - started, 1),
        }
        unsettled = unsettled_pairs(statements, pairs, judge) if judge else []
        return AuditReport(by_severity(findings), about), unsettled

    def _statements(
        self, chosen: Sequence[CollectionIndex], progress: Progress
    ) -> tuple[list[Statement], np.ndarray, list[tuple[int, str]], list[int]]:
        """Every unit of ``chosen`` as a statement with its vector, each chunk's first
        statement (its position) with the chunk's text (for its links), and after each
        collection's units its short facts (their positions; :mod:`pipeline.audit.facts`)."""
        prefixes = self.settings.index.source_url_prefixes
        statements: list[Statement] = []
        vectors: list[np.ndarray] = []
        firsts: list[tuple[int, str]] = []
        facts: list[int] = []
        total = sum(len(c.units) for c in chosen)
        for collection in chosen:
            chunks = {chunk.chunk_id: chunk for chunk in collection.chunks}
            first_of: set[str] = set()
            embeddings = np.asarray(collection.unit_embeddings, dtype=np.float32)
            for n, unit in enumerate(collection.units):
                chunk = chunks[unit.chunk_id]
                heading = " › ".join(chunk.heading_path)
                if unit.kind == "row":
                    subject = " ".join(p for p in (unit.table_header, unit.row_group) if p)
                elif content_words(unit.text) < SUBJECT_WORDS:
                    subject = chunk.heading_path[-1] if chunk.heading_path else chunk.title
                else:
                    subject = ""
                statement = Statement(
                    key=unit.unit_id,
                    doc_id=unit.doc_id,
                    chunk_id=unit.chunk_id,
                    collection=collection.name,
                    text=unit.text,
                    title=chunk.title,
                    heading=heading,
                    page=unit.page,
                    source=chunk.source,
                    link=citation_link(chunk.source, (unit.page, unit.page), prefixes),
                    subject=subject,
                )
                statements.append(statement)
                vectors.append(embeddings[n])
                if chunk.chunk_id not in first_of:
                    first_of.add(chunk.chunk_id)
                    firsts.append((len(statements) - 1, chunk.text))
                if len(statements) % 5000 == 0:
                    progress("reading statements", len(statements), total)
            for statement in self._facts(collection):
                facts.append(len(statements))
                statements.append(statement)
                vectors.append(np.zeros(embeddings.shape[1], np.float32))
        progress("reading statements", len(statements), total)
        matrix = np.vstack(vectors) if vectors else np.zeros((0, 1), np.float32)
        return statements, matrix, firsts, facts

    def _facts(self, collection: CollectionIndex) -> list[Statement]:
        """The short facts of each chunk of ``collection`` as statements whose subject is their
        heading and what their paragraph says before them."""
        prefixes = self.settings.index.source_url_prefixes
        held: dict[str, set[str]] = {}
        for unit in collection.units:
            held.setdefault(unit.chunk_id, set()).add(unit.text)
        found = []
        for chunk in collection.chunks:
            heading = " › ".join(chunk.heading_path)
            for n, (text, context) in enumerate(short_facts(chunk.text, held.get(chunk.chunk_id, set()))):
                found.append(
                    Statement(
                        key=f"{chunk.chunk_id}/fact{n:03d}",
                        doc_id=chunk.doc_id,
                        chunk_id=chunk.chunk_id,
                        collection=collection.name,
                        text=text,
                        title=chunk.title,
                        heading=heading,
                        page=chunk.pages[0],
                        source=chunk.source,
                        link=citation_link(chunk.source, chunk.pages, prefixes),
                        subject=f"{heading} › {context}" if context else heading,
                    )
                )
        return found

    def _earlier_texts(self, since: str) -> set[tuple[str, str]]:
        """(source, text) of every unit and short fact of index version ``since``."""
        if not _VERSION_ID.match(since):
            raise InvalidRequestError(
                f"{since!r} is not an index version id (such as 20261127T150725.127440-540b)"
            )
        directory = self.settings.index.dir / VERSIONS / since
        if not directory.is_dir():
            raise NotFoundError(f"no index version {since!r} is kept (older versions are pruned)")
        earlier: IndexSnapshot = open_version(directory, memory_map=True, verify=False)
        texts = set()
        for collection in earlier.collections.values():
            sources = {chunk.chunk_id: chunk.source for chunk in collection.chunks}
            texts.update((sources[unit.chunk_id], unit.text) for unit in collection.units)
            texts.update((fact.source, fact.text) for fact in self._facts(collection))
        return texts

    def _unanswered(self, collections: Sequence[str]) -> list[Finding]:
        """Questions answered "the documents do not say" or unverified, and those rated as
        missing information, in ``collections``, grouped by topic."""
        wanted = set(collections)
        asked = [
            Unanswered(q, outcome.replace("_", " "), tuple(c), when)
            for q, outcome, c, when in self.stores.conversations.unanswered(UNANSWERED_OUTCOMES)
            if not c or wanted & set(c)
        ]
        asked += [
            Unanswered(r.question, r.label or f"rated {r.rating}", r.collections, r.created_at)
            for r in self.stores.feedback.records()
            if (r.label in MISSING_LABELS or (r.rating is not None and r.rating <= 2))
            and (not r.collections or wanted & set(r.collections))
        ]
        if not asked:
            return []
        vectors = np.vstack([self.embedder().embed_query(q.question) for q in asked])
        return demand_findings(asked, vectors)


def _quoted(statement: Statement) -> str:
    where = " — ".join(p for p in (statement.title, statement.heading) if p)
    return f"{where}:\n{statement.text}" if where else statement.text


def _quiet(stage: str, done: int, total: int) -> None:
    return None
