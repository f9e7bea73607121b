"""Where index versions live on disk, and how one becomes live atomically.

::

    INDEX_DIR/
      live -> versions/20261122T101500-3f2a        symlink, swapped with one rename
      ingest.lock                                  held (flock) by the one writer
      versions/
        20261122T101500-3f2a/                      a complete, immutable version
          manifest.json                            format, models, counts, checksums
          files.json                               one record per ingested source file
          collections/NAME/{chunks.jsonl, units.jsonl, rows.npz, embeddings.npy,
                            vectors.usearch, bm25/, ...}
        .building-20261122T103000-9c1d/            a version being written (never read)

A version is written under a ``.building-`` name, renamed into place, and only then is the
``live`` symlink replaced by ``os.replace``, which is atomic on POSIX. A ``kill -9`` at any
moment therefore leaves the previous version live; the next writer removes the debris.
Readers open (map or read) every file of a version at once, so pruning old versions never
breaks a reader.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pipeline.errors import IndexBusyError, IndexNotFoundError

LIVE = "live"
VERSIONS = "versions"
BUILDING_PREFIX = ".building-"
LOCK = "ingest.lock"


def new_version_id() -> str:
    """A sortable, unique version name: UTC time to the microsecond plus a random suffix."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S.%f}-{secrets.token_hex(2)}"


def live_version_dir(index_dir: Path) -> Path:
    """The directory of the live version, or :class:`IndexNotFoundError`."""
    link = index_dir / LIVE
    try:
        target = os.readlink(link)
    except FileNotFoundError as exc:
        raise IndexNotFoundError(f"no index at {index_dir}: run `docfinder ingest` first") from exc
    return (index_dir / target).resolve()


def live_version_id(index_dir: Path) -> str | None:
    """The live version's name (cheap: one readlink), or None when there is none yet."""
    try:
        return Path(os.readlink(index_dir / LIVE)).name
    except FileNotFoundError:
        return None


@contextmanager
def writer_lock(index_dir: Path) -> Iterator[None]:
    """Hold the index's single-writer lock; fail at once if another ingest holds it."""
    index_dir.mkdir(parents=True, exist_ok=True)
    with open(index_dir / LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise IndexBusyError(f"another ingest is writing {index_dir}; try again when it ends") from exc
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def building_dir(index_dir: Path, version_id: str) -> Path:
    """A fresh directory to write a version into, hidden from readers."""
    path = index_dir / VERSIONS / f"{BUILDING_PREFIX}{version_id}"
    path.mkdir(parents=True)
    return path


def remove_stale_builds(index_dir: Path) -> list[Path]:
    """Delete half-written versions left by a killed writer. Call only under the writer lock."""
    root = index_dir / VERSIONS
    stale = sorted(root.glob(f"{BUILDING_PREFIX}*")) if root.is_dir() else []
    for path in stale:
        shutil.rmtree(path, ignore_errors=False)
    return stale


def publish(index_dir: Path, build: Path, version_id: str) -> Path:
    """Rename a finished build into place and make it live with one atomic symlink swap."""
    final = index_dir / VERSIONS / version_id
    _fsync_tree(build)
    os.rename(build, final)
    tmp_link = index_dir / f".{LIVE}-{version_id}"
    os.symlink(Path(VERSIONS) / version_id, tmp_link)
    os.replace(tmp_link, index_dir / LIVE)
    _fsync_dir(index_dir)
    return final


def prune_versions(index_dir: Path, keep: int) -> list[str]:
    """Remove all but the newest ``keep`` versions, never the live one."""
    root = index_dir / VERSIONS
    live = live_version_id(index_dir)
    versions = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    removed = []
    for path in versions[: max(len(versions) - keep, 0)]:
        if path.name != live:
            shutil.rmtree(path)
            removed.append(path.name)
    return removed


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(dirpath))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
