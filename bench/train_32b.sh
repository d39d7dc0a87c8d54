#!/usr/bin/env bash
# train_32b.sh — the 32B trainer figures on one GPU (docs/trainer.md, "Train Kevin-32B"):
# builds with the machine's PyTorch, runs the trainer's GPU tests, then bench/train_32b.cpp's
# runs, writing one log per step under $OUT. Usage on the device:
#   [STEPS="build tests calibrate load full generate"] [DISK=/tmp/kevin-32b] bash bench/train_32b.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kevin-out}"; mkdir -p "$OUT"
STEPS="${STEPS:-build tests calibrate load full generate}"
DISK="${DISK:-/tmp/kevin-32b}"
wants() { [[ " $STEPS " == *" $1 "* ]]; }
step() { echo "== $* ($(date +%T))"; }
bin=build/bench/train_32b
gpu_gib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
gpu_gib=$((gpu_gib / 1024))
step "machine: $(nvidia-smi -L | head -1), ${gpu_gib} GiB"
if wants build; then
  step "build"
  STEPS=build BUILD_TARGETS="train_32b train_test model_io_test fused_ops_test ${EXTRA_TARGETS:-}" \
    bash bench/h200_session.sh > "$OUT/build_session.log" 2>&1
  tail -5 "$OUT/build_session.log"
fi
if wants tests; then
  step "tests"
  for t in train_test model_io_test fused_ops_test ${EXTRA_TESTS:-}; do
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
step "done"
