"""Search: rank passages for a query on one index version, assemble an LLM context from them,
and look up a passage, a document or the collections, within what the caller may read.

Query encoding, BM25 scoring and reranking are CPU-bound: every search runs in the service's
bounded pool of search threads, off the event loop.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from index_build.snapshot import IndexSnapshot
from index_build.version import FileRecord
from pipeline.answers import LOCAL_CALLER, Caller
from pipeline.errors import InvalidRequestError, NotFoundError
from pipeline.protocols import Embedder
from pipeline.retrieval.absent import absent_names, named_terms
from pipeline.retrieval.context import (
    UNIT_SELECTIONS,
    Context,
    ContextConfig,
    Retrieved,
    build_context,
    whole_passages,
)
from pipeline.retrieval.documents import DocumentScope, resolve_scope
from pipeline.retrieval.domains import DomainChoice, domain_text, nearest_domain
from pipeline.retrieval.evidence import find_evidence
from pipeline.retrieval.expansion import Glossary
from pipeline.retrieval.routing import collection_weights, mean_direction
from pipeline.retrieval.search import (
    MAX_SEARCH_K,
    SEARCH_MODES,
    Reranker,
    RetrievalConfig,
    SearchRequest,
    retrieve,
)
from pipeline.steps import Step
from pipeline.text import analyze
from pipeline.types import Chunk, SearchHit
from server.core.access import Access, require_scope
from server.core.live_index import LiveIndex
from server.runtime.admission import WorkPool
from server.runtime.metrics import Metrics
from server.settings import Settings


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits for one query, the index version that produced them, and the retrieval trace.

    ``scope`` holds the documents the query names (see :mod:`pipeline.retrieval.documents`); ``queries``
    the query and its variants, as searched.
    """

    query: str
    mode: str
    version: str
    hits: list[SearchHit]
    trace: list[dict[str, Any]]
    context: Context | None = None
    scope: DocumentScope = field(default_factory=DocumentScope)
    queries: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()  # the query's technical names the searched collections never mention
    rarity: dict[str, float] = field(default_factory=dict)  # each query term's rarity in those collections
    documents_name: Callable[[str], bool] | None = None  # whether a document of those names a word


