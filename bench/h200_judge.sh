#!/usr/bin/env bash
# h200_judge.sh — the engine side's GPU verification on the device machine, in one lease: build
# without the trainer (-DKEVIN_TORCH=OFF), the sandbox probe (dev/gpu/sandbox_probe.sh), the
# GPU-labelled tests, the hostile CUDA corpus (FixtureVerdicts.CudaCorpus), the Redis queue
# (one GPU worker against the local engine), kevin serve's overhead, and the engine benchmark
# before and after (the tree in .before/, made by `git archive`). Logs under $OUT.
# `cleanup`: runners die with a killed kevin (CUDA too) and Ctrl-C stops a run in good order.
# `quickstart`: wall times of the README's newcomer path on this machine (docs/quickstart.md).
# `compilebase`: the torch.compile baselines (Provider.Compile*, needs reference_worker_test
# among BUILD_TARGETS; six level-1 examples judged with --baseline compile).
# `kernelbench`: every KernelBench fixture answer judged on the GPU (FixtureVerdicts.KernelBench*);
# `kbbuild`: bench/kernelbench_build.sh (extension build times against load_inline).
# `agreement`, `kbproblems`: bench/kernelbench_agreement.py and bench/kernelbench_problems.sh on
# a KernelBench checkout at $KB_ROOT (default .deps/kernelbench, never committed).
# Usage on the device: [STEPS="build probe gputests corpus compilebase kernelbench kbbuild agreement kbproblems cleanup quickstart queue serve bench"] [BUILD_TARGETS="kevin ..."] [WITH_TORCH=1]
#   bash bench/h200_judge.sh   (queue and serve need scripts/make-gpu-deps' redis-server and websockets)
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .benchwork  # caches of the benchmarks: on the checkout's disk, not a small /tmp
OUT="${OUT:-/tmp/kevin-out}"; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
STEPS="${STEPS:-build probe gputests corpus}"
step() { echo "== $* ($(date +%T))"; }
started=$(date +%s)
# seconds left of BUDGET_S (default 570: one device call), for steps that must fit
left() { echo $(( ${BUDGET_S:-570} - ($(date +%s) - started) )); }
wants() { [[ " $STEPS " == *" $1 "* ]]; }
configure_and_build() {  # SOURCE BUILD TARGETS...
  local src="$1" dir="$2"; shift 2
  # With WITH_TORCH=1 the tree (not the one before) is built against this machine's PyTorch:
  # the KernelBench runner's operator log (libkevin-op-log.so) and the trainer need it.
  local torch=(-DKEVIN_TORCH=OFF "-DCMAKE_PREFIX_PATH=$PWD/.deps/usr")
  if [ "${WITH_TORCH:-0}" = 1 ] && [ "$dir" = build ]; then
    torch=("-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)');$PWD/.deps/usr")
  fi
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release "${torch[@]}" -DCMAKE_C_COMPILER=/usr/bin/gcc \
        -DCMAKE_CXX_COMPILER=/usr/bin/g++ -DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++ \
        > "$OUT/configure-$(basename "$dir").log" 2>&1 || { tail -20 "$OUT/configure-$(basename "$dir").log"; return 1; }
  cmake --build "$dir" -j "$(nproc)" ${1:+--target "$@"} > "$OUT/build-$(basename "$dir").log" 2>&1 || { grep -E "error" -A3 "$OUT/build-$(basename "$dir").log" | head -30; return 1; }
}
{
  step "machine"; uname -r; nvidia-smi -L; nproc
  if wants build; then step "build"; configure_and_build . build ${BUILD_TARGETS:-}; fi
  if wants bench && [ -d .before ]; then step "build the tree before (.before)"
    configure_and_build .before build-before kevin kevin-runner; fi
  if wants probe; then step "sandbox probe"
    PROBE_CASES="probe none quick
probe none quick,nochroot
probe-plain none quick
probe-plain none quick,nochroot
probe mnt,pid,procfs quick,nochroot
probe net,ipc,mnt,pid,procfs quick" timeout 120 bash dev/gpu/sandbox_probe.sh 2>&1 | grep -v -E "warning|\^|Remark|\(void\)|~~~|^\s*$|In function"; fi
  if wants gputests; then step "GPU tests"
    timeout 120 ctest --test-dir build -L gpu -LE slow -j 8 --output-on-failure > "$OUT/ctest-gpu.log" 2>&1
    grep -E "tests passed|\(Failed\)|\*\*\*|Not Run" "$OUT/ctest-gpu.log" | head -30; fi
  if wants corpus; then step "hostile CUDA corpus"
    timeout 270 build/tests/e2e_test --gtest_filter='FixtureVerdicts.CudaCorpus' > "$OUT/corpus.log" 2>&1
    grep -E "^  cuda |Failure|got [a-z_]+ \(|judged correct|OK \]|FAILED" "$OUT/corpus.log" | head -60
    grep -E "^  clock " "$OUT/corpus.log" | head -40; fi
  if wants kernelbench; then step "KernelBench answers on the GPU (and on the CPU with this torch)"
    timeout 480 build/tests/e2e_test --gtest_filter='FixtureVerdicts.KernelBench*' > "$OUT/kernelbench.log" 2>&1
    grep -E "Failure|Expected|Which is|\.py: |OK \]|FAILED" "$OUT/kernelbench.log" | head -60; fi
  if wants kbbuild; then step "KernelBench build times: kevin (cold, cached) against load_inline"
    timeout "$(left)" bash bench/kernelbench_build.sh 2>&1 | tee "$OUT/kbbuild.log" | tail -12; fi
  if wants agreement; then step "verdict agreement with KernelBench's eval_kernel_against_ref"
    timeout "$(left)" python3 bench/kernelbench_agreement.py --kernelbench "${KB_ROOT:-.deps/kernelbench}" \
      --kevin build/bin/kevin --out "$OUT/agreement" --jobs 8 2>&1 | tee "$OUT/agreement.log" | tail -45; fi
  if wants kbproblems; then step "KernelBench's own problems through kevin tasks check"
    timeout "$(left)" bash bench/kernelbench_problems.sh "${KB_ROOT:-.deps/kernelbench}" "$OUT/kbproblems" 2>&1 |
      tee "$OUT/kbproblems.log" | tail -40; fi
  if wants compilebase; then step "torch.compile baselines (--baseline compile) beside eager"
    timeout 180 build/src/tasks/reference_worker_test --gtest_filter='Provider.Compile*' 2>&1 | grep -E "^\[ *(OK|FAILED|SKIPPED) |Failure"
    head -n 6 examples/demo-cuda.jsonl > examples/compile-batch.jsonl
    # A cache of its own, removed after: six tasks' reference data at GPU sizes fill tens of GB.
    timeout "$(left)" build/bin/kevin eval --batch examples/compile-batch.jsonl --backend cuda --json --jobs 8 \
      --baseline compile --cache-dir "$PWD/.benchwork/compile-cache" > "$OUT/compile.jsonl" 2> "$OUT/compile.log"
    rm -rf examples/compile-batch.jsonl "$PWD/.benchwork/compile-cache"
    python3 - "$OUT/compile.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        print(r.get("task", "")[-28:], r.get("verdict"), r.get("error", ""), "compile", r.get("baseline_ms"),
              "eager", r.get("eager_baseline_ms"), "speedup", r.get("speedup"), "vs eager", r.get("speedup_vs_eager"))
