"""Find the input files of an ingest and assign each to a collection."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import ConfigurationError

_COLLECTION = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file to ingest, the root it was found under, and its collection."""

    path: Path
    root: Path
    collection: str

    @property
    def doc_id(self) -> str:
        """Stable across ingests: derived from the file's absolute path."""
        return hashlib.sha1(str(self.path).encode()).hexdigest()[:12]


def collection_name(raw: str) -> str:
    """Normalise a collection name (lower case, safe characters) or raise ConfigurationError."""
    name = re.sub(r"[^a-z0-9_.-]+", "-", raw.strip().lower()).strip("-.")
    if not _COLLECTION.match(name):
        raise ConfigurationError(f"invalid collection name {raw!r}: use letters, digits, '-', '_' or '.'")
    return name


def discover(paths: list[Path], collection: str | None) -> list[SourceFile]:
    """All regular files under ``paths`` (recursively, hidden ones skipped), sorted.

    Each input belongs to ``collection`` when given, else to its folder's name (for a single
    file, its parent folder's name).
    """
    found: dict[Path, SourceFile] = {}
    for raw in paths:
        root = raw.expanduser().resolve()
        if not root.exists():
            raise ConfigurationError(f"input path {raw} does not exist")
        name = collection_name(collection or (root.name if root.is_dir() else root.parent.name))
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if any(part.startswith(".") for part in path.relative_to(root.parent).parts):
                continue
            found.setdefault(path, SourceFile(path=path, root=root, collection=name))
    return sorted(found.values(), key=lambda s: str(s.path))


def file_sha256(path: Path) -> str:
    """Content hash of a file, to skip unchanged inputs on the next ingest."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
