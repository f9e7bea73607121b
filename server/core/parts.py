"""The parts a service is made of, composed from the settings in one function."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pipeline.errors import ConfigurationError
from pipeline.protocols import Embedder
from pipeline.retrieval.search import Reranker
from server.core.access import Access
from server.core.ask import Asker
from server.core.audit import Auditor
from server.core.conversations import ConversationDesk
from server.core.feedback import FeedbackDesk
from server.core.live_index import LiveIndex
from server.core.search import Searcher
from server.models.factories import make_embedder, make_glossary, make_reranker
from server.models.language_model import LanguageModel
from server.runtime.metrics import Metrics
from server.runtime.supervised_server import SupervisedServer
from server.settings import Settings
from server.stores.opening import Stores


@dataclass(frozen=True, slots=True)
class Parts:
    """One service's parts; each has one job (see its module)."""

    settings: Settings
    embedder: EmbedderSlot
    index: LiveIndex
    stores: Stores
    llm: LanguageModel
    metrics: Metrics
    access: Access
    searcher: Searcher
    asker: Asker
    feedback: FeedbackDesk
    auditor: Auditor
    conversations: ConversationDesk


class EmbedderSlot:
    """The embedder, given or built from the settings on first use (loading it takes seconds)."""

    def __init__(self, settings: Settings, embedder: Embedder | None) -> None:
        self._settings = settings
        self._embedder = embedder
        self._lock = threading.Lock()

    def __call__(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = make_embedder(self._settings)
            return self._embedder


def compose(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    lm: Any = None,
    llm_server: SupervisedServer | None = None,
    llm_history: bool = False,
) -> Parts:
    """Build every part the settings name; ``embedder``, ``reranker``, ``lm`` and ``llm_server``
    replace the configured ones (tests, benchmarks that share one model). Nothing heavy loads
    here: the embedder, the index, the stores and the LLM open when the service is entered."""
    embedders = EmbedderSlot(settings, embedder)
    reranker = reranker if reranker is not None else make_reranker(settings)
    if settings.context.top_sentences is not None and reranker is None:
        raise ConfigurationError(
            "context.top_sentences keeps the sentences a cross-encoder scores best: set "
            "retrieval.reranker_path (or leave context.top_sentences unset)"
        )
    index = LiveIndex(settings.index.dir, embedders, memory_map=settings.index.memory_map)
    stores = Stores(settings)
    llm = LanguageModel(settings, lm, llm_server)
    metrics = Metrics()
    access = Access(settings, index)
    searcher = Searcher(
        settings,
        index,
        embedders,
        reranker=reranker,
        glossary=make_glossary(settings),
        retrieval=settings.retrieval.resolved(reranking=reranker is not None),
        access=access,
        metrics=metrics,
    )
    asker = Asker(settings, index, searcher, llm, stores, access, metrics, llm_history=llm_history)
    feedback = FeedbackDesk(stores, metrics)
    auditor = Auditor(settings, index, stores, access, embedders, llm)
    return Parts(
        settings,
        embedders,
        index,
        stores,
        llm,
        metrics,
        access,
        searcher,
        asker,
        feedback,
        auditor,
        ConversationDesk(stores),
    )
