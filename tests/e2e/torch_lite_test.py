# torch_lite_test.py — kevin_torch_lite.h against PyTorch's own headers, on the CPU: one C++
# unit using every part of the lite API, built once with each header set (the lite one linked
# with its bridge), must give the same results and the same errors; and nvcc must compile it.
# Usage: torch_lite_test.py KEVIN SOURCE_DIR WORK_DIR (exits 77 when g++ or CUDA's headers lack).
import os
import shutil
import subprocess
import sys
import sysconfig

UNIT = r"""
#include <torch/types.h>

torch::Tensor relu(torch::Tensor x) {
  TORCH_CHECK(!x.is_cuda() && x.is_contiguous(), "x must be contiguous, got ", x.dim(), " dims");
  auto y = torch::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0 ? in[i] : 0;
  return y;
}

std::vector<torch::Tensor> made(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 2);
  auto a = torch::zeros({x.size(0), x.size(-1)}, x.options());
  auto b = at::empty(x.sizes(), x.options().dtype(torch::kFloat64));
  auto c = x.contiguous();
  at::Tensor d;
  d = c;
  at::Tensor e = std::move(d);
  std::vector<torch::Tensor> v{a, b, c, e, at::zeros_like(x), torch::zeros(x.size(1))};
  v.push_back(torch::empty({2, x.size(0)}));
  v.push_back(at::empty_like(x));
  return v;
}

std::vector<int64_t> described(torch::Tensor x) {
  std::vector<int64_t> out = {x.numel(), x.dim(), x.ndimension(), x.defined(),
                              static_cast<int64_t>(x.scalar_type())};
  for (int64_t s : x.sizes()) out.push_back(s);
  for (int64_t s : x.strides()) out.push_back(s);
  out.push_back(x.stride(-1));
  out.push_back(x.data_ptr() == static_cast<void*>(x.data_ptr<float>()));
  return out;
}

double dispatched(torch::Tensor x) {
  return AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "dispatched", [&] {
    return static_cast<double>(x.data_ptr<scalar_t>()[0]) * sizeof(scalar_t);
  });
}

int64_t size_of(torch::Tensor x, int64_t dim) { return x.size(dim); }
int64_t long_data(torch::Tensor x) { return x.data_ptr<int64_t>()[0]; }
"""

FUNCTIONS = ["relu", "made", "described", "dispatched", "size_of", "long_data"]
DECLARATIONS = """
torch::Tensor relu(torch::Tensor x);
std::vector<torch::Tensor> made(torch::Tensor x);
std::vector<int64_t> described(torch::Tensor x);
double dispatched(torch::Tensor x);
int64_t size_of(torch::Tensor x, int64_t dim);
int64_t long_data(torch::Tensor x);
"""


def run(argv, cwd):
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: " + " ".join(argv) + "\n" + r.stdout + r.stderr)


