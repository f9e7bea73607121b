"""Find the input files of an ingest and assign each to a collection."""

from __future__ import annotations

import hashlib
import os
import re
import stat
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


@dataclass(frozen=True, slots=True)
class Discovery:
    """The files to ingest, and the links that were skipped with the reason."""

    sources: list[SourceFile]
    skipped: list[tuple[str, str]]


def discover(paths: list[Path], collection: str | None) -> Discovery:
    """All regular files under ``paths`` (recursively, hidden ones skipped), sorted.

    Each input belongs to ``collection`` when given, else to its folder's name (for a single
    file, its parent folder's name). Symbolic links are followed only to files inside the
    given inputs: a link (to a file or a folder) that leads outside them, and a link that
    leads nowhere, are skipped and reported, so a link in a shared folder cannot pull the
    server's own files into the index. A file reached twice (by its own name and by a link
    inside the inputs, or through two links) is ingested once, under its own name when it has
    one, and the other way to it is reported.
    """
    roots = [raw.expanduser().resolve() for raw in paths]
    for raw, root in zip(paths, roots):
        if not root.exists():
            raise ConfigurationError(f"input path {raw} does not exist")
    found: dict[Path, SourceFile] = {}  # by the file's real path: a linked file is one document
    skipped: list[tuple[str, str]] = []
    for root in roots:
        name = collection_name(collection or (root.name if root.is_dir() else root.parent.name))
        for path in [root] if root.is_file() else _walk(root, roots, skipped):
            if any(part.startswith(".") for part in path.relative_to(root.parent).parts):
                continue
            if not _utf8_name(path):
                skipped.append((printable_path(path), "file name is not valid UTF-8: rename the file"))
                continue
            source = SourceFile(path=path, root=root, collection=name)
            real = path.resolve()
            kept = found.setdefault(real, source)
            if kept is source or kept.path == path:
                continue
            if kept.path.is_symlink() and not path.is_symlink():
                found[real], source = source, kept  # the file's own name wins over a link to it
            twin = printable_path(found[real].path)
            skipped.append((printable_path(source.path), f"the same file as {twin}: ingested once"))
    return Discovery(sorted(found.values(), key=lambda s: str(s.path)), skipped)


def _utf8_name(path: Path) -> bool:
    """Whether the path's bytes are UTF-8 (else Python holds them as lone surrogates, which no
    index file, database or terminal can take)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable_path(path: Path) -> str:
    """The path as text any terminal or log can show: bytes that are not UTF-8 as ``\\xe9``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _walk(root: Path, roots: list[Path], skipped: list[tuple[str, str]]) -> list[Path]:
    """Regular files below ``root``, without following links out of ``roots`` (those are reported)."""
    files = []
    for folder, folders, names in os.walk(root):  # does not descend into linked folders
        for entry in [*(Path(folder) / n for n in names), *(Path(folder) / d for d in folders)]:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                reason = _link_problem(entry, roots)
                if reason:
                    skipped.append((printable_path(entry), reason))
                    continue
                if entry.is_file():
                    files.append(entry)
                elif not entry.is_dir():
                    skipped.append((printable_path(entry), _special_kind(entry)))
            elif entry.is_file():
                files.append(entry)
            elif not entry.is_dir():
                skipped.append((printable_path(entry), _special_kind(entry)))
    return sorted(files)


def _special_kind(path: Path) -> str:
    """Why a path that is neither a file nor a folder is not read: what it is (reading a pipe or
    a device would block the ingest, or read without end)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return "not a regular file: not read"
    for test, kind in (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return f"{kind}, not a regular file: not read"
    return "not a regular file: not read"


def _link_problem(link: Path, roots: list[Path]) -> str:
    """Why a symbolic link is not followed, or "" when it leads to a file inside the inputs."""
    try:
        target = link.resolve(strict=True)
    except (FileNotFoundError, RuntimeError):  # missing target, or a loop of links
        return "symbolic link to nothing (dangling): not followed"
    if not any(target == root or root in target.parents for root in roots):
        return "symbolic link to a file or folder outside the ingested folders: not followed"
    return ""  # a linked folder inside the inputs is walked where it really is


def file_sha256(path: Path) -> str:
    """Content hash of a file, to skip unchanged inputs on the next ingest."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
