"""The live index version a service reads, swapped for a newer one without a restart.

Each call to :meth:`LiveIndex.current` checks, with one ``readlink``, whether another version
went live and loads it; a version built by another embedder is refused (its dense search
would be noise).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from index_build.layout import live_version_id
from index_build.manifests import built_by, embedder_manifest
from index_build.snapshot import IndexSnapshot, open_live
from pipeline.errors import ConfigurationError
from pipeline.protocols import Embedder


class LiveIndex:
    """The snapshot of ``index_dir``'s live version, reloaded when another goes live."""

    def __init__(self, index_dir: Path, embedder: Callable[[], Embedder], memory_map: bool) -> None:
        self.index_dir = index_dir
        self._embedder = embedder
        self._memory_map = memory_map
        self._snapshot: IndexSnapshot | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> IndexSnapshot | None:
        """The snapshot loaded last, without looking at the disk (None before the first load)."""
        return self._snapshot

    def live_version(self) -> str | None:
        return live_version_id(self.index_dir)

    def current(self) -> IndexSnapshot:
        """The live snapshot, reloaded when another version has gone live since the last call."""
        live = live_version_id(self.index_dir)
        snapshot = self._snapshot
        if snapshot is None or snapshot.version_id != live:
            with self._lock:
                if self._snapshot is None or self._snapshot.version_id != live_version_id(self.index_dir):
                    fresh = open_live(self.index_dir, memory_map=self._memory_map)
                    check_embedder(fresh, self._embedder())
                    self._snapshot = fresh
                snapshot = self._snapshot
        return snapshot

    def close(self) -> None:
        self._snapshot = None


def check_embedder(snapshot: IndexSnapshot, embedder: Embedder) -> None:
    """Refuse an index whose vectors another embedder made: its dense search would be noise."""
    if not built_by(snapshot.manifest, embedder):
        raise ConfigurationError(
            f"index version {snapshot.version_id} was built with the embedder "
            f"{snapshot.manifest.get('embedder', {})}, but this server embeds queries with "
            f"{embedder_manifest(embedder)}: run `docfinder ingest` with this embedder to rebuild the "
            "index, or set DOCFINDER_EMBEDDER__PATH / DOCFINDER_EMBEDDER__BACKEND to what built it"
        )