def main():
    source_dir, work = os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cuda_include = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include")
    if not shutil.which("g++") or not os.path.exists(os.path.join(cuda_include, "cuda_runtime.h")):
        print("skipped: needs g++ and CUDA's headers")
        sys.exit(77)
    try:
        import torch
        import torch.utils.cpp_extension as ext
    except ImportError:
        print("skipped: needs PyTorch")
        sys.exit(77)

    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    lite = os.path.join(source_dir, "src/engine/abi/torch_lite")
    torch_includes = [f for d in ext.include_paths() for f in ("-isystem", d)]
    torch_includes += ["-isystem", sysconfig.get_paths()["include"]]
    flags = [
        "-O2",
        "-std=c++17",
        "-fPIC",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
    ]
    with open(os.path.join(work, "unit.cpp"), "w") as f:
        f.write(UNIT)
    # What only a CUDA build can run, for nvcc to compile against the lite header.
    shutil.copy(
        os.path.join(source_dir, "tests/fixtures/torch_lite/scaled_launcher.cu"),
        os.path.join(work, "cuda.cu"),
    )
    for name in ("lite", "real"):
        with open(os.path.join(work, f"main_{name}.cpp"), "w") as f:
            f.write(
                f"#include <torch/extension.h>\n{DECLARATIONS}\nPYBIND11_MODULE(unit_{name}, m) {{\n"
            )
            f.write("".join(f'  m.def("{fn}", &{fn});\n' for fn in FUNCTIONS) + "}\n")
    lite_includes = ["-isystem", lite, "-isystem", cuda_include]
    jobs = [
        [
            "g++",
            *flags,
            *torch_includes,
            "-c",
            os.path.join(lite, "kevin_torch_lite_bridge.cpp"),
            "-o",
            "bridge.o",
        ],
        [
            "g++",
            *flags,
            *lite_includes,
            "-Wall",
            "-Wextra",
            "-Werror",
            "-c",
            "unit.cpp",
            "-o",
            "unit_lite.o",
        ],
        ["g++", *flags, *torch_includes, "-c", "unit.cpp", "-o", "unit_real.o"],
        ["g++", *flags, *torch_includes, "-c", "main_lite.cpp", "-o", "main_lite.o"],
        ["g++", *flags, *torch_includes, "-c", "main_real.cpp", "-o", "main_real.o"],
    ]
    if os.access(nvcc, os.X_OK):  # the device compiler takes the same unit with the lite header
        for unit in ("unit.cpp", "cuda.cu"):
            jobs.append(
                [
                    nvcc,
                    "-std=c++17",
                    "-Xcompiler",
                    "-fPIC",
                    *lite_includes[:2],
                    "-x",
                    "cu",
                    "-c",
                    unit,
                    "-o",
                    unit + ".nvcc.o",
                ]
            )
    procs = [
        subprocess.Popen(j, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for j in jobs
    ]
    for j, p in zip(jobs, procs):
        out, _ = p.communicate()
        if p.returncode != 0:
            sys.exit("failed: " + " ".join(j) + "\n" + out)
    libs = [f"-L{d}" for d in ext.library_paths()] + [
        "-lc10",
        "-ltorch",
        "-ltorch_cpu",
        "-ltorch_python",
    ]
    run(
        ["g++", "-shared", "main_lite.o", "unit_lite.o", "bridge.o", "-o", "unit_lite.so", *libs],
        work,
    )
    run(["g++", "-shared", "main_real.o", "unit_real.o", "-o", "unit_real.so", *libs], work)

    sys.path.insert(0, work)
    import unit_lite
    import unit_real

    def outcome(module, fn, *args):
        try:
            r = getattr(module, fn)(*args)
        except Exception as e:  # the error PyTorch raised, by type and message
            return ("raised", type(e).__name__, str(e).splitlines()[0])
        if isinstance(r, torch.Tensor):
            r = [r]
        if isinstance(r, list) and r and isinstance(r[0], torch.Tensor):
            # Values of tensors made by empty() are whatever the memory held: not compared.
            return [
                (
                    "tensor",
                    t.dtype,
                    tuple(t.shape),
                    t.stride(),
                    t.device,
                    t.tolist() if fn != "made" or i in (0, 2, 3, 4, 5) else None,
                    t.data_ptr() == args[0].data_ptr(),
                )
                for i, t in enumerate(r)
            ]
        return ("value", r)

    x = torch.randn(3, 5)
    cases = [
        ("relu", x),
        ("relu", x.t()),
        ("relu", torch.randn(0)),
        ("made", x),
        ("made", torch.randn(4)),
        ("described", x),
        ("described", x.t()),
        ("described", torch.randn(2, 3, 4)[:, 1]),
        ("dispatched", torch.tensor([2.0])),
        ("dispatched", torch.tensor([2.0], dtype=torch.float64)),
        ("dispatched", torch.tensor([1])),
        ("size_of", x, 1),
        ("size_of", x, -2),
        ("size_of", x, 5),
        ("long_data", torch.tensor([7])),
        ("long_data", x),
    ]
    failures = 0
    for fn, *args in cases:
        lite_r, real_r = outcome(unit_lite, fn, *args), outcome(unit_real, fn, *args)
        if lite_r != real_r:
            failures += 1
            print(
                f"{fn}{tuple(a.shape if isinstance(a, torch.Tensor) else a for a in args)}:\n"
                f"  lite: {lite_r}\n  real: {real_r}"
            )

    # Tensors copied and moved in the lite unit are released (no reference kept: 20 inputs of
    # 64 MiB would stay alive) and not released early (a crash).
    def resident_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    unit_lite.made(torch.randn(2, 2))
    start = resident_mib()
    for _ in range(20):
        big = torch.randn(2, 8 << 20)
        unit_lite.made(big)
        del big
    grown = resident_mib() - start
    if grown > 600:
        failures += 1
        print(f"resident memory grew by {grown:.0f} MiB: the lite unit keeps tensors alive")
    print(f"{len(cases)} cases, {failures} differ")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
