"""The ONNX embedder: the packaged MiniLM exported locally, compared with PyTorch, cached, and
never allowed to serve an index another backend built."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from index_build.builder import ingest
from index_build.embedding import default_embedder_path
from index_build.manifests import built_by, embedder_manifest
from index_build.onnx_embedding import (
    CALIBRATION_TEXTS,
    OnnxEmbedder,
    _token_batches,
    model_inputs,
    split_outlier_channels,
)
from pipeline.errors import ConfigurationError
from server.models.factories import make_embedder
from server.service import open_service
from server.settings import load_settings

SAMPLE = [
    "Proposals are due on the first Monday of October.",
    "Net revenue for the three months ended July 1, 2023 was $12,949 million, down 15 %.",
    "x",
    "The telescope's adaptive optics correct for atmospheric turbulence at 1 kHz. " * 12,
    "How do I reset my password?",
    "Observing time is allocated by the programme committee twice a year.",
    "Les propositions doivent être soumises avant la date limite.",
    "Table: Segment | Q2 2023 | Q2 2022 — Client Computing Group | 6,780 | 7,661",
]


@pytest.fixture(scope="session")
def export_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("embedders")


@pytest.fixture(scope="session")
def int8_embedder(export_dir):
    return OnnxEmbedder(default_embedder_path(), export_dir, quantized=True)


@pytest.mark.parametrize("quantized, floor", [(False, 0.9999), (True, 0.97)])
def test_onnx_vectors_match_the_pytorch_model(torch_embedder, export_dir, quantized, floor):
    onnx = OnnxEmbedder(default_embedder_path(), export_dir, quantized=quantized)
    reference, vectors = torch_embedder.embed(SAMPLE), onnx.embed(SAMPLE)
    cosines = (reference * vectors).sum(axis=1)
    assert vectors.shape == reference.shape and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert cosines.mean() >= 0.99, cosines
    assert cosines.min() >= floor, cosines
    # One text alone and inside a batch of longer ones (padding) embed alike; int8 activations
    # are quantised per batch, so there a text's vector depends a little on its batch-mates.
    assert float(onnx.embed_query(SAMPLE[2]) @ vectors[2]) >= floor


def test_the_export_is_made_once_and_a_damaged_one_is_made_again(int8_embedder, export_dir):
    path = int8_embedder.model_path
    assert path.parent == export_dir and "onnx-int8" in path.name
    exported_at = path.stat().st_mtime_ns
    again = OnnxEmbedder(default_embedder_path(), export_dir, quantized=True)
    assert again.model_path == path and path.stat().st_mtime_ns == exported_at, "reused, not exported again"
    assert not list(export_dir.glob(".export-*")), "no scratch folder is left behind"

    path.write_bytes(b"half a file")
    damaged = OnnxEmbedder(default_embedder_path(), export_dir, quantized=True)
    assert damaged.embed(SAMPLE[:2]).shape == (2, 384)
    assert path.stat().st_size > 1_000_000


def test_the_backend_is_chosen_by_setting_and_the_export_kept_by_the_index(tmp_path, monkeypatch):
    monkeypatch.delenv("DOCFINDER_EMBEDDER__CACHE_DIR")  # the tests' shared export folder
    default = make_embedder(load_settings(index__dir=tmp_path / "index"))
    assert isinstance(default, OnnxEmbedder) and default.backend == "onnx-int8"
    assert default.cache_dir == tmp_path / "index" / ".embedders"
    floating = make_embedder(load_settings(embedder__backend="onnx"))
    assert isinstance(floating, OnnxEmbedder) and floating.backend == "onnx"
    assert make_embedder(load_settings(embedder__backend="torch")).backend == "torch"


def test_an_index_is_served_only_by_the_backend_that_built_it(
    tmp_path, torch_embedder, int8_embedder, sample_corpus
):
    ingest(tmp_path / "index", [sample_corpus], embedder=torch_embedder)
    settings = load_settings(index__dir=tmp_path / "index")

    async def start() -> None:
        async with open_service(settings, embedder=int8_embedder):
            pass

    with pytest.raises(ConfigurationError, match=r"onnx-int8.*DOCFINDER_EMBEDDER__BACKEND"):
        asyncio.run(start())


def test_indexes_from_before_backends_count_as_built_on_pytorch(torch_embedder, int8_embedder):
    recorded = {k: v for k, v in embedder_manifest(torch_embedder).items() if k != "backend"}
    assert built_by({"embedder": recorded}, torch_embedder)
    assert not built_by({"embedder": recorded}, int8_embedder)


def test_outlier_channels_take_a_float_path_of_the_same_sum(export_dir):
    """The float model rewritten by :func:`split_outlier_channels` computes the same states, and
    in the int8 export every down-projection is int8 apart from its few outlier channels."""
    import onnx
    import onnxruntime

    fp32 = onnx.load(str(OnnxEmbedder(default_embedder_path(), export_dir, quantized=False).model_path))
    split = onnx.ModelProto()
    split.CopyFrom(fp32)
    encoder = OnnxEmbedder(default_embedder_path(), export_dir)._encoder
    calibration = [model_inputs([e], len(e.ids)) for e in map(encoder.encode, CALIBRATION_TEXTS)]
    kept_float = split_outlier_channels(split, calibration)
    assert 1 <= len(kept_float) <= 6, "MiniLM's first layers have outlier channels"

    feeds = model_inputs([encoder.encode(SAMPLE[3])], 256)
    before, after = (
        onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, feeds
        )[0]
        for m in (fp32, split)
    )
    assert np.abs(before - after).max() < 1e-4

    int8 = onnx.load(str(OnnxEmbedder(default_embedder_path(), export_dir, quantized=True).model_path))
    float_down = [n.name for n in int8.graph.node if n.op_type == "MatMul" and "/output/dense/" in n.name]
    assert len(float_down) == len(kept_float), "only the outlier products stay float"
    assert all(name.endswith("/outliers") for name in float_down), float_down


def test_batches_hold_a_token_budget_padding_included():
    lengths = np.array([3, 3, 4, 5, 6, 30])
    batches = list(_token_batches(lengths, tokens=12, most=3))
    assert batches == [slice(0, 3), slice(3, 5), slice(5, 6)]
    # a text longer than the budget is a batch of its own; nothing is dropped or repeated
    assert [i for b in batches for i in range(len(lengths))[b]] == list(range(len(lengths)))


def test_a_span_is_pooled_from_its_passage_and_is_near_its_own_words(torch_embedder, int8_embedder):
    first = "The cryostat is refilled with liquid helium every Monday morning."
    second = "Staff parking permits are renewed at the front desk in January."
    passage = f"Operations manual\n{first} {second}"
    long = passage + " Filler words about nothing in particular." * 60  # past the 256-token window
    spans = [(passage.index(first), passage.index(first) + len(first))]
    spans.append((passage.index(second), passage.index(second) + len(second)))
    groups = [[(spans[0],), (spans[1],), (spans[0], spans[1])], [(spans[1],), ((len(long) - 10, len(long)),)]]
    alone = torch_embedder.embed([first, second])
    pooled_by = {}
    for embedder in (torch_embedder, int8_embedder):
        result = embedder.embed_spans([passage, long], groups)
        assert float(result.passages[0] @ embedder.embed([passage])[0]) >= 0.99
        assert [list(p) for p in result.pooled] == [[True, True, True], [True, False]]
        assert not result.spans[1][1].any(), "a span the window cut off has no vector"
        own = result.spans[0][:2] @ alone.T
        assert own[0, 0] > own[0, 1] and own[1, 1] > own[1, 0], own
        assert np.allclose(np.linalg.norm(result.spans[0], axis=1), 1.0, atol=1e-5)
        pooled_by[embedder.backend] = result.spans[0]
    agreement = (pooled_by["torch"] * pooled_by["onnx-int8"]).sum(axis=1)
    assert agreement.min() >= 0.98, agreement


def test_a_model_whose_sentence_vector_is_not_its_mean_token_state_pools_no_span(tmp_path, export_dir):
    source = default_embedder_path()
    folder = tmp_path / source.relative_to(source.parent.parent)  # the same name: its export is reused
    folder.mkdir(parents=True)
    for item in source.iterdir():
        (folder / item.name).symlink_to(item)
    modules = json.loads((source / "modules.json").read_text())
    (folder / "modules.json").unlink()
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    (folder / "modules.json").write_text(json.dumps([*modules, dense]))
    embedder = OnnxEmbedder(folder, export_dir, quantized=True)
    text = "The cryostat is refilled with liquid helium every Monday morning."
    result = embedder.embed_spans([text], [[((0, 12),)]])
    assert not result.pooled[0].any() and not result.spans[0].any()
    assert np.allclose(result.passages, embedder.embed([text]), atol=1e-6)


def test_a_max_pooled_model_is_refused_by_onnx_and_pools_no_span_on_pytorch(tmp_path, export_dir):
    from index_build.embedding import SentenceTransformerEmbedder

    source = default_embedder_path()
    folder = tmp_path / "max-pooled"
    (folder / "1_Pooling").mkdir(parents=True)
    for item in source.iterdir():
        if item.name != "1_Pooling":
            (folder / item.name).symlink_to(item)
    config = json.loads((source / "1_Pooling" / "config.json").read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigurationError, match="DOCFINDER_EMBEDDER__BACKEND=torch"):
        OnnxEmbedder(folder, export_dir, quantized=True)
    embedder = SentenceTransformerEmbedder(folder)
    text = "The cryostat is refilled with liquid helium every Monday morning."
    result = embedder.embed_spans([text], [[((0, 12),)]])
    assert not result.pooled[0].any() and not result.spans[0].any()
    assert np.allclose(result.passages, embedder.embed([text]), atol=1e-6)
