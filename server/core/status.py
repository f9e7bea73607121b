"""What a service reports about itself: liveness for ``/healthz`` and the live index version's
summary for ``docfinder index info``."""

from __future__ import annotations

import asyncio
from typing import Any

from programs.saved import ProgramInfo
from server.core.live_index import LiveIndex
from server.models.language_model import LanguageModel
from server.runtime.admission import WorkPool


async def health(
    index: LiveIndex, llm: LanguageModel, searches: WorkPool, program: ProgramInfo
) -> dict[str, Any]:
    """Liveness without touching any thread pool: the loaded version and the live one on disk,
    and whether the LLM answers (a server LLM not heard from lately is probed first)."""
    loaded = index.loaded
    state, reason = await llm.state()
    return {
        "status": "ok" if loaded is not None else "starting",
        "index_version": loaded.version_id if loaded is not None else None,
        "live_version": index.live_version(),
        "searches_waiting": searches.pending,
        "llm": state,
        "llm_reason": reason,
        "program": program.name,
    }


async def index_info(index: LiveIndex, program: ProgramInfo, documents: bool = False) -> dict[str, Any]:
    """The live version's manifest summary: version, models, counts (and each document's metadata)."""
    snapshot = await asyncio.to_thread(index.current)
    manifest = snapshot.manifest
    listing = {
        "document_list": [
            {
                "doc_id": r.doc_id,
                "collection": r.collection,
                "title": r.title,
                "organisation": r.organisation,
                "names": list(r.names),
                "period": r.period,
                "version": r.version,
                "pages": r.pages,
                "chunks": r.chunks,
                "evidence_units": r.units,
                "path": r.path,
            }
            for r in snapshot.files
        ]
    }
    return {
        "index_dir": str(index.index_dir),
        "version": snapshot.version_id,
        "created_at": manifest["created_at"],
        "format_version": manifest["format_version"],
        "embedder": manifest["embedder"],
        "chunking": manifest["chunking"],
        "bm25": manifest["bm25"],
        "program": program.summary(),
        **manifest["counts"],
        **(listing if documents else {}),
    }
