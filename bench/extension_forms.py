#!/usr/bin/env python3
# extension_forms.py — how long each form of a KernelBench answer's units takes to compile
# (docs/kernelbench.md, "Build"): the device unit with nvcc in its lite form against its light
# form, and the host unit with g++ with the precompiled light header against without it.
# Needs no GPU (compiles only). A form that does not compile is counted, not timed. Usage:
#   python3 bench/extension_forms.py [--repeat 3] [--arch sm_90] [--forms "device lite"] ANSWER.py ...
# Where PyTorch's headers lack CUDA's build-time header (Debian's CPU PyTorch), an empty one is
# supplied so its light form compiles; the figures say so.
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(argv, cwd):
    """Seconds the compile took, or None when it failed."""
    start = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start if r.returncode == 0 else None


def extensions_of(answer):
    import json

    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "src/tasks/kernelbench_check.py"), "--extract", answer],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["extensions"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("answers", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--forms", default="", help="comma-separated forms to time (default: all)")
    args = ap.parse_args()
    import torch
    import torch.utils.cpp_extension as ext

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    work = tempfile.mkdtemp(prefix="forms-")
    includes = [f for d in ext.include_paths() for f in ("-isystem", d)]
    includes += ["-isystem", sysconfig.get_paths()["include"]]
    if not any(
        os.path.exists(os.path.join(d, "c10/cuda/impl/cuda_cmake_macros.h"))
        for d in ext.include_paths()
    ):
        os.makedirs(os.path.join(work, "stub/c10/cuda/impl"))
        open(os.path.join(work, "stub/c10/cuda/impl/cuda_cmake_macros.h"), "w").write(
            "#pragma once\n"
        )
        includes += ["-isystem", os.path.join(work, "stub")]
        print(
            "(an empty c10/cuda/impl/cuda_cmake_macros.h supplied: this PyTorch has no CUDA build)"
        )
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    cuda_include = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include")
    host = [
        "g++",
        "-O3",
        "-std=c++17",
        "-march=x86-64-v2",
        "-fPIC",
        "-fno-fast-math",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        abi,
        *includes,
        "-isystem",
        cuda_include,
    ]
    virtual = "compute_" + args.arch[3:]
    device = [
        nvcc,
        "-O3",
        "-std=c++17",
        "-gencode",
        f"arch={virtual},code={args.arch}",
        "-Xcompiler",
        "-fPIC",
        "--expt-relaxed-constexpr",
        "-t",
        "2",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        abi,
        "-D__CUDA_NO_HALF_OPERATORS__",
        "-D__CUDA_NO_HALF_CONVERSIONS__",
        "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
        "-D__CUDA_NO_HALF2_OPERATORS__",
    ]
    light_host = "#include <torch/types.h>\n#include <torch/csrc/utils/pybind.h>\n"
    with open(os.path.join(work, "light_host.h"), "w") as f:
        f.write(light_host)
    wanted = [f.strip() for f in args.forms.split(",") if f.strip()]
    t = timed(host + ["-x", "c++-header", "light_host.h", "-o", "light_host.h.gch"], work)
    if t is None:
        sys.exit("PyTorch's light host header does not precompile here")
    print(f"precompiling the light host header (once per PyTorch): {t:.1f} s")
    lite = os.path.join(ROOT, "src/engine/abi/torch_lite")
    rows = {}
    for answer in args.answers:
        for e in extensions_of(answer):
            name = e["name"]
            main_cpp = f"#define TORCH_EXTENSION_NAME {name}\n{light_host}{e['cpp_sources']}\n"
            main_cpp += f"PYBIND11_MODULE({name}, m) {{\n"
            main_cpp += "".join(f'  m.def("{fn}", &{fn});\n' for fn in e["functions"]) + "}\n"
            open(os.path.join(work, "main.cpp"), "w").write(main_cpp)
            forms = {
                "host light": host + ["-c", "main.cpp", "-o", "main.o"],
                "host precompiled": host
                + ["-include", "light_host.h", "-c", "main.cpp", "-o", "main.o"],
            }
            if e["cuda_sources"]:
                cuda = (
                    f"#define TORCH_EXTENSION_NAME {name}\n#include <torch/types.h>\n"
                    f"#include <cuda_runtime.h>\n{e['cuda_sources']}\n"
                )
                light = cuda.replace("#include <torch/extension.h>", "#include <torch/types.h>")
                open(os.path.join(work, "cuda.cu"), "w").write(cuda)
                open(os.path.join(work, "cuda_light.cu"), "w").write(light)
                forms["device light"] = device + includes + ["-c", "cuda_light.cu", "-o", "cuda.o"]
                forms["device lite"] = device + ["-isystem", lite, "-c", "cuda.cu", "-o", "cuda.o"]
            for form, argv in forms.items():
                if wanted and form not in wanted:
                    continue
                times = [timed(argv, work) for _ in range(args.repeat)]
                rows.setdefault(form, []).extend(times)
                print(
                    f"{os.path.basename(answer)}:{name:<20} {form:<24} "
                    + " ".join("fails" if x is None else f"{x:.2f}" for x in times)
                    + ("" if None in times else " s")
                )
    for form, times in rows.items():
        built = [x for x in times if x is not None]
        median = f"{statistics.median(built):.2f} s" if built else "-"
        print(
            f"median {form:<24} {median} over {len(built)} compiles; {len(times) - len(built)} failed"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
