#!/usr/bin/env bash
# h200_session.sh — one device-machine session: configure against PyTorch's libtorch, build
# with CUDA, run every test (GPU tests included), the demo and the engine benchmark, writing
# logs under $OUT, and the HF tokenizer fixture ($OUT/expected_hf.json) when `tokenizers` is
# importable there. Header-only/static build dependencies the GPU image lacks travel in .deps/
# (see docs/benchmarks.md). Usage on the device: bash bench/h200_session.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kevin-out}"; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
step() { echo "== $* ($(date +%T))"; }
{
  step "machine"; nvidia-smi -L; nproc; g++ --version | head -1; cmake --version | head -1; python3 -c 'import torch; print("torch", torch.__version__)'
  torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  step "configure"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$torch_prefix;$PWD/.deps/usr" > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  grep "kevin 0" "$OUT/configure.log"
  step "build"
  cmake --build build -j "$(nproc)" > "$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
  step "ctest"
  timeout 240 ctest --test-dir build -j 8 --output-on-failure > "$OUT/ctest.log" 2>&1
  tail -12 "$OUT/ctest.log"
  grep -E "^  cuda [a-z_]+: [0-9]+|Failure|FAILED|got [a-z_]+ \(" "$OUT/ctest.log" | head -30
  step "bench"
  timeout 300 bench/eval_throughput build "$OUT/bench" cuda 2>&1 | tail -20
  step "demo"
  timeout 120 scripts/demo build 2>&1 | tail -16
  step "kevin run smoke (scripted policy, CUDA backend)"
  timeout 180 bench/run_smoke.sh build "$OUT/run-smoke" cuda 2>&1 | tail -12
  step "tokenizer fixture (HF tokenizers, when the image has it)"
  python3 dev/tokenizer/make_hf_fixture.py --out "$OUT/expected_hf.json" 2>&1 | tail -3 || true
  step "done"
} 2>&1 | tee "$OUT/session.log"
