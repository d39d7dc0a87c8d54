#!/usr/bin/env bash
# speed_of_light.sh — speed of light on the GPU (docs/eval.md): builds kevin without the trainer,
# evaluates the first LINES level-1 CUDA examples in a fresh cache (which prepares their
# reference data, counting each task's work, and measures the device's peaks once), then
# bench/speed_of_light.py's table and independent checks. Logs and JSON under $OUT.
# Usage on the device: [STEPS="build eval checks"] [LINES=6] [NCU=0|1] bash bench/speed_of_light.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/kevin-out}"; mkdir -p "$OUT"
STEPS="${STEPS:-build eval checks}"
wants() { [[ " $STEPS " == *" $1 "* ]]; }
step() { echo "== $* ($(date +%T))"; }
if wants build; then
  step "build"
  STEPS=build BUILD_TARGETS="kevin kevin-runner kevin-sandbox kevin-runner-support" \
    bash bench/h200_judge.sh > "$OUT/build_session.log" 2>&1
  tail -3 "$OUT/build_session.log"
fi
if wants eval; then
  step "eval"
  head -n "${LINES:-6}" examples/demo-cuda.jsonl > examples/sol-batch.jsonl
  cache=$(mktemp -d /tmp/kevin-sol-XXXXXX)
  t0=$(date +%s.%N)
  build/bin/kevin eval --batch examples/sol-batch.jsonl --backend cuda --json --jobs 8 \
    --cache-dir "$cache" > "$OUT/results.jsonl" 2> "$OUT/eval.log"
  echo "kevin eval: exit $?, $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$t0" "$(date +%s.%N)") s with a fresh cache (reference data, peaks, baselines)"
  grep -E "preparing|measuring the peak|timing the eager" "$OUT/eval.log" | head -20
  rm -f examples/sol-batch.jsonl
  cp "$cache"/peaks/*.json "$OUT/" 2>/dev/null
  cp "$OUT/results.jsonl" /tmp/kevin-sol-results.jsonl  # for a later `checks` on this machine
fi
if wants checks; then
  step "checks"
  python3 bench/speed_of_light.py /tmp/kevin-sol-results.jsonl tasks "$OUT/speed_of_light.json"
fi
step "done"
