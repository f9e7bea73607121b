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
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from index_build.embedding import LocalEmbedder, transformer_folder
from index_build.sources import file_sha256
from pipeline.errors import ConfigurationError

log = logging.getLogger(__name__)

# Bump when the export or quantisation recipe changes: old files are not reused. Indexes built
# with an earlier export stay servable, as its vectors agree to int8 noise (cosine > 0.99).
EXPORT_VERSION = 3
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "config.json")
PROVIDERS = ["CPUExecutionProvider"]
BATCH_TOKENS = 1024  # tokens a batch holds, padding included


class OnnxEmbedder(LocalEmbedder):
    """An :class:`~pipeline.protocols.Embedder` running the exported model on ONNX Runtime.

    ``quantized`` picks the int8 export (weights int8 per channel, activations quantised on
    the fly; the few input channels of a feed-forward down-projection that carry large
    outliers stay float, see :func:`split_outlier_channels`). Activations are quantised per
    batch, so with int8 a text's vector depends a little on the texts embedded with it
    (cosine 0.98-0.999 on a sample). Batches are formed from texts of similar length, so
    short texts are not padded to the longest, and hold about ``batch_tokens`` tokens (at
    most ``batch_size`` texts): on two cores, 3,000 SEC texts embedded 7-10 % faster in
    batches of 1,024 tokens than in batches of 8 texts (4 chunks of 256 tokens, 50 sentences
    of 20): a small working set stays in cache, but a short text's batch must not be tiny.
    """

    def __init__(
        self,
        model_dir: Path,
        cache_dir: Path,
        *,
        quantized: bool = True,
        batch_tokens: int = BATCH_TOKENS,
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        super().__init__(model_dir, batch_size)
        self.batch_tokens = batch_tokens
        self.cache_dir = cache_dir
        self.quantized = quantized
        self.backend = "onnx-int8" if quantized else "onnx"
        self.threads = threads or os.cpu_count() or 1
        if self.pooling not in ("mean", "cls"):
            raise ConfigurationError(
                f"{model_dir} pools its token states in a way the ONNX embedder does not implement "
                "(only mean and CLS pooling): set DOCFINDER_EMBEDDER__BACKEND=torch"
            )

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
        for i, states, _ in self._token_states(texts):
            vectors[i] = self._pool_passage(states)
        return vectors

    def _token_states(self, texts: Sequence[str]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        if not texts:
            return
        session = self._session
        encodings = self._encoder.encode_batch(list(texts))
        lengths = np.array([sum(e.attention_mask) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        for batch in _token_batches(lengths[order], self.batch_tokens, self.batch_size):
            batch = order[batch]
            feeds = model_inputs([encodings[i] for i in batch], int(lengths[batch].max()))
            hidden = session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})[0]
            for row, i in enumerate(batch):
                yield (
                    int(i),
                    hidden[row, : lengths[i]],
                    np.array(encodings[i].offsets[: lengths[i]], dtype=np.int64),
                )


def model_inputs(encodings: Sequence[Any], width: int) -> dict[str, np.ndarray]:
    """The transformer's inputs for tokenizer ``encodings`` padded alike, cut to ``width`` tokens
    (their padding beyond the longest in a batch)."""
    return {
        "input_ids": np.array([e.ids[:width] for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask[:width] for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids[:width] for e in encodings], dtype=np.int64),
    }


def _token_batches(ascending: np.ndarray, tokens: int, most: int) -> Iterator[slice]:
    """Consecutive slices of ascending lengths, each as long as fits ``tokens`` padded to its
    longest (at least one text, at most ``most``)."""
    start = 0
    while start < len(ascending):
        stop = start + 1
        while stop < len(ascending) and stop - start < most:
            if (stop - start + 1) * ascending[stop] > tokens:
                break
            stop += 1
        yield slice(start, stop)
        start = stop


def export_onnx(model_dir: Path, target: Path, *, quantized: bool) -> None:
    """Export the sentence-transformers folder's transformer to ``target`` (int8 if asked), with
    transformers alone.

    Attention is exported in its plain ("eager") form: the default scaled-dot-product form
    traces into ``IsNaN``/``Where`` masking over every attention matrix, which took 16 % of
    ONNX Runtime's time on SEC texts for the same vectors. Written to a temporary file in the
    same folder and renamed, so a process that reads the cache never sees half a file and two
    processes exporting at once both end with a valid one.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    target.parent.mkdir(parents=True, exist_ok=True)
    log.info("exporting the embedder %s to ONNX (%s), once", model_dir, target.name)
    folder = str(transformer_folder(model_dir))
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    transformer = AutoModel.from_pretrained(folder, local_files_only=True, dtype=torch.float32).eval()
    transformer.set_attn_implementation("eager")
    sample = tokenizer(["an example sentence", "a second, longer example sentence"], padding=True)
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
                for encoded in (tokenizer(text) for text in CALIBRATION_TEXTS)
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
# An input channel of a down-projection that reaches this magnitude on the calibration texts
# takes a float path of its own. One int8 scale serves a whole batch, and MiniLM's first four
# down-projections each have one or two channels that reach 14-25 where all others stay under
# 8 (most near 2): quantised with them, the rest would keep a handful of steps. Measured on
# 300 SEC texts against PyTorch: the first three down-projections left float whole, cosine
# mean 0.9960 / min 0.9890; only the outlier channels float, 0.9959 / 0.9923 and 15-18 %
# faster; all in int8, 0.993 / 0.987.
OUTLIER_PEAK = 8.0


def _quantize(fp32: Path, scratch: Path, calibration: list[dict[str, np.ndarray]]) -> Path:
    """Dynamic int8 quantisation, per output channel, with the outlier input channels of the
    feed-forward down-projections (:data:`OUTLIER_PEAK` on the calibration texts) in float."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared, split, int8 = scratch / "prepared.onnx", scratch / "split.onnx", scratch / "int8.onnx"
    quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)
    model = onnx.load(str(prepared))
    kept_float = split_outlier_channels(model, calibration)
    onnx.save(model, str(split))
    quantize_dynamic(
        str(split), str(int8), weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=kept_float
    )
    return int8


def split_outlier_channels(model, calibration: list[dict[str, np.ndarray]]) -> list[str]:
    """Rewrite each feed-forward down-projection ``x @ W`` whose input has outlier channels
    into ``(x * mask) @ W + x[..., outliers] @ W[outliers]`` (the same sum, in place in
    ``model``), so the first product quantises well; the names of the small outlier products,
    which stay float, are returned."""
    from onnx import helper, numpy_helper

    weights = {w.name: w for w in model.graph.initializer}
    # A weight that narrows (e.g. 1536 -> 384) is a feed-forward block's down-projection.
    narrowing = [
        node
        for node in model.graph.node
        if node.op_type == "MatMul"
        and node.input[1] in weights
        and len(dims := weights[node.input[1]].dims) == 2
        and dims[0] > dims[1]
    ]
    peaks = _channel_peaks(model, [node.input[0] for node in narrowing], calibration)
    outliers = {
        node.name: np.flatnonzero(peak >= OUTLIER_PEAK) for node, peak in zip(narrowing, peaks, strict=True)
    }
    nodes, kept_float = [], []
    for node in model.graph.node:
        channels = outliers.get(node.name, ())
        if not len(channels):
            nodes.append(node)
            continue
        (x, weight_name), name = node.input, node.name
        weight = numpy_helper.to_array(weights[weight_name])
        mask = np.ones(weight.shape[0], np.float32)
        mask[channels] = 0.0
        model.graph.initializer.extend(
            [
                numpy_helper.from_array(mask, f"{name}/mask"),
                numpy_helper.from_array(channels.astype(np.int64), f"{name}/outliers"),
                numpy_helper.from_array(weight[channels].astype(np.float32), f"{name}/outlier_weight"),
            ]
        )
        op = helper.make_node
        nodes += [
            op("Mul", [x, f"{name}/mask"], [f"{name}/inliers"], name=f"{name}/mask"),
            op("MatMul", [f"{name}/inliers", weight_name], [f"{name}/y"], name=name),
            op("Gather", [x, f"{name}/outliers"], [f"{name}/x_out"], axis=-1, name=f"{name}/gather"),
            op(
                "MatMul",
                [f"{name}/x_out", f"{name}/outlier_weight"],
                [f"{name}/y_out"],
                name=f"{name}/outliers",
            ),
            op("Add", [f"{name}/y", f"{name}/y_out"], list(node.output), name=f"{name}/sum"),
        ]
        kept_float.append(f"{name}/outliers")
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    log.info(
        "int8 export: %d outlier channels of %d down-projections stay float",
        sum(len(c) for c in outliers.values()),
        len(narrowing),
    )
    return kept_float


def _channel_peaks(model, tensors: list[str], calibration: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """The largest magnitude each channel (last axis) of each named intermediate tensor takes
    over the calibration inputs."""
    import onnx
    import onnxruntime

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(
        onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in tensors
    )
    session = onnxruntime.InferenceSession(probe.SerializeToString(), providers=PROVIDERS)
    accepted = {i.name for i in session.get_inputs()}
    runs = [session.run(tensors, {k: v for k, v in feeds.items() if k in accepted}) for feeds in calibration]
    return [
        np.max([np.abs(run[i]).reshape(-1, run[i].shape[-1]).max(axis=0) for run in runs], axis=0)
        for i in range(len(tensors))
    ]


def _weights_fingerprint(model_dir: Path) -> str:
    """Short checksum of the weights and config, plus the export recipe's version."""
    parts = [f"export-{EXPORT_VERSION}"]
    parts += [file_sha256(model_dir / name) for name in WEIGHT_FILES if (model_dir / name).is_file()]
    return hashlib.sha256(" ".join(parts).encode()).hexdigest()[:12]
