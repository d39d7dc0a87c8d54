#!/usr/bin/env bash
# train_32b.sh — the 32B trainer figures on one GPU (docs/trainer.md, "Train Kevin-32B"):
# builds with the machine's PyTorch, runs the trainer's GPU tests, then bench/train_32b.cpp's
# runs, writing one log per step under $OUT; full7b is full fine-tuning at Qwen2.5-7B's shape
# with AdamW's moments in host memory. Usage on the device:
#   [STEPS="build tests calibrate load full generate full7b"] [DISK=/tmp/kevin-32b] bash bench/train_32b.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kevin-out}"; mkdir -p "$OUT"
STEPS="${STEPS:-build tests calibrate load full generate full7b}"
DISK="${DISK:-/tmp/kevin-32b}"
wants() { [[ " $STEPS " == *" $1 "* ]]; }
step() { echo "== $* ($(date +%T))"; }
bin=build/bench/train_32b
gpu_gib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
gpu_gib=$((gpu_gib / 1024))
step "machine: $(nvidia-smi -L | head -1), ${gpu_gib} GiB"
if wants build; then
  step "build"
  STEPS=build BUILD_TARGETS="train_32b train_test model_io_test fused_ops_test fused_adamw_test ${EXTRA_TARGETS:-}" \
    bash bench/h200_session.sh > "$OUT/build_session.log" 2>&1
  tail -5 "$OUT/build_session.log"
fi
if wants tests; then
  step "tests"
  for t in train_test model_io_test fused_ops_test fused_adamw_test ${EXTRA_TESTS:-}; do
    timeout 200 "build/src/train/$t" 2>&1 | tail -3 | sed "s/^/$t: /"
  done
fi
if wants calibrate; then
  # The estimate against the measured peak at two depths and two lengths.
  step "calibrate"
  for args in "--layers 4 --samples 2 --tokens 24576 --completion 16384" \
              "--layers 8 --samples 2 --tokens 24576 --completion 16384" \
              "--layers 8 --samples 2 --tokens 8192 --completion 4096"; do
    timeout 300 "$bin" update $args | tee -a "$OUT/calibrate.jsonl"
  done
fi
if wants load; then
  step "write + load (${LOAD_LAYERS:-16} layers)"
  rm -rf "$DISK"; df -h "$(dirname "$DISK")" | tail -1
  timeout 300 "$bin" write "$DISK" --layers "${LOAD_LAYERS:-16}" | tee -a "$OUT/load.jsonl"
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  timeout 300 "$bin" load "$DISK" | tee -a "$OUT/load.jsonl"
  rm -rf "$DISK"
fi
if wants full; then
  # All 64 layers: 16 samples of 24k tokens where the GPU holds them (H200), else shorter.
  step "full 64 layers"
  if (( gpu_gib > 120 )); then full="--samples ${FULL_SAMPLES:-16} --tokens 24576 --completion 16384"
  else full="--samples ${FULL_SAMPLES:-2} --tokens 8192 --completion 4096"; fi
  timeout 560 "$bin" update --layers 64 $full | tee -a "$OUT/full.jsonl"
fi
if wants generate; then
  step "generate 64 layers"
  timeout 400 "$bin" generate --layers 64 --batch 16 --prompt "${GEN_PROMPT:-1024}" --new "${GEN_NEW:-256}" | tee -a "$OUT/generate.jsonl"
fi
if wants full7b; then
  # Every parameter trained (fp32 masters and gradients on the GPU, 57 GiB at 7.6B), the two
  # moments (another 57 GiB) in host memory and streamed through the GPU at each step.
  step "7B full fine-tuning, AdamW's moments in host memory"
  if (( gpu_gib > 120 )); then full7b="--samples ${FULL7B_SAMPLES:-4} --tokens 16384 --completion 8192"
  else full7b="--samples ${FULL7B_SAMPLES:-2} --tokens 4096 --completion 2048"; fi
  timeout 500 "$bin" update --model 7 --rank 0 --host-state 1 --warmup 1 $full7b | tee -a "$OUT/full7b.jsonl"
fi
step "done"
