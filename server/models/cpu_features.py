"""Which x86-64 instruction sets a CPU has, and the llama.cpp build that uses them safely.

llama.cpp's default build (``GGML_NATIVE``) compiles for the building machine with
``-march=native``, which turns on its AMX kernels wherever the CPU reports AMX. Inside many
virtual machines the AMX tile state is not usable and the first inference dies with a general
protection fault. So docfinder builds llama-cpp-python with explicit flags instead: every vector
extension the CPU has, AMX never. A build only runs on CPUs that have what it was compiled for,
so the Makefile keys its wheel cache by :func:`build_tag`, and :func:`unsupported_build_features`
tells whether an installed build (as ``llama_print_system_info`` describes it) can run here.

Standard library only: the Makefile runs this module with the system Python, before the
virtual environment exists (``python -m server.models.cpu_features cmake-args``).
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import re
import sys
from pathlib import Path

# llama.cpp's CMake options in the order its CMakeLists declares them, each with the
# /proc/cpuinfo flags the option compiles for (AVX512 is ggml's -mavx512{f,cd,vl,dq,bw}).
GGML_OPTIONS: dict[str, tuple[str, ...]] = {
    "SSE42": ("sse4_2",),
    "AVX": ("avx",),
    "AVX_VNNI": ("avx_vnni",),
    "AVX2": ("avx2",),
    "BMI2": ("bmi2",),
    "FMA": ("fma",),
    "F16C": ("f16c",),
    "AVX512": ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"),
    "AVX512_VBMI": ("avx512f", "avx512vbmi"),
    "AVX512_VNNI": ("avx512f", "avx512_vnni"),
    "AVX512_BF16": ("avx512f", "avx512_bf16"),
}
# Never built: the AMX kernels crash where a hypervisor reports AMX but does not let a process use it.
EXCLUDED_OPTIONS = ("AMX_TILE", "AMX_INT8", "AMX_BF16")
# x86-64-v3 (Haswell, 2013; AMD since 2015): for an image built on one machine and run on others.
AVX2_PROFILE = ("SSE42", "AVX", "AVX2", "BMI2", "FMA", "F16C")

# What llama_print_system_info() names for the CPU backend, mapped to the CPU flags each needs.
# AMX_INT8 is not here: a build that reports it is refused on every machine.
SYSTEM_INFO_NEEDS: dict[str, tuple[str, ...]] = {
    "SSE3": ("pni",),
    "SSSE3": ("ssse3",),
    **GGML_OPTIONS,
}
AMX_MARKERS = ("AMX_INT8", "AMX_TILE", "AMX_BF16")


def is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The instruction-set flags the (first) CPU reports in ``/proc/cpuinfo`` (empty off Linux)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        if not path.is_file():
            return frozenset()
        cpuinfo = path.read_text(errors="replace")
    match = re.search(r"^flags\s*:(.*)$", cpuinfo, flags=re.MULTILINE)
    return frozenset(match.group(1).split()) if match else frozenset()


def build_options(flags: frozenset[str], profile: str = "native") -> list[str]:
    """The ggml options to turn on: those whose CPU flags are all present (``native``), or the
    fixed x86-64-v3 set (``avx2``). AMX is never among them."""
    if profile == "avx2":
        return list(AVX2_PROFILE)
    if profile != "native":
        raise ValueError(f"unknown CPU profile {profile!r} (native or avx2)")
    return [option for option, needs in GGML_OPTIONS.items() if all(flag in flags for flag in needs)]


def cmake_args(flags: frozenset[str], profile: str = "native") -> str:
    """``CMAKE_ARGS`` for building llama-cpp-python: no -march=native, each option set explicitly
    (llama.cpp turns SSE4.2 … AVX2 on by default once GGML_NATIVE is off), AMX off, and no
    multimodal library (docfinder uses text models only; it saves a fifth of the build).

    ``native`` also schedules the code for this CPU (``-mtune=native``: no other instructions,
    so the wheel still runs on every CPU of its tag); on a 2-core AMD EPYC (Zen 3) that read
    prompts about 7 % faster than without it, as fast as llama.cpp's own -march=native build.
    """
    if not is_x86_64():
        return "-DLLAVA_BUILD=OFF"  # ARM and others: llama.cpp's own detection has no AMX to trip on
    chosen = set(build_options(flags, profile))
    options = [f"-DGGML_{name}={'ON' if name in chosen else 'OFF'}" for name in GGML_OPTIONS]
    options += [f"-DGGML_{name}=OFF" for name in EXCLUDED_OPTIONS]
    tuning = (
        ["-DCMAKE_C_FLAGS=-mtune=native", "-DCMAKE_CXX_FLAGS=-mtune=native"] if profile == "native" else []
    )
    return " ".join(["-DGGML_NATIVE=OFF", *options, *tuning, "-DLLAVA_BUILD=OFF"])


def build_tag(flags: frozenset[str], profile: str = "native") -> str:
    """A name for the instruction sets a build uses and the exact build arguments, e.g.
    ``x86_64-sse42-avx-avx2-bmi2-fma-f16c-1a2b3c4d``: a wheel is only installed on CPUs of the
    same tag, and a change to the arguments builds anew."""
    digest = hashlib.sha256(cmake_args(flags, profile).encode()).hexdigest()[:8]
    if not is_x86_64():
        return f"{platform.machine().lower() or 'unknown'}-{digest}"
    return "-".join(["x86_64", *(option.lower() for option in build_options(flags, profile)), digest])


def parse_system_info(text: str) -> frozenset[str]:
    """The features a llama.cpp build reports as on (``AVX2 = 1 | …``)."""
    return frozenset(name for name, value in re.findall(r"([A-Z0-9_]+) = (\d+)", text) if value != "0")


def instruction_sets(build: frozenset[str]) -> str:
    """The instruction sets among a build's reported features (``AVX AVX2 …``), sorted."""
    return " ".join(sorted(build & (set(SYSTEM_INFO_NEEDS) | set(AMX_MARKERS))))


def unsupported_build_features(build: frozenset[str], flags: frozenset[str]) -> list[str]:
    """The features an installed llama.cpp build uses that this CPU cannot run, AMX always."""
    amx = [name for name in AMX_MARKERS if name in build]
    missing = [
        name
        for name, needs in SYSTEM_INFO_NEEDS.items()
        if name in build and flags and not all(flag in flags for flag in needs)
    ]
    return amx + missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("cmake-args", "tag"))
    parser.add_argument("--profile", default="native", choices=("native", "avx2"))
    args = parser.parse_args(argv)
    flags = cpu_flags()
    print(cmake_args(flags, args.profile) if args.what == "cmake-args" else build_tag(flags, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