class Searcher:
    """The service's search over its live index, with its retrieval parts and access rules."""

    def __init__(
        self,
        settings: Settings,
        index: LiveIndex,
        embedder: Callable[[], Embedder],
        *,
        reranker: Reranker | None,
        glossary: Glossary | None,
        retrieval: RetrievalConfig,
        access: Access,
        metrics: Metrics,
    ) -> None:
        self.settings = settings
        self.index = index
        self._embedder = embedder
        self.reranker = reranker
        self.glossary = glossary
        self.retrieval = retrieval
        self.access = access
        self.metrics = metrics
        self._domains: dict[str, np.ndarray] | None = None  # each domain's vector, made on first use
        # each collection's vector (pipeline.retrieval.routing), for one index version
        self._collections: tuple[str, dict[str, np.ndarray]] | None = None
        self.pool = WorkPool(
            settings.serving.max_concurrent_searches, settings.serving.search_queue, "search"
        )

    def passages_of(self, result: SearchResult, snapshot: IndexSnapshot) -> Retrieved:
        """A search's context (or its hits, whole) as passages labelled with their document's period."""
        passages = result.context.passages() if result.context is not None else whole_passages(result.hits)
        periods = {r.doc_id: r.period or r.version for r in snapshot.files}
        details: dict[str, Any] = {
            "scope": result.scope.trace(),
            "stages": [_stage(e) for e in result.trace],
            "absent": list(result.absent),
            "rarity": dict(result.rarity),
        }
        if result.context is not None:
            selected = next((e for e in result.context.trace if e.get("step") == Step.SELECT_CONTEXT), {})
            details.update(strategy=selected.get("strategy"), context_tokens=result.context.tokens)
        return Retrieved(
            [replace(p, period=periods.get(p.chunk.doc_id, "")) for p in passages],
            details,
            result.documents_name,
        )

    async def search(
        self,
        query: str,
        *,
        k: int | None = None,
        mode: str = "hybrid",
        collections: list[str] | None = None,
        domain: str | None = None,
        variants: list[str] | None = None,
        context: ContextConfig | None = None,
        pinned: IndexSnapshot | None = None,
        scoped: bool = True,
        scope: DocumentScope | None = None,
        caller: Caller = LOCAL_CALLER,
        admitted: bool = False,
    ) -> SearchResult:
        """Rank passages for ``query`` (and its ``variants``); all hits come from one index version.

        ``domain`` picks the per-collection boosts configured for that question domain. With
        ``scoped`` (the default), a query that names documents ("Intel", "Q1 2023", "the
        latest release") searches only those (:mod:`pipeline.retrieval.documents`); the resolved scope is
        the first trace entry. With ``context``, the top ``context.candidates`` hits are also
        selected and ordered into the LLM's context under its token budget (the ``evidence``
        strategy deepens into the needed documents first). ``pinned`` searches that snapshot
        instead of the live one (one question's searches all see the same version). ``scope``
        replaces the scope the query would resolve to, when the query names no document.

        A remote caller gets at most ``MAX_SEARCH_K`` passages; the CLI and the evaluations,
        running as the local caller, may ask for more.

        Searches run in their own pool of ``serving.max_concurrent_searches`` threads; beyond
        ``serving.search_queue`` waiting searches a new one is refused (:class:`OverloadedError`),
        unless ``admitted`` (the searches of a question already admitted to the agent).
        """
        if not admitted:
            require_scope(caller, "search")
        if mode not in SEARCH_MODES:  # checked before it becomes a metric label
            shown = mode if len(mode) <= 40 else mode[:40] + "…"
            raise InvalidRequestError(
                f"unknown search mode {shown!r}; choose one of {', '.join(SEARCH_MODES)}"
            )
        if caller is not LOCAL_CALLER and k is not None and not 1 <= k <= MAX_SEARCH_K:
            raise InvalidRequestError(f"k must be between 1 and {MAX_SEARCH_K}")
        self.metrics.searches.labels(mode).inc()
        collections = self.access.allowed_collections(collections, caller)
        request = SearchRequest(
            queries=(query, *(variants or [])),
            mode=mode,  # type: ignore[arg-type]
            collections=tuple(collections) if collections is not None else None,
            boosts=self._boosts(domain),
            k=max(k or 0, self.settings.context.candidates) if context else k,
        )

        def run() -> SearchResult:
            snapshot = pinned or self.index.current()
            started = time.perf_counter()
            resolved = DocumentScope()
            if scoped and mode != "sparse":
                resolved = resolve_scope(query, snapshot.documents(request.collections))
            chosen = scope if scope is not None and resolved.documents is None else resolved
            routed = self._routed(snapshot, request, query) if mode != "sparse" else request
            scope_step = {"step": Step.SCOPE, "ms": round((time.perf_counter() - started) * 1000, 3)}
            if routed.boosts != request.boosts:
                scope_step["route"] = dict(routed.boosts or {})
            result = retrieve(
                snapshot,
                self._embedder(),
                replace(routed, documents=chosen.documents),
                self.retrieval,
                reranker=self.reranker,
                glossary=self.glossary,
            )
            absent = absent_names(query, lambda name: snapshot.knows(analyze(name), request.collections))
            # How rare each searched word is where it was searched: the answer code weighs the
            # words a quote shares with the question by it (pipeline.answering.quotes).
            rarity = snapshot.term_rarity(analyze(" ".join(request.queries)), request.collections)
            found = SearchResult(
                query,
                mode,
                snapshot.version_id,
                result.hits,
                [],
                None,
                chosen,
                request.queries,
                tuple(absent),
                rarity,
                lambda word: snapshot.knows(analyze(word), request.collections),
            )
            assembled = self._assemble(snapshot, found, context) if context else None
            trace = [scope_step | chosen.trace(), *result.trace, *(assembled.trace if assembled else [])]
            hits = result.hits[:k] if k else result.hits
            return replace(found, hits=hits, trace=trace, context=assembled)

        # Query encoding, BM25 scoring and reranking are CPU-bound: keep them off the event loop.
        return await self.pool.run(run, admitted=admitted)

    async def assemble_context(
        self, result: SearchResult, context: ContextConfig, pinned: IndexSnapshot | None = None
    ) -> Context:
        """Select and order ``result``'s hits into an LLM context, without searching again (from
        the ``pinned`` index version the search read, when given)."""

        def run() -> Context:
            return self._assemble(pinned or self.index.current(), result, context)

        return await asyncio.to_thread(run)

    def _assemble(self, snapshot: IndexSnapshot, result: SearchResult, context: ContextConfig) -> Context:
        queries = result.queries or (result.query,)
        evidence = None
        if context.selection in UNIT_SELECTIONS:
            evidence = find_evidence(
                snapshot,
                self._embedder().embed_query,
                queries,
                result.hits,
                result.scope,
                self.settings.evidence,
            )
        reranker = self.reranker
        return build_context(
            result.hits,
            context,
            tokenizer=self._embedder().tokenizer,
            chunk_vector=snapshot.embedding,
            query_vector=self._embedder().embed_query(queries[0]),
            stored_vectors=lambda pieces: snapshot.stored_unit_vectors([(p.chunk, p.text) for p in pieces]),
            # The cross-encoder scores (question, sentence) pairs for ``context.top_sentences``.
            sentence_scorer=(lambda texts: reranker.score(queries[0], texts)) if reranker else None,
            evidence=evidence,
        )

    async def classify(self, question: str) -> DomainChoice:
        """The configured domain nearest to ``question`` by embedding (no LLM call); the
        question's vector is the one its search then reuses."""

        def run() -> DomainChoice:
            embedder = self._embedder()
            return nearest_domain(embedder.embed_query(question), self._domain_vectors(embedder))

        return await self.pool.run(run, admitted=True)

    def _domain_vectors(self, embedder: Embedder) -> dict[str, np.ndarray]:
        if self._domains is None:
            names = list(self.settings.domains)
            texts = [domain_text(name, self.settings.domains[name].description) for name in names]
            vectors = embedder.embed(texts) if texts else []
            self._domains = dict(zip(names, vectors))
        return self._domains

    def _routed(self, snapshot: IndexSnapshot, request: SearchRequest, query: str) -> SearchRequest:
        """``request`` with each searched collection's weight multiplied by its routing weight for
        ``query`` (:mod:`pipeline.retrieval.routing`); unchanged with one collection or routing off."""
        names = list(request.collections) if request.collections is not None else list(snapshot.collections)
        temperature = self.retrieval.routing_temperature
        if len(names) < 2 or temperature <= 0:
            return request
        vectors = self._collection_vectors(snapshot)
        weights = collection_weights(
            self._embedder().embed_query(query),
            {n: vectors[n] for n in names},
            temperature,
            naming=_naming(snapshot, names, query),
        )
        boosts = {name: (request.boosts or {}).get(name, 1.0) * weight for name, weight in weights.items()}
        return replace(request, boosts=boosts)

    def _collection_vectors(self, snapshot: IndexSnapshot) -> dict[str, np.ndarray]:
        """Each collection's vector: its configured description's, else its passages' mean direction
        (kept for the index version)."""
        cached = self._collections
        if cached is not None and cached[0] == snapshot.version_id:
            return cached[1]
        vectors = {}
        for name, collection in snapshot.collections.items():
            described = self.settings.collections.get(name)
            if described is not None and described.description:
                vectors[name] = self._embedder().embed([domain_text(name, described.description)])[0]
            else:
                vectors[name] = mean_direction(collection.embeddings)
        self._collections = (snapshot.version_id, vectors)
        return vectors

    def _boosts(self, domain: str | None) -> dict[str, float] | None:
        if domain is None:
            return None
        if domain not in self.settings.domains:
            known = ", ".join(sorted(self.settings.domains)) or "none configured"
            raise InvalidRequestError(f"unknown domain {domain!r} (known: {known})")
        return self.settings.domains[domain].collections or None

    async def passage(self, passage_id: str, caller: Caller = LOCAL_CALLER) -> Chunk:
        """A passage of the live version (:class:`NotFoundError` if ``caller`` cannot see it)."""
        require_scope(caller, "search")
        snapshot = await asyncio.to_thread(self.index.current)
        chunk = snapshot.chunk(passage_id)
        if caller.collections is not None and chunk.collection not in caller.collections:
            raise NotFoundError(f"no passage with id {passage_id!r} in index version {snapshot.version_id}")
        return chunk

    async def document(
        self, doc_id: str, page: int | None = None, caller: Caller = LOCAL_CALLER
    ) -> tuple[str, FileRecord, list[Chunk]]:
        """The live version id, a document's record and its passages in order (only ``page``'s if given)."""
        require_scope(caller, "search")
        snapshot = await asyncio.to_thread(self.index.current)
        record, chunks = snapshot.document(doc_id)
        if caller.collections is not None and record.collection not in caller.collections:
            raise NotFoundError(f"no document with id {doc_id!r} in index version {snapshot.version_id}")
        if page is not None:
            if not 1 <= page <= max(record.pages, 1):
                raise InvalidRequestError(f"page {page} is outside {record.title!r} (pages 1–{record.pages})")
            chunks = [c for c in chunks if c.pages[0] <= page <= c.pages[1] or c.pages == (0, 0)]
        return snapshot.version_id, record, chunks

    async def list_collections(self, caller: Caller = LOCAL_CALLER) -> tuple[str, list[dict[str, Any]]]:
        """The live version id and, per collection ``caller`` may read, its name and counts."""
        require_scope(caller, "search")
        snapshot = await asyncio.to_thread(self.index.current)
        documents: dict[str, int] = {}
        for record in snapshot.files:
            documents[record.collection] = documents.get(record.collection, 0) + 1
        described = self.settings.collections
        return snapshot.version_id, [
            {
                "name": name,
                "description": described[name].description if name in described else "",
                "documents": documents.get(name, 0),
                "chunks": len(collection.chunks),
            }
            for name, collection in sorted(snapshot.collections.items())
            if caller.collections is None or name in caller.collections
        ]


_LONG_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _naming(snapshot: IndexSnapshot, collections: list[str], query: str) -> list[str]:
    """The ``collections`` whose vocabulary has one of ``query``'s technical names (its
    CamelCase words and snake_case identifiers, :mod:`pipeline.retrieval.absent`, and its long
    options, ``--bindir``), when some have and some have not; else none: the names tell them
    apart no better than the question's vector. Names anywhere in it count, the scene's too: a
    name one collection alone has says which one the question is about."""
    names = [*named_terms(query, asking_only=False), *_LONG_OPTION.findall(query)]
    terms = [analyze(name) for name in names]
    knowing = [c for c in collections if any(snapshot.knows(t, [c]) for t in terms if t)]
    return knowing if 0 < len(knowing) < len(collections) else []


def _stage(entry: dict[str, Any]) -> dict[str, Any]:
    """A search stage as the agent's trace shows it: its name, time and short details (the
    lists of candidates are left to ``docfinder search --trace``)."""
    return {
        key: value
        for key, value in entry.items()
        if value is None
        or isinstance(value, (bool, int, float))
        or (isinstance(value, str) and len(value) <= 120)
    }
