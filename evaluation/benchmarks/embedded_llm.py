"""How fast the embedded model reads a prompt and writes tokens on this machine, with the
instruction sets the installed llama.cpp was built for.

Runs llama.cpp in a child process (``python -m evaluation.benchmarks.embedded_llm`` prints the JSON), so a
build this CPU cannot run fails the part instead of killing the benchmark. The model reads about
1,000 tokens of README text and writes 64, as the server runs it (n_batch 128, every core); the
median of three runs, each from an empty context.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from evaluation.benchmarks import REPO

PROMPT_CHARS = 4_000  # about 1,000 Qwen tokens of English prose
GENERATED = 64
RUNS = 3


def bench_embedded_llm(model_cache_dir: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "evaluation.benchmarks.embedded_llm", str(model_cache_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        return {"error": f"exit status {done.returncode}", "stderr_tail": done.stderr[-2000:]}
    return json.loads(done.stdout)


def measure(model_cache_dir: Path) -> dict[str, Any]:
    import llama_cpp

    from server.models import cpu_features
    from server.models.embedded_llm import ensure_model_file

    model = ensure_model_file(model_cache_dir)
    started = time.perf_counter()
    llm = llama_cpp.Llama(
        str(model), n_ctx=4096, n_batch=128, n_threads=os.cpu_count(), logits_all=False, verbose=False
    )
    load_s = time.perf_counter() - started
    prompt = (REPO / "README.md").read_text()[:PROMPT_CHARS]
    prompt_tokens = len(llm.tokenize(prompt.encode()))
    reading, writing = [], []
    for _ in range(RUNS):
        llm.reset()  # no prefix reuse between runs
        started = time.perf_counter()
        first = None
        pieces = 0
        for _chunk in llm.create_completion(prompt, max_tokens=GENERATED, temperature=0, stream=True):
            pieces += 1
            if first is None:
                first = time.perf_counter()
        ended = time.perf_counter()
        assert first is not None
        reading.append(prompt_tokens / (first - started))
        writing.append((pieces - 1) / (ended - first) if pieces > 1 else 0.0)
    build = cpu_features.parse_system_info(llama_cpp.llama_print_system_info().decode())
    return {
        "cpu": " ".join(cpu_features.build_options(cpu_features.cpu_flags())),
        "build": cpu_features.instruction_sets(build),
        "threads": os.cpu_count(),
        "load_s": round(load_s, 2),
        "prompt_tokens": prompt_tokens,
        "prompt_tokens_per_s": round(statistics.median(reading), 1),
        "generated_tokens_per_s": round(statistics.median(writing), 1),
    }


if __name__ == "__main__":
    print(json.dumps(measure(Path(sys.argv[1]))))
