#!/usr/bin/env bash
# h200_session.sh — one device-machine session: configure against PyTorch's libtorch, build
# with CUDA, run every test (GPU tests included), the demo and the engine benchmark, writing
# logs under $OUT, and the HF tokenizer fixture ($OUT/expected_hf.json) when `tokenizers` is
# importable there. Header-only/static build dependencies the GPU image lacks travel in .deps/
# (see docs/benchmarks.md). Usage on the device: [STEPS="..."] bash bench/h200_session.sh
# STEPS picks steps from: build ctest bench demo smoke trainsmoke tokfix parity trainbench
# hfprofile libstdcxx scaling (default: all but hfprofile, libstdcxx and scaling, in order). parity writes a fresh HF parity fixture to $OUT/parity and checks it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kevin-out}"; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
STEPS="${STEPS:-build ctest bench demo smoke trainsmoke tokfix parity trainbench}"
step() { echo "== $* ($(date +%T))"; }
wants() { [[ " $STEPS " == *" $1 "* ]]; }
{
  step "machine"; nvidia-smi -L; nproc; g++ --version | head -1; cmake --version | head -1
  # What decides which C++ runtime the link picks (docs/trainer.md, Known problems).
  env | grep -E "^(LIBRARY_PATH|LDFLAGS|CXXFLAGS|CXX|CC)=" || true
  for f in libstdc++.so libstdc++.a libstdc++.so.6; do echo "$f -> $(/usr/bin/g++ -print-file-name=$f 2>/dev/null)"; done
  python3 - <<'PY'
import importlib
for name in ("torch", "transformers", "tokenizers", "safetensors", "peft", "accelerate"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as error:
        print(name, "missing:", type(error).__name__)
PY
  if wants build; then
  torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  step "configure"
  # The system g++ builds against the libstdc++.so that libtorch loads. The image's default
  # compiler (CXX=/opt/gcc/bin/g++) links libstdc++ statically: two C++ runtimes in one
  # process, and tests that write files segfaulted.
  system_compilers=()
  [[ -x /usr/bin/g++ ]] && system_compilers=(-DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++ -DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++)
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${system_compilers[@]}" "-DCMAKE_PREFIX_PATH=$torch_prefix;$PWD/.deps/usr" > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  grep -E "CXX compiler identification|Check for working CXX" "$OUT/configure.log"
  grep "kevin 0" "$OUT/configure.log"
  step "build"
  # BUILD_TARGETS (optional): build only these targets (a shorter session).
  if ! cmake --build build -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} -- -k > "$OUT/build.log" 2>&1; then
    # Report what failed; if it was only a warning of this newer compiler, finish the session
    # without -Werror so its measurements still come back (the warning is fixed afterwards).
    grep -E "error|warning" -A3 "$OUT/build.log" | head -40
    echo "!! build failed with -Werror; rebuilding with -DKEVIN_WERROR=OFF to finish the session"
    cmake -S . -B build -DKEVIN_WERROR=OFF > /dev/null 2>&1
    # Keep going past a failed target: the steps whose binaries did build still run.
    cmake --build build -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} -- -k > "$OUT/build2.log" 2>&1 || grep -E "error" -A3 "$OUT/build2.log" | head -40
  fi
  fi
  if wants ctest; then step "ctest"
  readelf -d build/src/train/safetensors_test 2>/dev/null | grep NEEDED
  # The link line shows whether the full-path libstdc++.so.6 (cmake/KevinTorch.cmake) is there.
  grep -oE "(-static-libstdc\+\+|[^ ]*libstdc\+\+[^ ]*|-Wl,--(push|pop)-state[^ ]*)" build/src/train/CMakeFiles/safetensors_test.dir/link.txt 2>/dev/null | head -6
  # Slow tests ran in CI on the CPU; here all others, and the trainer's CUDA run.
  timeout 240 ctest --test-dir build -j 12 -LE slow --output-on-failure > "$OUT/ctest.log" 2>&1
  timeout 240 ctest --test-dir build -R TrainsOnCuda --output-on-failure >> "$OUT/ctest.log" 2>&1
  grep -E "tests passed|\*\*\*|\(Failed\)|Not Run" "$OUT/ctest.log" | head -30
  grep -E "^  cuda [a-z_]+: [0-9]+|Failure|FAILED|got [a-z_]+ \(" "$OUT/ctest.log" | head -30
  # If the runtime clash is still there, show whether the trainer itself works around it.
  if grep -q "CxxRuntime.*Failed" "$OUT/ctest.log"; then
    echo "-- runtime clash remains; the trainer's CUDA run and kevin e2e with LD_PRELOAD of libstdc++.so.6:"
    LD_PRELOAD=$(/usr/bin/g++ -print-file-name=libstdc++.so.6) timeout 240 ctest --test-dir build -R "TrainsOnCuda|LoadsAnHf" --output-on-failure > "$OUT/ctest-preload.log" 2>&1
    grep -E "tests passed|\(Failed\)|^  cuda [a-z_]+: [0-9]+" "$OUT/ctest-preload.log" | head -20
  fi; fi
  if wants bench; then step "bench"
    timeout 300 bench/eval_throughput build "$OUT/bench" cuda 2>&1 | tail -20; fi
  if wants demo; then step "demo"
    timeout 240 scripts/demo build 2>&1 | tail -16; fi
  if wants smoke; then step "kevin run smoke (scripted policy, CUDA backend)"
    timeout 240 bench/run_smoke.sh build "$OUT/run-smoke" cuda 2>&1 | tail -12; fi
  if wants trainsmoke; then step "kevin train smoke (tiny model, real engine, CUDA backend and device)"
    timeout 300 bench/train_smoke.sh build "$OUT/train-smoke" cuda 2>&1 | tail -14; fi
  if wants tokfix; then step "tokenizer fixture (HF tokenizers, when the image has it)"
    python3 dev/tokenizer/make_hf_fixture.py --out "$OUT/expected_hf.json" 2>&1 | tail -3 || true; fi
  if wants parity; then step "parity with HF transformers (fresh fixture)"
    python3 dev/train/make_parity_fixture.py --out "$OUT/parity" 2>&1 | tail -3
    KEVIN_PARITY_FIXTURE="$OUT/parity" build/src/train/parity_test 2>&1 | grep -E "parity|OK|FAILED|Failure|Which is|expected" | head -30; fi
  if wants trainbench; then step "trainer benchmark (kevin with a kernel profile of two steps, then HF transformers)"
    # The figures come from a run without the profiler: a --profile run's generation (bound by
    # launch overhead) measured 1,719 tokens/s where plain runs in the next lease gave 4,445-4,652.
    timeout 300 build/bench/train_bench 2>&1 | tail -1 | tee "$OUT/train_bench.json"
    timeout 300 build/bench/train_bench --profile "$OUT/kevin" > /dev/null 2>&1
    for trace in "$OUT"/kevin.*.json; do python3 dev/train/trace_summary.py "$trace" 20 && gzip -f "$trace"; done
    timeout 300 python3 bench/train_bench_hf.py 2>&1 | tail -1 | tee "$OUT/train_bench_hf.json"; fi
  if wants hfprofile; then step "kernel profile of HF transformers' training step"
    timeout 300 python3 bench/train_bench_hf.py --profile "$OUT/hf_trace.json" > /dev/null 2>&1
    python3 dev/train/trace_summary.py "$OUT/hf_trace.json" 30 && gzip -f "$OUT/hf_trace.json"; fi
  if wants libstdcxx; then step "C++ runtime clash with PyTorch's libtorch (docs/trainer.md, Known problems)"
    bash dev/gpu/libstdcxx_probe.sh 2>&1 | tail -40
    preload=$(g++ -print-file-name=libstdc++.so.6)
    for env in "" "LD_PRELOAD=$preload"; do
      echo "safetensors_test ${env:-(plain)}:"; env $env build/src/train/safetensors_test 2>&1 | grep -E "^\[  (PASSED|FAILED)  \]|Segmentation" | head -3; echo "  rc=${PIPESTATUS[0]}"
    done
    # Which objects C++ runtime symbols (_ZNSt..., _ZNKSt...) bind to in a crashing test: any
    # target other than libstdc++.so.6 is a second copy of the runtime.
    LD_DEBUG=bindings LD_DEBUG_OUTPUT="$OUT/bindings" build/src/train/safetensors_test \
      --gtest_filter=SafetensorsTest.ReadsAHandWrittenHeader > /dev/null 2>&1
    cat "$OUT"/bindings.* 2>/dev/null | grep -E "normal symbol \`_ZN?K?St" | grep -v "to /.*libstdc++.so.6" |
      sed -E 's/.*binding file ([^ ]+) .* to ([^ ]+) .*symbol `([^'"'"']+).*/\1 -> \2 \3/' | sort | uniq -c | sort -rn | head -30
    rm -f "$OUT"/bindings.*
    # Where the test's own C++ runtime references go, its load order, and the crash's stack.
    readelf -d build/src/train/safetensors_test | grep NEEDED
    ldd build/src/train/safetensors_test | head -12
    LD_DEBUG=bindings LD_DEBUG_OUTPUT="$OUT/bindings" build/src/train/safetensors_test \
      --gtest_filter=SafetensorsTest.ReadsAHandWrittenHeader > /dev/null 2>&1
    cat "$OUT"/bindings.* 2>/dev/null | grep "binding file build/src/train/safetensors_test " | grep -E "symbol \`_ZN?K?St" |
      sed -E 's/.*binding file ([^ ]+) .* to ([^ ]+) .*symbol `([^'"'"']+).*/\2 \3/' | sort | uniq -c | sort -rn | head -40
    rm -f "$OUT"/bindings.*
    if command -v gdb > /dev/null; then
      gdb -q -batch -ex run -ex bt --args build/src/train/safetensors_test --gtest_filter=SafetensorsTest.ReadsAHandWrittenHeader 2>&1 | tail -25
    else echo "(no gdb)"; fi; fi
  if wants scaling; then step "scaling over the visible GPUs (engine evaluations/minute; data-parallel training)"
    timeout 420 bench/eval_scaling build "$OUT/eval-scaling" 2>&1 | tail -8
    timeout 300 build/bench/train_scaling 2>&1 | tail -1 | tee "$OUT/train_scaling.json"; fi
  step "done"
} 2>&1 | tee "$OUT/session.log"