PY
  fi
  if wants cleanup; then step "cleanup: runners die with kevin; Ctrl-C"
    timeout 180 build/tests/e2e_test --gtest_filter='Cleanup*.*:InterruptedRun.*' 2>&1 | grep -E "^\[ *(OK|FAILED|SKIPPED) |Failure|outlived" | head -20; fi
  if wants quickstart; then step "quickstart: the newcomer path, timed"
    qs="$OUT/quickstart"; mkdir -p "$qs"; export KEVIN_CACHE_DIR="$qs/cache"
    timed() { local t0=$EPOCHREALTIME; "$@" > "$qs/last.log" 2>&1; local rc=$?
              printf '%-60s rc=%s %6.1f s\n' "$*" "$rc" "$(awk "BEGIN{print $EPOCHREALTIME - $t0}")"; tail -3 "$qs/last.log" | cut -c1-160; }
    timed scripts/demo build
    timed build/bin/kevin tasks show level1/028_gelu --template "$qs/my_gelu.cu"
    timed build/bin/kevin eval --task tasks/level1/028_gelu.py --candidate examples/level1/028_gelu.cu
    timed build/bin/kevin eval --task tasks/level1/028_gelu.py --candidate examples/level1/028_gelu.cu
    python3 - "$qs/script.jsonl" <<'PY'
import json, sys
code = open("examples/level1/028_gelu.cu").read()
with open(sys.argv[1], "w") as f:
    for _ in range(8):
        f.write(json.dumps({"response": "```cuda\n" + code + "```\nSummary: tanh-form GELU.", "finish_reason": "stop"}) + "\n")
PY
    timed build/bin/kevin run --tasks level1/028_gelu --trajectories 2 --turns 2 --policy "scripted:$qs/script.jsonl" --out "$qs/run"
    timed build/bin/kevin report "$qs/run"; fi
  if wants queue; then step "queue: one GPU worker through Redis against the local engine"
    PATH="$PWD/.deps/usr/bin:$PATH" timeout 60 build/bench/queue_overhead --jobs 500
    PATH="$PWD/.deps/usr/bin:$PATH" timeout $(( $(left) - 230 )) python3 -u bench/queue_scaling.py --kevin build/bin/kevin \
      --backend cuda --workers 1 --jobs-per-worker 16 --repeat ${QUEUE_REPEAT:-1} ${QUEUE_ONLY:+--only "$QUEUE_ONLY"} 2>&1 | grep -v "^\[kevin"; fi
  if wants serve; then step "kevin serve: 64 OpenEnv sessions against kevin eval --batch"
    # SERVE_REPEAT copies of the 26-candidate mix, so that the 64 sessions have work to share.
    PYTHONPATH="$PWD/.deps/python" timeout $(( $(left) - 15 )) python3 -u bench/serve_overhead.py \
      --kevin build/bin/kevin --cache "$PWD/.benchwork/serve-cache" --backend cuda --sessions 64 \
      --jobs 16 --repeat "${SERVE_REPEAT:-3}" 2>&1 | grep -v "^\[kevin" | tail -12; fi
  if wants bench; then
    for which in after before; do
      dir=build; [ "$which" = before ] && dir=build-before
      if [ "$(left)" -lt 150 ]; then echo "!! no time left for the $which benchmark"; continue; fi
      step "engine benchmark ($which)"
      QUICK=1 BENCH_TMP="${BENCH_TMP:-$PWD/.benchwork}" timeout $(( $(left) - 10 )) bench/eval_throughput "$dir" "$OUT/bench-$which" cuda 2>&1 | grep -E "evals_per|e2e|compile_p50|verdicts|phase_p50|alone|fresh|slowest|candidates"
    done; fi
  step "done"
} 2>&1 | tee "$OUT/session.log"
