"""Who may see what: a caller's scopes and collections, the questions accepted, and what of a
source a remote caller sees (a published URL or the path below the ingested folder, never the
server's own file system)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pipeline.answers import AskResult, Caller
from pipeline.citations import citation_link
from pipeline.errors import ForbiddenError, InvalidRequestError, UnknownCollectionError
from pipeline.wording import without_invisible
from server.core.live_index import LiveIndex
from server.settings import Settings


def require_scope(caller: Caller, scope: str) -> None:
    """:class:`ForbiddenError` unless ``caller`` may take the action ``scope``."""
    if not caller.may(scope):
        given = ", ".join(sorted(caller.scopes or ())) or "none"
        raise ForbiddenError(f"this API key lacks the {scope!r} scope (it has: {given})")


class Access:
    """The service's access rules over its settings and the loaded index."""

    def __init__(self, settings: Settings, index: LiveIndex) -> None:
        self.settings = settings
        self.index = index

    def check_question(self, question: str) -> str:
        """The question without control or invisible format characters (NUL, zero-width, bidi
        overrides), stripped; :class:`InvalidRequestError` when nothing visible is left or it is
        over the length limit."""
        question = without_invisible(question).strip()
        if not question:
            raise InvalidRequestError("the question is empty")
        if len(question) > self.settings.serving.max_question_chars:
            limit = self.settings.serving.max_question_chars
            raise InvalidRequestError(
                f"the question has {len(question):,} characters; the limit is {limit:,}"
            )
        return question

    def allowed_collections(self, requested: list[str] | None, caller: Caller) -> list[str] | None:
        """The collections to search: ``requested`` (or all ``caller`` may read), never beyond them.

        An empty list asks for no particular collection, like an absent one: it means every
        collection the caller may read, never every collection of the index. For a caller limited
        to some collections the answer is never empty nor None: one the index lacks is reported
        here, naming only the collections open to it (the index's own error lists every collection
        it has), and none left is an error.
        """
        if not requested:
            requested = None
        if caller.collections is None:
            return requested
        refused = [c for c in requested or () if c not in caller.collections]
        if refused:
            raise ForbiddenError(f"collection {refused[0]!r} is not open to this caller")
        loaded = self.index.loaded  # loaded at start; an index swapped since keeps the same names, mostly
        present = set(loaded.collections) if loaded is not None else set(caller.collections)
        visible = [c for c in caller.collections if c in present]
        if requested is None:
            if not visible:
                raise UnknownCollectionError("none of the collections open to this caller is in the index")
            return visible
        missing = [c for c in requested if c not in present]
        if missing:
            raise UnknownCollectionError(
                f"unknown collection {missing[0]!r} (open to this caller: {', '.join(visible) or 'none'})"
            )
        return requested

    def public_source(self, source: str) -> str:
        """What a remote caller sees of a source: its URL (``source_url_prefixes``), else its path
        below the ingested folder, never the server's own file system path."""
        if self._published(source):
            return citation_link(source, (0, 0), self.settings.index.source_url_prefixes)
        snapshot = self.index.loaded
        relative = {r.path: r.relative for r in snapshot.files} if snapshot is not None else {}
        return relative.get(source) or Path(source).name

    def public_result(self, result: AskResult) -> AskResult:
        """``result`` as a remote caller sees it: sources through :meth:`public_source`, and links
        only to published URLs (a ``file://`` link would name the server's disk)."""
        agent = result.agent

        def public(item: Any) -> Any:
            link = item.link if self._published(item.source) else ""
            return replace(item, source=self.public_source(item.source), link=link)

        citations = [public(c) for c in agent.citations]
        evidence = [public(q) for q in agent.evidence]
        trace = [self.public_event(event) for event in agent.trace]
        return replace(result, agent=replace(agent, citations=citations, evidence=evidence, trace=trace))

    def public_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """A status event (a trace step) as a remote caller sees it: the quotes it shows name their
        sources by :meth:`public_source`, with links to published URLs only."""
        if "quotes" not in event:
            return event
        quotes = [
            {
                **quote,
                "source": self.public_source(quote["source"]),
                "link": quote.get("link", "") if self._published(quote["source"]) else "",
            }
            for quote in event["quotes"]
        ]
        return {**event, "quotes": quotes}

    def _published(self, source: str) -> bool:
        return any(source.startswith(local) for local in self.settings.index.source_url_prefixes)
