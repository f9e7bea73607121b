"""The embedder on ONNX Runtime: the same model, exported once from its local folder.

PyTorch spends most of a short query's time in framework overhead, and a 2-core machine
embeds passages at ingest slowly. The model folder is exported to ONNX on first use (no
hub: the weights are read from the folder), optionally quantised to int8, and kept in a
cache folder next to the index under a name that carries the weights' checksum, so a
changed model is exported again. Pooling and normalisation follow the folder's
sentence-transformers configuration.

optimum's exporter would do the same, but the released optimum-onnx pins transformers
below 5, which docling and sentence-transformers here need; ``torch.onnx.export`` and
onnxruntime's dynamic quantisation are what it wraps.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from index_build.embedding import LocalEmbedder
from index_build.sources import file_sha256
from pipeline.errors import ConfigurationError

log = logging.getLogger(__name__)

# Bump when the export or quantisation recipe changes: old files are not reused. Indexes built
# with an earlier export stay servable, as its vectors agree to int8 noise (cosine > 0.99).
EXPORT_VERSION = 2
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "config.json")
PROVIDERS = ["CPUExecutionProvider"]


class OnnxEmbedder(LocalEmbedder):
    """An :class:`~pipeline.protocols.Embedder` running the exported model on ONNX Runtime.

    ``quantized`` picks the int8 export (weights int8 per channel, activations quantised on
    the fly; a feed-forward down-projection whose input carries large outliers stays float,
    see :func:`export_onnx`). Activations are quantised per batch, so with int8 a text's
    vector depends a little on the texts embedded with it (cosine 0.98-0.999 on a sample).
    Batches are formed from texts of similar length, so short texts are not padded to the
    longest; on two cores, 16 texts a batch embedded SEC chunks and sentences 15-20 % faster
    than 32, and 8 another 3.5 % faster than 16 (the smaller working set stays in cache).
    """

    def __init__(
        self,
        model_dir: Path,
        cache_dir: Path,
        *,
        quantized: bool = True,
        batch_size: int = 8,
        threads: int | None = None,
    ) -> None:
        super().__init__(model_dir, batch_size)
        self.cache_dir = cache_dir
        self.quantized = quantized
        self.backend = "onnx-int8" if quantized else "onnx"
        self.threads = threads or os.cpu_count() or 1
        self.pooling = _pooling_mode(model_dir)

    @cached_property
    def dimensions(self) -> int:  # type: ignore[override]
        config = json.loads((self.model_dir / "config.json").read_text())
        return int(config["hidden_size"])

    @cached_property
    def model_path(self) -> Path:
        """The exported model file, exported now if the cache does not hold it yet."""
        with self._lock:
            fingerprint = _weights_fingerprint(self.model_dir)
            target = self.cache_dir / f"{self.name}-{fingerprint}-{self.backend}.onnx"
            if not target.is_file():
                export_onnx(self.model_dir, target, quantized=self.quantized)
            return target

    @cached_property
    def _session(self):
        import onnxruntime
        from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidGraph, InvalidProtobuf

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        # Ingest converts the next document on the other core while this embeds: threads that
        # spin while waiting for work only take its CPU (SEC ingest 117.8 -> 114.5 s).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = self.model_path
        try:
            return onnxruntime.InferenceSession(str(path), options, providers=PROVIDERS)
        except (Fail, InvalidGraph, InvalidProtobuf) as exc:
            # A damaged cache file (a disk filled up, a copy cut short): export it again, once.
            log.warning("the exported embedder %s cannot be loaded (%s): exporting it again", path, exc)
        with self._lock:
            export_onnx(self.model_dir, path, quantized=self.quantized)
        try:
            return onnxruntime.InferenceSession(str(path), options, providers=PROVIDERS)
        except (Fail, InvalidGraph, InvalidProtobuf) as exc:
            raise ConfigurationError(
                f"the embedder exported from {self.model_dir} cannot be loaded: {exc}"
            ) from exc

    @cached_property
    def _input_names(self) -> set[str]:
        return {i.name for i in self._session.get_inputs()}

    @cached_property
    def _encoder(self):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(self.max_tokens)
        tokenizer.enable_padding()
        return tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return vectors
        session = self._session
        encodings = self._encoder.encode_batch(list(texts))
        lengths = np.array([sum(e.attention_mask) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = int(lengths[batch].max())
            rows = [encodings[i] for i in batch]
            feeds = {
                "input_ids": np.array([e.ids[:width] for e in rows], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask[:width] for e in rows], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids[:width] for e in rows], dtype=np.int64),
            }
            hidden = session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})[0]
            vectors[batch] = _pool(hidden, feeds["attention_mask"], self.pooling)
        return vectors


def export_onnx(model_dir: Path, target: Path, *, quantized: bool) -> None:
    """Export the sentence-transformers folder's transformer to ``target`` (int8 if asked).

    Attention is exported in its plain ("eager") form: the default scaled-dot-product form
    traces into ``IsNaN``/``Where`` masking over every attention matrix, which took 16 % of
    ONNX Runtime's time on SEC texts for the same vectors. Written to a temporary file in the
    same folder and renamed, so a process that reads the cache never sees half a file and two
    processes exporting at once both end with a valid one.
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    target.parent.mkdir(parents=True, exist_ok=True)
    log.info("exporting the embedder %s to ONNX (%s), once", model_dir, target.name)
    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    transformer = model[0].auto_model.eval()
    transformer.set_attn_implementation("eager")
    sample = model.tokenizer(["an example sentence", "a second, longer example sentence"], padding=True)
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]
    inputs = tuple(torch.tensor(sample[n]) for n in names)
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as scratch:
        fp32 = Path(scratch) / "model.onnx"
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
            torch.onnx.export(
                _hidden_states_module(transformer, names),
                inputs,
                str(fp32),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        if quantized:
            calibration = [
                {n: np.array([encoded[n]], dtype=np.int64) for n in names}
                for encoded in (model.tokenizer(text) for text in CALIBRATION_TEXTS)
            ]
            result = _quantize(fp32, Path(scratch), calibration)
        else:
            result = fp32
        os.replace(result, target)


def _hidden_states_module(model, names: list[str]):
    """The model as a module returning only its last hidden states, its inputs passed by name
    (the exporter traces positional arguments; transformers' forward signatures vary)."""
    import torch

    class HiddenStates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors):
            return self.model(**dict(zip(names, tensors, strict=True))).last_hidden_state

    return HiddenStates()


