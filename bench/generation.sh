#!/usr/bin/env bash
# generation.sh — the generation engine's figures on one GPU (docs/benchmarks.md, "Generation"):
# builds with the machine's PyTorch, runs the engine's tests (the paged attention kernel against
# dense attention on the GPU), then bench/generation_bench.cpp's runs and transformers' sampling
# at the same shape, writing one log per step under $OUT. Usage on the device:
#   [STEPS="build tests small hf rollout decode fit16k"] [DECODE_LAYERS=N] bash bench/generation.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kevin-out}"; mkdir -p "$OUT"
STEPS="${STEPS:-build tests small hf rollout decode fit16k}"
wants() { [[ " $STEPS " == *" $1 "* ]]; }
step() { echo "== $* ($(date +%T))"; }
bin=build/bench/generation_bench
gpu_gib=$(( $(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1) / 1024 ))
step "machine: $(nvidia-smi -L | head -1), ${gpu_gib} GiB"
if wants build; then
  step "build"
  STEPS=build BUILD_TARGETS="generation_test local_policy_test generation_bench" \
    bash bench/h200_session.sh > "$OUT/build_session.log" 2>&1
  tail -5 "$OUT/build_session.log"
fi
if wants tests; then
  step "tests"
  for t in generation_test local_policy_test; do
    timeout 200 "build/src/train/$t" > "$OUT/$t.log" 2>&1; echo "$t: exit $?"
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|Expected|Which is|error" "$OUT/$t.log" | head -20
  done
fi
if wants small; then
  step "0.5B shape, batch 32: today's sampler and the engine"
  for graphs in 0 1; do
    trace=$([[ $graphs == 1 ]] && echo "$OUT")  # a profile of the run with graphs: kernel times
    timeout 200 "$bin" small --batch 32 --prompt 128 --new 256 --graphs $graphs $trace | tee -a "$OUT/small.jsonl"
  done
fi
if wants hf; then
  step "transformers at the same shape"
  timeout 300 python3 bench/train_bench_hf.py --generate-only | tee -a "$OUT/hf.jsonl"
fi
if wants rollout; then
  step "rollout: 16 trajectories x 4 turns, shared prefixes"
  timeout 300 "$bin" rollout --trajectories 16 --turns 4 --prompt 2048 --new 512 --feedback 256 --graphs 1 | tee -a "$OUT/rollout.jsonl"
fi
if wants decode; then
  # QwQ-32B's shape: all 64 layers where they fit with the cache (H200), else fewer.
  layers="${DECODE_LAYERS:-$(( gpu_gib > 120 ? 64 : 40 ))}"
  step "decode at QwQ-32B's shape, $layers layers, batch 16, context 4096"
  for graphs in 0 1; do
    timeout 300 "$bin" decode --layers "$layers" --batch 16 --context 4096 --new 64 --graphs $graphs | tee -a "$OUT/decode.jsonl"
  done
fi
if wants fit16k && (( gpu_gib > 120 )); then
  # Issue 32's generation at 32B: 16 sequences held at 16k tokens of context at once, all 64
  # layers, the KV pool taking 90 % of what the weights leave (69 GB of cache needed in bf16).
  step "decode at QwQ-32B's shape, 64 layers, batch 16, context 16384"
  timeout 500 "$bin" decode --layers 64 --batch 16 --context 16384 --new 32 --graphs 1 \
    --memory-percent 90 | tee -a "$OUT/fit16k.jsonl"
fi
step "done"