# Texts of the kinds docfinder embeds, to measure the activations each layer sees.
CALIBRATION_TEXTS = (
    "Proposals are due on the first Monday of October.",
    "Net revenue for the three months ended July 1, 2023 was $12,949 million, down 15 %.",
    "How do I reset my password?",
    "The telescope's adaptive optics correct for atmospheric turbulence at 1 kHz.",
    "Total net sales  81,797  82,959  293,787  304,182",
    "Observing time is allocated by the programme committee twice a year.",
    "Claims that vitamin D supplementation reduces fracture risk in elderly adults were not supported.",
    "To add documents to a collection, run the ingest command with the folder and the collection name.",
    "Cash and cash equivalents at end of period",
    "The receiver cartridges are cooled to 4 K by a closed-cycle cryostat.",
)
# A down-projection whose input reaches this magnitude stays float. One int8 scale serves a
# whole batch, so a few large activations (MiniLM's first layers reach 17-25 where most stay
# near 1) would leave the rest a handful of steps; its later layers (under 14) quantise well.
# Measured on 300 SEC texts against PyTorch: all six float, cosine mean 0.9963 / min 0.9933;
# the three with peaks under 16 in int8, 0.9959 / 0.9912 and 11 % faster; all six in int8,
# 0.993 / 0.987.
OUTLIER_PEAK = 16.0


def _quantize(fp32: Path, scratch: Path, calibration: list[dict[str, np.ndarray]]) -> Path:
    """Dynamic int8 quantisation, per output channel, leaving float the feed-forward
    down-projections whose inputs reach :data:`OUTLIER_PEAK` on the calibration texts."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared, int8 = scratch / "prepared.onnx", scratch / "int8.onnx"
    quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)
    model = onnx.load(str(prepared))
    weights = {w.name: tuple(w.dims) for w in model.graph.initializer}
    # A weight that narrows (e.g. 1536 -> 384) is a feed-forward block's down-projection.
    narrowing = [
        node
        for node in model.graph.node
        if node.op_type == "MatMul"
        and len(shape := weights.get(node.input[1], ())) == 2
        and shape[0] > shape[1]
    ]
    peaks = _input_peaks(model, [node.input[0] for node in narrowing], calibration)
    kept_float = [node.name for node, peak in zip(narrowing, peaks, strict=True) if peak >= OUTLIER_PEAK]
    log.info("int8 export: %d of %d down-projections stay float", len(kept_float), len(narrowing))
    quantize_dynamic(
        str(prepared), str(int8), weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=kept_float
    )
    return int8


def _input_peaks(model, tensors: list[str], calibration: list[dict[str, np.ndarray]]) -> list[float]:
    """The largest magnitude each named intermediate tensor takes over the calibration inputs."""
    import onnx
    import onnxruntime

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(
        onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in tensors
    )
    session = onnxruntime.InferenceSession(probe.SerializeToString(), providers=PROVIDERS)
    accepted = {i.name for i in session.get_inputs()}
    peaks = np.zeros(len(tensors))
    for feeds in calibration:
        outputs = session.run(tensors, {k: v for k, v in feeds.items() if k in accepted})
        peaks = np.maximum(peaks, [float(np.abs(values).max()) for values in outputs])
    return peaks.tolist()


def _pooling_mode(model_dir: Path) -> str:
    """``mean`` or ``cls``, from the folder's Pooling module (mean when the folder has none)."""
    modules_file = model_dir / "modules.json"
    modules = json.loads(modules_file.read_text()) if modules_file.is_file() else []
    pooling = [m for m in modules if m.get("type", "").endswith("Pooling")]
    if not pooling:
        return "mean"
    config = json.loads((model_dir / pooling[0]["path"] / "config.json").read_text())
    if config.get("pooling_mode_mean_tokens"):
        return "mean"
    if config.get("pooling_mode_cls_token"):
        return "cls"
    raise ConfigurationError(
        f"{model_dir} pools with {config}, which the ONNX embedder does not implement: "
        "set DOCFINDER_EMBEDDER_BACKEND=torch"
    )


def _pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """Pooled, L2-normalised sentence vectors from token states."""
    if mode == "cls":
        pooled = hidden[:, 0]
    else:
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return (pooled / norms).astype(np.float32)


def _weights_fingerprint(model_dir: Path) -> str:
    """Short checksum of the weights and config, plus the export recipe's version."""
    parts = [f"export-{EXPORT_VERSION}"]
    parts += [file_sha256(model_dir / name) for name in WEIGHT_FILES if (model_dir / name).is_file()]
    return hashlib.sha256(" ".join(parts).encode()).hexdigest()[:12]
